"""The call log's writer on PostgreSQL (`log._LogConnection`), behind the
journal in the data folder: a reply waits for its call's journal line, not
its commit; a call another process (a worker, a replica) replied with and
has not committed yet is found by a verdict or `pending` here all the same;
this process's reads and caches see each commit; a refused row does not
lose the others; a connection PostgreSQL dropped is replaced, and
PostgreSQL out of reach is tried again before a batch is left to the
journal. A batch is one statement (`call_rows.postgres_batch`) that writes
each column and ledger line as the rows say."""

from __future__ import annotations

import asyncio
import sys
import time
from collections.abc import AsyncIterator
from datetime import UTC, datetime
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import asyncpg
import pytest
from sqlalchemy import func, select
from sqlalchemy.exc import DBAPIError, IntegrityError, OperationalError

from benchwarmers.calls import call_ids, log
from benchwarmers.calls.call_ids import new_call_id
from benchwarmers.calls.log import CallRow, record_call, submit_call
from benchwarmers.calls.verdicts import pending, record_verdict
from benchwarmers.errors import NotFound
from benchwarmers.limits.ledger import ledger, month_of
from benchwarmers.runtime import Runtime
from benchwarmers.store import call_rows, changes, journal
from benchwarmers.store.schema import Call, UsageMonth

from ..conftest import throwaway_postgres
from ..waiting import eventually, wait_for

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


ANOTHER_PROCESS = """
import asyncio
import sys
from pathlib import Path

from benchwarmers.calls import call_ids, log
from benchwarmers.runtime import Runtime


async def main() -> None:
    log.LINGER = float(sys.argv[3])  # the writer commits this long after the reply
    async with Runtime.open(Path(sys.argv[1]), sys.argv[2]) as runtime:
        row = log.CallRow(
            call_ids.new_call_id(), kind="seat", alias="a", endpoint="e", served="m", status="ok", seconds=1.0
        )
        await log.submit_call(runtime.store, row)  # what a reply awaits before its last byte
        print(row.id, flush=True)
        await asyncio.sleep(60)


asyncio.run(main())
"""


async def test_a_call_another_process_replied_with_is_found_by_a_verdict_here(
    runtime: Runtime, database: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Another worker or replica journaled a call and told its client of it,
    and commits it only later: a verdict and `pending` sent here at once
    find it all the same (they wait for a call id that young)."""
    lingering = 6.0  # long enough for the look below on a loaded machine
    monkeypatch.setattr(log, "ARRIVING", 30.0)  # and this process waits longer than that
    other = await asyncio.create_subprocess_exec(
        sys.executable,
        "-c",
        ANOTHER_PROCESS,
        str(tmp_path / "other"),
        database,
        str(lingering),
        stdout=asyncio.subprocess.PIPE,
    )
    try:
        assert other.stdout is not None
        call = (await asyncio.wait_for(other.stdout.readline(), 60)).decode().strip()
        async with runtime.store.read() as session:
            assert await session.get(Call, call) is None  # not committed yet: the other still lingers
        assert await pending(runtime.store, [call]) == [call]
        recorded = await record_verdict(runtime.store, call, useful=True)
        assert (recorded.call, recorded.useful, recorded.changed) == (call, True, True)
    finally:
        other.kill()
        await other.wait()


async def test_a_young_call_id_the_log_never_gets_is_waited_for_only_so_long(
    runtime: Runtime, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(log, "ARRIVING", 1.0)
    looks: list[int] = []
    read = runtime.store.read

    def counted_read() -> Any:
        looks.append(1)
        return read()

    monkeypatch.setattr(runtime.store, "read", counted_read)
    with pytest.raises(NotFound):
        await record_verdict(runtime.store, new_call_id(), useful=True)
    assert len(looks) > 1  # looked again, then gave up
    looks.clear()
    assert await pending(runtime.store, ["c_" + "-" * 20, "c_" + "z" * 20, "c_not-one-of-ours"]) == []
    assert len(looks) == 1  # an old id, one from far ahead, a string no writer made: looked up once


def test_a_call_ids_time_reads_back_from_it() -> None:
    before = time.time()
    minted = call_ids.minted_at(new_call_id())
    assert minted is not None and before - 0.001 <= minted <= time.time()
    assert call_ids.minted_at("c_" + "-" * 20) == 0.0
    assert call_ids.minted_at("c_short") is None
    assert call_ids.minted_at("c_" + "!" * 20) is None
    assert call_ids.minted_at(call_ids.new_ask_id()) is None


async def test_a_reply_waits_for_the_journal_not_for_the_commit(
    runtime: Runtime, database: str, home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(log, "LINGER", 60.0)
    reads = iter(range(1, 10))

    async def load() -> int:
        return next(reads)

    cache: changes.Cached[int] = changes.Cached(("calls", "usage_ledger"), ttl=3600.0)
    assert await cache.get(runtime.store, load) == 1
    row = a_row()
    safe = submit_call(runtime.store, row)
    assert safe.done()  # the reply's last byte need not wait
    folder = journal.folder_of(runtime.store)
    assert folder is not None and folder.parent == home
    (segment,) = folder.glob("*" + journal.SUFFIX)
    assert row.id.encode() in segment.read_bytes()
    outside = await asyncpg.connect(database)
    try:
        assert await outside.fetchval("SELECT count(*) FROM calls") == 0  # lingering: not committed
        async with runtime.store.read() as session:  # a read here lands it first
            assert await session.get(Call, row.id) is not None
        assert await outside.fetchval("SELECT count(*) FROM calls") == 1
    finally:
        await outside.close()
    assert await cache.get(runtime.store, load) == 2  # this process's caches learned of the commit


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


async def test_postgresql_out_of_reach_for_a_moment_is_tried_again(
    runtime: Runtime, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(log, "RECONNECT_AFTER", (0.01, 0.01, 0.01))
    connect = asyncpg.connect
    refusals = iter([ConnectionRefusedError("restarting"), ConnectionRefusedError("restarting")])

    async def restarting(**kwargs: Any) -> asyncpg.Connection:
        for refusal in refusals:
            raise refusal
        return await connect(**kwargs)

    monkeypatch.setattr(log.asyncpg, "connect", restarting)
    row = a_row()
    await record_call(runtime.store, row)
    async with runtime.store.read() as session:
        assert await session.get(Call, row.id) is not None


async def _record_with_postgresql_down(
    runtime: Runtime, row: CallRow, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Write `row` while no connection to PostgreSQL can be made: refused,
    after the writer's tries (`RECONNECT_AFTER`)."""

    async def refused(**_kwargs: Any) -> asyncpg.Connection:
        raise ConnectionRefusedError("down")

    with monkeypatch.context() as down:
        down.setattr(log.asyncpg, "connect", refused)
        with pytest.raises(OperationalError):
            await record_call(runtime.store, row)


async def test_a_batch_postgresql_never_took_is_written_at_the_next_start(
    home: Path, database: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(log, "RECONNECT_AFTER", (0.01,))
    row = a_row()
    async with Runtime.open(home=home, database_url=database) as runtime:
        await _record_with_postgresql_down(runtime, row, monkeypatch)
    folder = journal.folder_of(runtime.store)
    assert folder is not None and any(folder.glob("*" + journal.SUFFIX))  # kept
    async with Runtime.open(home=home, database_url=database) as runtime, runtime.store.read() as session:
        assert await session.get(Call, row.id) is not None
        assert await session.scalar(select(func.sum(UsageMonth.requests))) == 1
    assert not any(folder.iterdir())


async def test_a_batch_postgresql_did_not_take_is_written_once_it_takes_one_again(
    runtime: Runtime, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(log, "RECONNECT_AFTER", (0.01,))
    left, then = a_row(), a_row()
    await _record_with_postgresql_down(runtime, left, monkeypatch)
    await record_call(runtime.store, then)  # PostgreSQL is back

    async def logged() -> tuple[set[str], int | None]:
        async with runtime.store.read() as session:
            found = set(await session.scalars(select(Call.id)))
            return found, await session.scalar(select(func.sum(UsageMonth.requests)))

    found, requests = await eventually(logged, lambda now: left.id in now[0])
    assert found == {left.id, then.id}
    assert requests == 2
    live = log._writers[runtime.store].journal
    assert live is not None and live.current is not None
    assert list(live.folder.iterdir()) == [live.current.path]  # the one it left behind, written and gone


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
    async with runtime.store.read() as session:  # which the read lands first
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
    assert len(statements) == 1


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
