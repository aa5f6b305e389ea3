"""The call log's writer on PostgreSQL (`log._LogConnection`): a driver
connection of its own whose commits do not wait for the disk flush, and
what a reply promises still holds: a call it named is in the log for every
other session (another replica) once the reply may end, this process's
caches learn of the commit, a refused row does not lose the others, and a connection
PostgreSQL dropped is replaced. A batch is one statement
(`call_rows.postgres_batch`) that writes each column and ledger line as
the rows say."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from datetime import UTC, datetime
from pathlib import Path
from types import SimpleNamespace

import asyncpg
import pytest
from sqlalchemy import func, select, text
from sqlalchemy.exc import DBAPIError, IntegrityError

from benchwarmers.calls import log
from benchwarmers.calls.log import CallRow, new_call_id, record_call, submit_call
from benchwarmers.limits.ledger import ledger, month_of
from benchwarmers.runtime import Runtime
from benchwarmers.store import call_rows, changes
from benchwarmers.store.schema import Call, UsageMonth

from ..conftest import throwaway_postgres
from ..waiting import wait_for

pytestmark = pytest.mark.integration


def a_row(call_id: str | None = None) -> CallRow:
    return CallRow(
        call_id or new_call_id(), kind="seat", alias="a", endpoint="e", served="m", status="ok", seconds=1.0
    )


@pytest.fixture
async def database() -> AsyncIterator[str]:
    async with throwaway_postgres() as url:
        yield url


@pytest.fixture
async def runtime(home: Path, database: str) -> AsyncIterator[Runtime]:
    async with Runtime.open(home=home, database_url=database) as rt:
        yield rt


async def test_a_call_is_in_the_log_for_another_replica_once_its_reply_may_end(
    runtime: Runtime, database: str, tmp_path: Path
) -> None:
    reads = iter(range(1, 10))

    async def load() -> int:
        return next(reads)

    cache: changes.Cached[int] = changes.Cached(("calls", "usage_ledger"), ttl=3600.0)
    assert await cache.get(runtime.store, load) == 1
    async with Runtime.open(home=tmp_path / "replica", database_url=database) as replica:
        rows = [a_row() for _ in range(3)]
        safe = [submit_call(runtime.store, row) for row in rows]
        await asyncio.gather(*safe)  # what a reply awaits before its last byte
        async with replica.store.read() as session:
            found = set(await session.scalars(select(Call.id)))
            requests = await session.scalar(select(func.sum(UsageMonth.requests)))
    assert found == {row.id for row in rows}
    assert requests == 3
    assert await cache.get(runtime.store, load) == 2  # this process's caches learned of the commit


async def test_only_the_log_commits_without_waiting_for_the_disk(runtime: Runtime) -> None:
    await record_call(runtime.store, a_row())
    connection = log._writers[runtime.store]._postgres._connection  # type: ignore[union-attr]
    assert connection is not None
    assert await connection.fetchval("SHOW synchronous_commit") == "off"
    async with runtime.store.read() as session:
        assert (await session.execute(text("SHOW synchronous_commit"))).scalar_one() == "on"


async def test_a_row_the_store_refuses_does_not_lose_the_others(runtime: Runtime) -> None:
    taken = new_call_id()
    await record_call(runtime.store, a_row(taken))
    fresh = [a_row(), a_row()]
    results = await asyncio.gather(
        record_call(runtime.store, fresh[0]),
        record_call(runtime.store, a_row(taken)),  # the same id again: refused
        record_call(runtime.store, fresh[1]),
        return_exceptions=True,
    )
    assert results[0] is None and results[2] is None
    assert isinstance(results[1], IntegrityError)
    async with runtime.store.read() as session:
        assert set(await session.scalars(select(Call.id))) == {taken, fresh[0].id, fresh[1].id}
        assert await session.scalar(select(func.sum(UsageMonth.requests))) == 3


async def test_a_connection_postgresql_dropped_is_replaced(runtime: Runtime, database: str) -> None:
    await record_call(runtime.store, a_row())
    connection = log._writers[runtime.store]._postgres._connection  # type: ignore[union-attr]
    assert connection is not None
    admin = await asyncpg.connect(database)
    try:
        await admin.execute("SELECT pg_terminate_backend($1)", connection.get_server_pid())
    finally:
        await admin.close()
    assert await asyncio.to_thread(wait_for, connection.is_closed)
    row = a_row()
    await record_call(runtime.store, row)
    async with runtime.store.read() as session:
        assert await session.get(Call, row.id) is not None


async def test_a_batch_is_one_statement_that_writes_every_column_and_ledger_line(runtime: Runtime) -> None:
    rows = [
        CallRow(
            new_call_id(),
            kind="seat",
            alias="a",
            endpoint="e",
            served="m",
            status="ok",
            seconds=1.25,
            first_byte_seconds=0.5,
            tokens_in=3,
            tokens_out=4,
            task="t",
            collection="c",
            shape="ask",
            seat="s1",
            ask_id="a_1",
            conversation="k",
            explorer=True,
            at=datetime(2026, 11, 30, 23, tzinfo=UTC),
        ),
        CallRow(
            new_call_id(),
            kind="merge",
            alias="b",
            endpoint="e",
            served="m",
            status="error",
            seconds=0.5,
            tokens_in=5,
            error="boom",
            at=datetime(2026, 11, 30, 22, tzinfo=UTC),
        ),
        CallRow(  # refused by our own limits: in the log, not a request in the ledger
            new_call_id(),
            kind="seat",
            alias="a",
            endpoint="e",
            served="m",
            status="limited",
            seconds=0.0,
            sent=False,
            at=datetime(2026, 11, 30, 21, tzinfo=UTC),
        ),
        CallRow(  # another month, another model
            new_call_id(),
            kind="seat",
            alias="a",
            endpoint="e",
            served="n",
            status="ok",
            seconds=2.0,
            tokens_out=7,
            at=datetime(2026, 12, 1, tzinfo=UTC),
        ),
    ]
    statements: list[str] = []
    opener = CallRow(
        new_call_id(), kind="seat", alias="a", endpoint="e", served="o", status="ok", seconds=1.0
    )
    await record_call(runtime.store, opener)  # the log's connection, opened
    connection = log._writers[runtime.store]._postgres._connection  # type: ignore[union-attr]
    assert connection is not None
    connection.add_query_logger(lambda record: statements.append(record.query))
    await asyncio.gather(*(submit_call(runtime.store, row) for row in rows))  # handed over at once: one batch
    assert len(statements) == 1
    async with runtime.store.read() as session:
        stored = {call.id: call for call in await session.scalars(select(Call))}
        ledger = {
            (line.month, line.served): (line.requests, line.tokens_in, line.tokens_out)
            for line in await session.scalars(select(UsageMonth).where(UsageMonth.served != "o"))
        }
    for row in rows:
        call = stored[row.id]
        assert {name: getattr(call, name) for name in log._call_values(row, row.at)} == log._call_values(
            row, row.at
        )
    assert ledger == {("2026-11", "m"): (2, 3 + 5, 4), ("2026-12", "n"): (1, 0, 7)}


async def test_a_value_longer_than_its_column_is_refused_not_cut(runtime: Runtime) -> None:
    fresh = a_row()
    long = CallRow(
        new_call_id(), kind="seat", alias="a" * 200, endpoint="e", served="m", status="ok", seconds=1.0
    )
    results = await asyncio.gather(
        record_call(runtime.store, fresh), record_call(runtime.store, long), return_exceptions=True
    )
    assert results[0] is None
    assert isinstance(results[1], DBAPIError)
    async with runtime.store.read() as session:
        assert set(await session.scalars(select(Call.id))) == {fresh.id}


async def test_a_batch_does_not_wait_for_another_writers_ledger_row(
    runtime: Runtime, database: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Another writer (a worker, a replica) holds the lock on the month's
    ledger row of shard 0 in a transaction not yet committed; a batch that
    picks another shard commits meanwhile, and a read adds the shards up."""
    month = month_of(datetime.now(UTC))
    other = await asyncpg.connect(database)
    try:
        await other.execute(
            "INSERT INTO usage_ledger (month, endpoint, served, shard, requests, tokens_in, tokens_out)"
            " VALUES ($1, 'e', 'm', 0, 5, 1, 2)",
            month,
        )
        holding = other.transaction()
        await holding.start()
        await other.execute("UPDATE usage_ledger SET requests = requests + 1 WHERE shard = 0")
        monkeypatch.setattr(call_rows, "random", SimpleNamespace(randrange=lambda shards: shards - 1))
        await asyncio.wait_for(record_call(runtime.store, a_row()), 10)
        await holding.commit()
    finally:
        await other.close()
    (line,) = await ledger(runtime.store, month)
    assert (line.endpoint, line.served, line.spent.requests) == ("e", "m", 5 + 1 + 1)
    async with runtime.store.read() as session:
        shards = set(await session.scalars(select(UsageMonth.shard)))
    assert shards == {0, call_rows.LEDGER_SHARDS - 1}
