"""What an ask costs the store, and the caches that keep it low.

An ask reads the collection, the bench and the user's limits from caches
(`store/changes.py`) and writes each seat in one transaction of two
statements; these tests count the statements (SQLAlchemy's own events, so
no clock is involved) and check that every kind of write is seen at once.
"""

from __future__ import annotations

import asyncio
import sqlite3
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from sqlalchemy import event, select
from sqlalchemy.exc import IntegrityError

from benchwarmers.bench.seated import SEATED
from benchwarmers.calls import log
from benchwarmers.calls.call_ids import new_call_id
from benchwarmers.calls.log import CallRow, record_call
from benchwarmers.calls.reads import calls_of_ask
from benchwarmers.errors import NotFound
from benchwarmers.limits.rest import rest_model
from benchwarmers.limits.user_limits import _ALL, clear_limits, limits_for, set_limits
from benchwarmers.panel import history
from benchwarmers.panel.engine import _RUNNING, PanelEngine
from benchwarmers.runtime import Runtime
from benchwarmers.store.collections import (
    _COLLECTIONS,
    add_collection,
    get_collection,
    list_collections,
    remove_collection,
    update_collection,
)
from benchwarmers.store.db import Store
from benchwarmers.store.endpoints import add_endpoint
from benchwarmers.store.models import _BENCH, add_model, get_model, list_models, restore, retire
from benchwarmers.store.schema import UsageMonth
from benchwarmers.testing.fake_provider import FakeProvider
from benchwarmers.testing.script import FakeModel
from benchwarmers.types import Ask, Request, user

CACHES = (_BENCH, _COLLECTIONS, _ALL, SEATED)


@pytest.fixture
def no_expiry(monkeypatch: pytest.MonkeyPatch) -> None:
    """Caches that only a write drops, so a slow machine cannot make a
    count flaky by letting the time-to-live run out mid-test."""
    for cache in CACHES:
        monkeypatch.setattr(cache, "ttl", 3600.0)


class Tally:
    def __init__(self) -> None:
        self.statements: Counter[str] = Counter()
        self.commits = 0


@contextmanager
def counting(store: Store) -> Iterator[Tally]:
    """Statements and commits on the store's engine, and the call log's
    batches on the connection of its own (`log._LogFile`, on an SQLite
    file): each one transaction of its statements."""
    tally = Tally()
    engine = store.engine.sync_engine
    write = log._LogFile.write

    def on_execute(_conn: Any, _cursor: Any, statement: str, *_rest: Any) -> None:
        tally.statements[statement.split(None, 1)[0].upper()] += 1

    def on_commit(_conn: Any) -> None:
        tally.commits += 1

    def counted_write(file: log._LogFile, statements: Any) -> None:
        write(file, statements)
        for statement, values in statements:
            if values:
                tally.statements[str(statement).split(None, 1)[0].upper()] += 1
        tally.commits += 1

    event.listen(engine, "before_cursor_execute", on_execute)
    event.listen(engine, "commit", on_commit)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(log._LogFile, "write", counted_write)
        try:
            yield tally
        finally:
            event.remove(engine, "before_cursor_execute", on_execute)
            event.remove(engine, "commit", on_commit)


async def trio(runtime: Runtime, fake: FakeProvider) -> None:
    await add_endpoint(runtime.store, "fake", fake.openai_base, "openai", needs_key=False)
    for alias, ttfb in (("fast", 0.0), ("mid", 0.05), ("slow", 0.1)):
        fake.add(FakeModel(alias, answer=f"{alias} here", ttfb=ttfb))
        await add_model(runtime.store, alias, "fake", alias)
    await add_collection(runtime.store, "trio", ["fast", "mid", "slow"])


async def settle() -> None:
    while _RUNNING:
        await asyncio.gather(*_RUNNING, return_exceptions=True)


ASK = Ask("trio", "panel", Request((user("hello"),)))


async def test_a_warm_ask_reads_nothing_and_writes_each_seat_once(
    runtime: Runtime, fake_provider: FakeProvider, no_expiry: None
) -> None:
    await trio(runtime, fake_provider)
    await set_limits(runtime.store, "fake", "", {"rpm": 1000, "tpm": 10**6})
    engine = PanelEngine(runtime)
    for _ in range(2):  # the first reads and writes the seating history, the second reads that back
        await engine.answer(ASK)
        await settle()
    with counting(runtime.store) as tally:
        reply = await engine.answer(ASK)
        await settle()
    assert [s.status for s in reply.seats] == ["ok", "ok", "ok"]
    assert tally.statements["SELECT"] == 0
    # Each seat: its call row and its ledger line, in one transaction (fewer when seats end together).
    assert tally.statements["INSERT"] <= 6 and tally.commits <= 3
    assert len(await calls_of_ask(runtime.store, (await _ask_id(runtime, reply.seats[0].call)))) == 3


async def _ask_id(runtime: Runtime, call: str) -> str:
    from benchwarmers.calls.reads import get_call

    row = await get_call(runtime.store, call)
    assert row is not None
    return row.ask_id


async def test_the_seating_history_is_written_only_when_who_sits_changes(
    runtime: Runtime, fake_provider: FakeProvider, no_expiry: None
) -> None:
    from benchwarmers.bench.explain import seating_history

    await trio(runtime, fake_provider)
    engine = PanelEngine(runtime)
    for _ in range(3):
        await engine.answer(ASK)
        await settle()
    assert [line["seated"] for line in await seating_history(runtime.store, "trio")] == [
        ["fast", "mid", "slow"]
    ]
    await retire(runtime.store, "mid")
    await engine.answer(ASK)
    await settle()
    latest = (await seating_history(runtime.store, "trio"))[0]
    assert latest["seated"] == ["fast", "slow"] and "mid left off: retired" in latest["reason"]


async def test_asks_that_find_the_same_new_seating_note_it_once(
    runtime: Runtime, monkeypatch: pytest.MonkeyPatch, no_expiry: None
) -> None:
    """Asks at once on a seating the history has not seen leave the note to
    the first: one ranking and one write session, not one per ask."""
    from benchwarmers.bench import decisions
    from benchwarmers.bench.explain import seating_history

    await add_endpoint(runtime.store, "e", "http://127.0.0.1:9/v1", "openai", needs_key=False)
    for alias in ("a", "b"):
        await add_model(runtime.store, alias, "e", alias)
    await add_collection(runtime.store, "duo", ["a", "b"])
    ranked = []
    rank = decisions.rank

    async def counted(*args: Any, **kwargs: Any) -> Any:
        ranked.append(args[1:3])
        return await rank(*args, **kwargs)

    monkeypatch.setattr(decisions, "rank", counted)
    await asyncio.gather(
        *(history.note_panel(runtime.store, "duo", "short", ["a", "b"], [], []) for _ in range(10))
    )
    assert ranked == [("duo", "short")]
    assert [line["seated"] for line in await seating_history(runtime.store, "duo")] == [["a", "b"]]
    # Once it is noted, a new seating is noted again.
    await asyncio.gather(
        *(history.note_panel(runtime.store, "duo", "short", ["b"], [], []) for _ in range(3))
    )
    assert ranked == [("duo", "short")] * 2
    assert (await seating_history(runtime.store, "duo"))[0]["seated"] == ["b"]


async def test_every_kind_of_write_shows_in_the_next_read_at_once(
    runtime: Runtime, fake_provider: FakeProvider, no_expiry: None
) -> None:
    await trio(runtime, fake_provider)
    store = runtime.store
    assert (await get_collection(store, "bench/trio")).members == ("fast", "mid", "slow")
    await update_collection(store, "trio", members=["slow", "fast"])
    assert (await get_collection(store, "trio")).members == ("slow", "fast")
    await add_collection(store, "duo", ["fast"])
    assert [c.name for c in await list_collections(store)] == ["duo", "trio"]
    await remove_collection(store, "duo")
    with pytest.raises(NotFound):
        await get_collection(store, "duo")

    await retire(store, "mid")
    assert (await get_model(store, "mid")).status == "retired"
    # A writer outside the registry (a 429's rest) is seen as soon as it commits.
    until = datetime.now(UTC) + timedelta(minutes=1)
    assert await rest_model(store, "fake", "fast", until, "rate limited")
    assert {m.alias: m.status for m in await list_models(store)}["fast"] == "resting"
    # So is another store on the same database (the CLI beside a server, in one process).
    async with Runtime.open(home=runtime.home) as other:
        await restore(other.store, "mid")
        await set_limits(other.store, "fake", "slow", {"rpm": 7})
    assert (await get_model(store, "mid")).status == "available"
    assert [limit.amount for limit in await limits_for(store, "fake", "slow")] == [7]
    assert await clear_limits(store, "fake", "slow") == 1
    assert await limits_for(store, "fake", "slow") == ()


async def test_a_change_made_by_another_process_shows_within_the_time_to_live(
    runtime: Runtime, fake_provider: FakeProvider, monkeypatch: pytest.MonkeyPatch
) -> None:
    await trio(runtime, fake_provider)
    monkeypatch.setattr(_BENCH, "ttl", 0.2)
    assert (await get_model(runtime.store, "slow")).status == "available"
    # Behind SQLAlchemy's back, as another process would write.
    with sqlite3.connect(runtime.home / "benchwarmers.db") as db:
        db.execute("UPDATE models SET status = 'retired' WHERE alias = 'slow'")
    await asyncio.sleep(0.25)
    assert (await get_model(runtime.store, "slow")).status == "retired"


async def test_calls_that_end_together_share_one_commit(runtime: Runtime) -> None:
    rows = [
        CallRow(id=new_call_id(), kind="seat", alias="a", endpoint="e", served=s, status="ok", seconds=1.0)
        for s in ("m1", "m1", "m2", "m1", "m2")
    ]
    with counting(runtime.store) as tally:
        await asyncio.gather(*(record_call(runtime.store, row) for row in rows))
    assert tally.commits == 1  # all five handed over before the writer runs: one batch
    async with runtime.store.read() as session:
        ledger = {u.served: u.requests for u in await session.scalars(select(UsageMonth))}
    assert ledger == {"m1": 3, "m2": 2}
    for row in rows:
        assert (await _ask_id(runtime, row.id)) == ""


async def test_a_row_the_store_refuses_does_not_lose_the_others(runtime: Runtime) -> None:
    def row(call_id: str) -> CallRow:
        return CallRow(id=call_id, kind="seat", alias="a", endpoint="e", served="m", status="ok", seconds=1.0)

    taken = new_call_id()
    await record_call(runtime.store, row(taken))
    fresh = [new_call_id(), new_call_id()]
    results = await asyncio.gather(
        record_call(runtime.store, row(fresh[0])),
        record_call(runtime.store, row(taken)),  # the same id again: refused
        record_call(runtime.store, row(fresh[1])),
        return_exceptions=True,
    )
    assert results[0] is None and results[2] is None
    assert isinstance(results[1], IntegrityError)
    for call_id in fresh:
        assert (await _ask_id(runtime, call_id)) == ""
    async with runtime.store.read() as session:
        (line,) = await session.scalars(select(UsageMonth))
    assert line.requests == 3
