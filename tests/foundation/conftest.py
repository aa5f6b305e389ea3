"""Foundation fixtures: a throwaway PostgreSQL database (skipped, with the
reason, when PostgreSQL is not running), and a Runtime on each store.

Creating a PostgreSQL database costs a second or more, so tests that only
need *a* PostgreSQL store share one per session (per xdist worker), emptied
before each test; migration tests get a database of their own."""

from __future__ import annotations

import asyncio
import os
import uuid
from collections.abc import AsyncIterator, Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import asynccontextmanager
from pathlib import Path

import asyncpg
import pytest
from sqlalchemy import text

from benchwarmers.runtime import Runtime
from benchwarmers.store.schema import Base

POSTGRES_URL = os.environ.get("BENCHWARMERS_TEST_POSTGRES_URL", "postgresql://postgres@127.0.0.1:5432/test")


@asynccontextmanager
async def throwaway_postgres() -> AsyncIterator[str]:
    """A fresh, empty database on the local PostgreSQL, dropped afterwards."""
    try:
        admin = await asyncpg.connect(POSTGRES_URL, timeout=3)
    except (TimeoutError, OSError, asyncpg.PostgresError) as exc:
        pytest.skip(f"PostgreSQL is not reachable at {POSTGRES_URL}: {exc}")
    name = f"bw_test_{uuid.uuid4().hex[:12]}"
    await admin.execute(f'CREATE DATABASE "{name}"')
    try:
        yield POSTGRES_URL.rsplit("/", 1)[0] + "/" + name
    finally:
        await admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        await admin.close()


@pytest.fixture
async def postgres_url() -> AsyncIterator[str]:
    async with throwaway_postgres() as url:
        yield url


@pytest.fixture(scope="session")
def shared_postgres() -> Iterator[str]:
    """One database for the session; created and dropped on a private event
    loop in a thread, so any test (sync or async) may ask for it."""
    name = f"bw_shared_{uuid.uuid4().hex[:12]}"

    async def admin(statement: str) -> None:
        connection = await asyncpg.connect(POSTGRES_URL, timeout=3)
        try:
            await connection.execute(statement)
        finally:
            await connection.close()

    def run(statement: str) -> None:
        with ThreadPoolExecutor(1) as pool:
            pool.submit(asyncio.run, admin(statement)).result()

    try:
        run(f'CREATE DATABASE "{name}"')
    except (TimeoutError, OSError, asyncpg.PostgresError) as exc:
        pytest.skip(f"PostgreSQL is not reachable at {POSTGRES_URL}: {exc}")
    yield POSTGRES_URL.rsplit("/", 1)[0] + "/" + name
    run(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


@pytest.fixture(params=["sqlite", "postgresql"])
async def any_runtime(request: pytest.FixtureRequest, home: Path) -> AsyncIterator[Runtime]:
    """A Runtime on SQLite, then on (an emptied) PostgreSQL: the same rules must hold on both."""
    url = request.getfixturevalue("shared_postgres") if request.param == "postgresql" else None
    async with Runtime.open(home=home, database_url=url) as rt:
        if url is not None:
            tables = ", ".join(f'"{table}"' for table in Base.metadata.tables)
            async with rt.store.write() as session:
                await session.execute(text(f"TRUNCATE {tables} RESTART IDENTITY CASCADE"))
        yield rt
