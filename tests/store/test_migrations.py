"""Migrations from an empty database to head, on SQLite and PostgreSQL."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from pathlib import Path

import pytest
from alembic import command
from alembic.autogenerate import compare_metadata
from alembic.runtime.migration import MigrationContext
from sqlalchemy import Connection, inspect, text

from benchwarmers.errors import StoreError
from benchwarmers.runtime import Runtime
from benchwarmers.store.collections import add_collection
from benchwarmers.store.db import Store, sqlite_url
from benchwarmers.store.endpoints import add_endpoint
from benchwarmers.store.migrate import alembic_config, current_revision, head_revision, migrate
from benchwarmers.store.models import add_model, get_model
from benchwarmers.store.schema import Base


async def _assert_matches_schema(store: Store) -> None:
    """At head, and nothing in schema.py that the migration lacks (tables,
    columns, types, indexes, constraints)."""
    assert await current_revision(store) == head_revision()
    async with store.engine.connect() as connection:
        drift = await connection.run_sync(
            lambda conn: compare_metadata(
                MigrationContext.configure(conn, opts={"compare_type": True}), Base.metadata
            )
        )
    assert drift == [], f"schema.py and the migration differ (run scripts/new_migration.py): {drift}"


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


async def _call_indexes(store: Store) -> set[str]:
    async with store.engine.connect() as connection:
        found = await connection.run_sync(lambda conn: inspect(conn).get_indexes("calls"))
    return {index["name"] for index in found if index["name"]}


async def _round_trip(store: Store) -> None:
    """Every revision down to the first and back up, on a store that holds a
    call: each downgrade puts back what its upgrade took away, and the data
    stays."""

    def downgrade(conn: Connection) -> None:
        command.downgrade(alembic_config(conn), "0001")

    await migrate(store)
    async with store.write() as session:
        await session.execute(
            text(
                "INSERT INTO calls (id, at, kind, alias, endpoint, served, task, collection, shape, seat,"
                " ask_id, conversation, status, seconds, tokens_in, tokens_out, error, explorer) VALUES"
                " ('c_1', '2026-12-01 00:00:00', 'seat', 'a', '', '', '', 'trio', 'short', '', 'a_1', '',"
                " 'ok', 1.0, 0, 0, '', false)"
            )
        )
        await session.execute(  # a month of model m over two shards, of n in one
            text(
                "INSERT INTO usage_ledger (month, endpoint, served, shard, requests, tokens_in, tokens_out)"
                " VALUES ('2026-12', 'e', 'm', 0, 2, 10, 20), ('2026-12', 'e', 'm', 3, 1, 5, 7),"
                " ('2026-12', 'e', 'n', 5, 4, 0, 1)"
            )
        )
    at_head = await _call_indexes(store)
    async with store.engine.begin() as connection:
        await connection.run_sync(downgrade)
    assert await current_revision(store) == "0001"
    assert "ix_calls_collection_shape" in await _call_indexes(store)
    ledger = (
        "SELECT month, endpoint, served, requests, tokens_in, tokens_out FROM usage_ledger ORDER BY served"
    )
    folded = [("2026-12", "e", "m", 3, 15, 27), ("2026-12", "e", "n", 4, 0, 1)]  # shards added up
    async with store.read() as session:
        assert [tuple(row) for row in await session.execute(text(ledger))] == folded
    async with store.write() as session:  # a verdict from before the tallies: counted on the way up
        await session.execute(
            text(
                "INSERT INTO verdicts (call_id, useful, note, at, alias, kind, collection, shape, ask_id)"
                " VALUES ('c_1', true, '', '2026-12-01 00:00:00', 'a', 'seat', 'trio', 'short', 'a_1')"
            )
        )
    await migrate(store)
    await _assert_matches_schema(store)
    assert await _call_indexes(store) == at_head
    assert "ix_calls_collection_shape" not in at_head
    async with store.read() as session:
        assert (await session.execute(text("SELECT count(*) FROM calls"))).scalar() == 1
        assert [tuple(row) for row in await session.execute(text(ledger))] == folded
        assert (await session.execute(text("SELECT DISTINCT shard FROM usage_ledger"))).scalar_one() == 0
        tallies = await session.execute(
            text("SELECT alias, kind, collection, shape, useful, count FROM verdict_tallies")
        )
        assert [tuple(row) for row in tallies] == [("a", "seat", "trio", "short", True, 1)]


async def test_sqlite_migrations_round_trip(tmp_path: Path) -> None:
    store = Store(sqlite_url(tmp_path))
    try:
        await _round_trip(store)
    finally:
        await store.close()


async def test_a_cut_seat_logged_before_0017_reads_cancelled_with_its_reason(tmp_path: Path) -> None:
    """The SPEC's one word for a seat stopped or cut at a quorum: rows
    logged `cut` become `cancelled`, their error `cut: ` and why (and back
    down again); a person's stop is left as it was."""
    store = Store(sqlite_url(tmp_path))

    def to(revision: str) -> Callable[[Connection], None]:
        return lambda conn: command.downgrade(alembic_config(conn), revision)

    row = (
        "INSERT INTO calls (id, at, kind, alias, endpoint, served, task, collection, shape, seat,"
        " ask_id, conversation, status, seconds, tokens_in, tokens_out, error, explorer) VALUES"
        " (:id, '2026-12-01 00:00:00', 'seat', 'a', '', '', '', 'trio', 'short', '', 'a_1', '',"
        " :status, 1.0, 0, 0, :error, false)"
    )
    read = "SELECT id, status, error FROM calls ORDER BY id"
    try:
        await migrate(store)
        async with store.engine.begin() as connection:
            await connection.run_sync(to("0016"))
        async with store.write() as session:
            await session.execute(text(row), {"id": "c_1", "status": "cut", "error": "quorum 2 of 3 reached"})
            await session.execute(
                text(row), {"id": "c_2", "status": "cancelled", "error": "stopped by the person who asked"}
            )
        await migrate(store)
        async with store.read() as session:
            assert [tuple(r) for r in await session.execute(text(read))] == [
                ("c_1", "cancelled", "cut: quorum 2 of 3 reached"),
                ("c_2", "cancelled", "stopped by the person who asked"),
            ]
        async with store.engine.begin() as connection:
            await connection.run_sync(to("0016"))
        async with store.read() as session:
            assert [tuple(r)[1:] for r in await session.execute(text(read))] == [
                ("cut", "quorum 2 of 3 reached"),
                ("cancelled", "stopped by the person who asked"),
            ]
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


async def test_postgresql_from_empty_to_head(
    postgres_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    store, replica = Store(postgres_url), Store(postgres_url)
    try:
        assert await current_revision(store) is None
        # Two replicas starting at once: the advisory lock lets one migrate, the other finds it done.
        await asyncio.gather(migrate(store), migrate(replica))
        await _assert_matches_schema(store)
        await _round_trip(store)
    finally:
        await store.close()
        await replica.close()
    monkeypatch.setenv("BENCHWARMERS_DATABASE_URL", postgres_url)
    async with Runtime.open(home=tmp_path) as rt:
        assert rt.store.url.startswith("postgresql+asyncpg://")
        await add_endpoint(rt.store, "hub", "http://127.0.0.1:9/v1", "openai")
        await add_model(rt.store, "a", "hub", "model-a")
        collection = await add_collection(rt.store, "duo", ["a"], reply="merged")
        assert collection.members == ("a",)
        assert (await get_model(rt.store, "a")).created_at.tzinfo is not None
    assert not (tmp_path / "benchwarmers.db").exists()
