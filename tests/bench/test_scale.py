"""Ranking does not read the call log: its cost follows the offline, not the
months of calls behind it.

Counted, not timed: the statements `rank` and `pick_explorers` send are
replayed on a plain sqlite3 connection to the same file with a progress
handler that counts SQLite virtual-machine steps (deterministic, unlike a
clock), before and after 20k more calls that ranking has no business
reading; and every plan must reach `calls` and `verdicts` through an index,
whatever statistics the planner has.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from sqlalchemy import event, insert

from benchwarmers.bench import decisions, evidence, seated
from benchwarmers.runtime import Runtime
from benchwarmers.store.db import SQLITE_FILE
from benchwarmers.store.models import add_model
from benchwarmers.store.schema import Call, Verdict

from .conftest import Seat

pytestmark = pytest.mark.unit

MEMBERS = ("a", "b", "c")
NOISE = 20_000


async def add_bench(rt: Runtime, seat: Seat) -> None:
    for alias in (*MEMBERS, "other1", "other2"):
        await add_model(rt.store, alias, "local", alias + "-served")
    # Enough recent answers that the first-byte sample is full, and a few verdicts.
    async with rt.store.write() as session:
        now = datetime.now(UTC)
        await session.execute(
            insert(Call),
            [
                _call(f"m{i}", MEMBERS[i % 3], now - timedelta(minutes=i), "trio", "short")
                for i in range(3 * (evidence.FIRST_BYTE_SAMPLE + 5))
            ],
        )
    for alias in MEMBERS:
        await seat(alias, useful=alias != "c")


async def add_noise(rt: Runtime) -> None:
    """Calls ranking must not read: of models no longer on the offline (with
    verdicts older than the members' newest), members' seats beyond the seat
    cap and the first-byte sample (without verdicts), members' old seats on
    other shapes and collections."""
    now = datetime.now(UTC)
    rows, verdicts = [], []
    # Forgetting reads the bench's newest verdicts down `ix_verdicts_at` and stops at the
    # `RECENT_CAP`th: the gone models' verdicts behind that one are never visited (those in
    # front of it would be, as would the whole window's on a bench judged less than the cap).
    older = now - timedelta(hours=2)
    for i in range(NOISE):
        member = MEMBERS[i % 3]
        if i % 4 == 0:
            rows.append(
                _call(f"n{i}", ("gone1", "gone2")[i % 8 // 4], now - timedelta(seconds=i), "trio", "short")
            )
            verdicts.append(
                {"call_id": f"n{i}", "useful": True, "note": "", "at": older, "alias": rows[-1]["alias"]}
                | {"kind": "seat", "collection": "trio", "shape": "short"}
            )
        elif i % 4 == 1:
            rows.append(_call(f"n{i}", member, now - timedelta(hours=1, seconds=i), "trio", "short"))
        elif i % 4 == 2:
            rows.append(_call(f"n{i}", member, now - timedelta(days=30, seconds=i), "trio", "long"))
        else:
            rows.append(_call(f"n{i}", member, now - timedelta(days=60, seconds=i), "elsewhere", "code"))
    async with rt.store.write() as session:
        await session.execute(insert(Call), rows)
        await session.execute(insert(Verdict), verdicts)


def _call(call_id: str, alias: str, at: datetime, collection: str, shape: str) -> dict[str, Any]:
    return {
        "id": call_id,
        "at": at,
        "kind": "seat",
        "alias": alias,
        "collection": collection,
        "shape": shape,
        "status": "ok",
        "first_byte_seconds": 0.5,
    }


async def statements(rt: Runtime, operation: Callable[[], Awaitable[Any]]) -> list[tuple[str, Any]]:
    """What `operation` sends with ranking's caches empty: the reads a
    refresh of them makes (a warm rank sends none)."""
    for cache in decisions.RANKING_CACHES:
        cache.forget()
    sent: list[tuple[str, Any]] = []

    def keep(_conn: Any, _cursor: Any, statement: str, params: Any, *_: Any) -> None:
        sent.append((statement, params))

    engine = rt.store.engine.sync_engine
    event.listen(engine, "before_cursor_execute", keep)
    try:
        await operation()
    finally:
        event.remove(engine, "before_cursor_execute", keep)
    return sent


def vm_steps(rt: Runtime, sent: list[tuple[str, Any]]) -> int:
    steps = 0

    def count() -> int:
        nonlocal steps
        steps += 1
        return 0

    with sqlite3.connect(rt.home / SQLITE_FILE) as db:
        db.set_progress_handler(count, 1)
        for statement, params in sent:
            db.execute(statement, tuple(params)).fetchall()
    return steps


def plans(rt: Runtime, sent: list[tuple[str, Any]]) -> list[str]:
    with sqlite3.connect(rt.home / SQLITE_FILE) as db:
        return [
            row[3]
            for statement, params in sent
            for row in db.execute(f"EXPLAIN QUERY PLAN {statement}", tuple(params))
        ]


def assert_indexed(details: list[str]) -> None:
    touching = [d for d in details if " calls" in d or " verdicts" in d]
    assert touching, details
    for detail in touching:
        assert detail.startswith("SEARCH"), f"a scan of the log: {detail}"
        assert (
            "COVERING INDEX ix_calls_seats" in detail
            or "COVERING INDEX ix_verdicts_tally" in detail
            or "INDEX ix_calls_alias_at (alias=? AND at>?)" in detail
            or "INDEX ix_verdicts_at (at>?)" in detail
        ), detail
        assert "ix_verdicts_alias_at" not in detail, f"each model's verdicts, then sorted: {detail}"


@pytest.fixture
async def ranked(offline: Runtime, seat: Seat) -> Runtime:
    await add_bench(offline, seat)
    return offline


async def test_rank_and_explorers_read_the_same_however_long_the_log(
    ranked: Runtime, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Each member already has more seats here than the cap, as on a offline in use for a while.
    monkeypatch.setattr(seated, "SEAT_COUNT_CAP", evidence.FIRST_BYTE_SAMPLE)
    # As many recent verdicts read one by one as the members have: the read stops at their last.
    monkeypatch.setattr(evidence, "RECENT_CAP", len(MEMBERS))
    operations: dict[str, Callable[[], Awaitable[Any]]] = {
        "rank": lambda: decisions.rank(ranked.store, "trio", "short", list(MEMBERS)),
        "rank whole bench": lambda: decisions.rank(ranked.store, "trio", "short"),
        "explorers": lambda: decisions.pick_explorers(ranked.store, "trio", "short", 2),
    }
    before = {name: await statements(ranked, op) for name, op in operations.items()}
    decided = [r.alias for r in await decisions.rank(ranked.store, "trio", "short", list(MEMBERS))]
    steps_before = {name: vm_steps(ranked, sent) for name, sent in before.items()}

    await add_noise(ranked)
    after = {name: await statements(ranked, op) for name, op in operations.items()}
    assert {n: len(s) for n, s in after.items()} == {n: len(s) for n, s in before.items()}
    steps_after = {name: vm_steps(ranked, sent) for name, sent in after.items()}
    for name in operations:
        # 20k more calls (about 100 times the bench's own) leave the work as it was; the old
        # queries walked every call of the members (or of the collection) and grew with them.
        assert steps_after[name] < 1.2 * steps_before[name] + 50, (name, steps_before, steps_after)
    assert [r.alias for r in await decisions.rank(ranked.store, "trio", "short", list(MEMBERS))] == decided
    assert decided[-1] == "c"


async def test_a_warm_rank_reads_nothing_and_a_verdict_is_seen_at_once(ranked: Runtime, seat: Seat) -> None:
    await decisions.rank(ranked.store, "trio", "short", list(MEMBERS))
    await decisions.pick_explorers(ranked.store, "trio", "short", 2)
    sent: list[str] = []

    def keep(_conn: Any, _cursor: Any, statement: str, *_: Any) -> None:
        sent.append(statement)

    engine = ranked.store.engine.sync_engine
    event.listen(engine, "before_cursor_execute", keep)
    try:
        warm = await decisions.rank(ranked.store, "trio", "short", list(MEMBERS))
    finally:
        event.remove(engine, "before_cursor_execute", keep)
    assert sent == []
    before = {r.alias: r.judged for r in warm}
    await seat("c", useful=True)  # a verdict (through record_verdict) drops the tally at once
    after = {r.alias: r.judged for r in await decisions.rank(ranked.store, "trio", "short", list(MEMBERS))}
    assert after["c"] == before["c"] + 1 and after["a"] == before["a"]


async def test_plans_use_indexes_with_or_without_statistics(ranked: Runtime) -> None:
    await add_noise(ranked)
    sent = [
        *await statements(ranked, lambda: decisions.rank(ranked.store, "trio", "short")),
        *await statements(ranked, lambda: decisions.pick_explorers(ranked.store, "trio", "short", 2)),
    ]
    # The store opened empty, so its statistics (taken at start) are stale now: the worst case.
    assert_indexed(plans(ranked, sent))
    with sqlite3.connect(ranked.home / SQLITE_FILE) as db:
        db.execute("ANALYZE")
    assert_indexed(plans(ranked, sent))
    with sqlite3.connect(ranked.home / SQLITE_FILE) as db:
        db.execute("DROP TABLE sqlite_stat1")
    assert_indexed(plans(ranked, sent))


async def test_store_start_refreshes_statistics(offline: Runtime) -> None:
    with sqlite3.connect(offline.home / SQLITE_FILE) as db:
        tables = {name for (name,) in db.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
    assert "sqlite_stat1" in tables


async def test_seats_past_the_cap_rotate_by_last_seat(
    offline: Runtime, seat: Seat, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(seated, "SEAT_COUNT_CAP", 3)
    for alias in ("many", "more"):
        await add_model(offline.store, alias, "local", alias + "-served")
    for _ in range(5):
        await seat("more")
    for _ in range(4):
        await seat("many")
    # Below the cap fewer seats go first; past it both count 3, and the one seated longest ago goes.
    assert await decisions.pick_explorers(offline.store, "trio", "short", 2) == ["more", "many"]
    monkeypatch.setattr(seated, "SEAT_COUNT_CAP", 10)
    for cache in decisions.RANKING_CACHES:  # seat counts are read again only every SEAT_COUNT_TTL
        cache.forget()
    assert await decisions.pick_explorers(offline.store, "trio", "short", 2) == ["many", "more"]


async def test_first_byte_stand_in_is_the_newest_answers(
    offline: Runtime, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(evidence, "FIRST_BYTE_SAMPLE", 2)
    await add_model(offline.store, "lagging", "local", "lagging-served")
    now = datetime.now(UTC)
    rows = [_call("old", "lagging", now - timedelta(hours=2), "trio", "short") | {"first_byte_seconds": 0.2}]
    rows += [
        _call(f"new{i}", "lagging", now - timedelta(minutes=i), "trio", "short") | {"first_byte_seconds": 6.0}
        for i in range(2)
    ]
    rows.append(
        _call("failed", "lagging", now, "trio", "short") | {"status": "error", "first_byte_seconds": 0.1}
    )
    async with offline.store.write() as session:
        await session.execute(insert(Call), rows)
    (ranking,) = await decisions.rank(offline.store, "trio", "short", ["lagging"])
    assert "first byte 6.0s" in " ".join(ranking.reasons)
