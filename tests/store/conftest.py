"""Store fixtures: a Runtime on each store (PostgreSQL's databases come from
the root conftest, skipped with the reason when PostgreSQL is not running)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from sqlalchemy import text

from benchwarmers.runtime import Runtime
from benchwarmers.store.endpoints import add_endpoint
from benchwarmers.store.models import add_model
from benchwarmers.store.schema import Base


@pytest.fixture(params=["sqlite", "postgresql"])
async def any_runtime(request: pytest.FixtureRequest, home: Path) -> AsyncIterator[Runtime]:
    """A Runtime on SQLite, then on (an emptied) PostgreSQL: the same rules must hold on both."""
    url = request.getfixturevalue("shared_postgres") if request.param == "postgresql" else None
    async with Runtime.open(home=home, database_url=url) as rt:
        if url is not None:
            # Emptied row by row, dependents first, and the ids restarted: what TRUNCATE ...
            # RESTART IDENTITY does, in a tenth of its time on tables this small.
            async with rt.store.write() as session:
                for table in reversed(Base.metadata.sorted_tables):
                    await session.execute(text(f'DELETE FROM "{table.name}"'))
                sequences = await session.execute(
                    text("SELECT sequencename FROM pg_sequences WHERE schemaname = current_schema()")
                )
                for (sequence,) in sequences.all():
                    await session.execute(text(f'ALTER SEQUENCE "{sequence}" RESTART'))
        yield rt


@pytest.fixture
async def bench(any_runtime: Runtime) -> Runtime:
    """An endpoint and two models on it, on each store (the registry's tests)."""
    await add_endpoint(any_runtime.store, "hub", "https://hub.example/v1/", "openai")
    await add_model(any_runtime.store, "alpha", "hub", "vendor/alpha")
    await add_model(any_runtime.store, "beta", "hub", "vendor/beta", role="code")
    return any_runtime
