"""Migrations from an empty database to head, on SQLite and PostgreSQL."""

from __future__ import annotations

import asyncio
import os
import uuid
from collections.abc import AsyncIterator
from pathlib import Path

import asyncpg
import pytest
from sqlalchemy import inspect, text

from benchwarmers.errors import StoreError
from benchwarmers.runtime import Runtime
from benchwarmers.store import registry
from benchwarmers.store.db import Store, sqlite_url
from benchwarmers.store.migrate import current_revision, head_revision, migrate
from benchwarmers.store.schema import Base

POSTGRES_URL = os.environ.get("BENCHWARMERS_TEST_POSTGRES_URL", "postgresql://postgres@127.0.0.1:5432/test")


async def _tables(store: Store) -> set[str]:
    async with store.engine.connect() as connection:
        return set(await connection.run_sync(lambda conn: inspect(conn).get_table_names()))


async def _columns(store: Store, table: str) -> set[str]:
    async with store.engine.connect() as connection:
        columns = await connection.run_sync(lambda conn: inspect(conn).get_columns(table))
    return {column["name"] for column in columns}


async def _assert_matches_schema(store: Store) -> None:
    assert await current_revision(store) == head_revision()
    drift = "schema.py and the migration differ: run scripts/regen_migration.py"
    assert set(Base.metadata.tables) <= await _tables(store), drift
    for name, table in Base.metadata.tables.items():
        assert {c.name for c in table.columns} == await _columns(store, name), f"{name}: {drift}"


async def test_sqlite_from_empty_to_head(tmp_path: Path) -> None:
    store = Store(sqlite_url(tmp_path))
    try:
        assert await current_revision(store) is None
        await migrate(store)
        await _assert_matches_schema(store)
        await migrate(store)  # a second start finds nothing to do
        await _assert_matches_schema(store)
        async with store.read() as session:
            assert (await session.execute(text("PRAGMA journal_mode"))).scalar() == "wal"
    finally:
        await store.close()


async def test_unknown_revision_is_a_clear_error(tmp_path: Path) -> None:
    store = Store(sqlite_url(tmp_path))
    try:
        await migrate(store)
        async with store.write() as session:
            await session.execute(text("UPDATE alembic_version SET version_num = 'from-the-future'"))
        with pytest.raises(StoreError, match="from-the-future"):
            await migrate(store)
    finally:
        await store.close()


async def test_unreachable_database_is_a_clear_error(tmp_path: Path) -> None:
    with pytest.raises(StoreError, match="cannot open the store"):
        async with Runtime.open(home=tmp_path, database_url="postgresql://nobody:secret@127.0.0.1:1/none"):
            pass


@pytest.fixture
async def postgres_url() -> AsyncIterator[str]:
    """A throwaway PostgreSQL database, dropped afterwards."""
    admin_url = POSTGRES_URL
    try:
        admin = await asyncpg.connect(admin_url, timeout=3)
    except (TimeoutError, OSError, asyncpg.PostgresError) as exc:
        pytest.skip(f"PostgreSQL is not reachable at {admin_url}: {exc}")
    name = f"bw_test_{uuid.uuid4().hex[:12]}"
    await admin.execute(f'CREATE DATABASE "{name}"')
    try:
        yield admin_url.rsplit("/", 1)[0] + "/" + name
    finally:
        await admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        await admin.close()


async def test_postgresql_from_empty_to_head(
    postgres_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    store, replica = Store(postgres_url), Store(postgres_url)
    try:
        assert await current_revision(store) is None
        # Two replicas starting at once: the advisory lock lets one migrate, the other finds it done.
        await asyncio.gather(migrate(store), migrate(replica))
        await _assert_matches_schema(store)
    finally:
        await store.close()
        await replica.close()
    monkeypatch.setenv("BENCHWARMERS_DATABASE_URL", postgres_url)
    async with Runtime.open(home=tmp_path) as rt:
        assert rt.store.url.startswith("postgresql+asyncpg://")
        await registry.add_endpoint(rt.store, "hub", "http://127.0.0.1:9/v1", "openai")
        await registry.add_model(rt.store, "a", "hub", "model-a")
        collection = await registry.add_collection(rt.store, "duo", ["a"], reply="merged")
        assert collection.members == ("a",)
        assert (await registry.get_model(rt.store, "a")).created_at.tzinfo is not None
    assert not (tmp_path / "benchwarmers.db").exists()
