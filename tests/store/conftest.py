"""Store fixtures: a Runtime on each store (PostgreSQL's databases come from
the root conftest, skipped with the reason when PostgreSQL is not running)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from sqlalchemy import text

from benchwarmers.runtime import Runtime
from benchwarmers.store.schema import Base


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
