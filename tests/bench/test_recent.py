"""The per-model newest-calls reads as one text statement: the same answers
as reading each model's calls one by one, on SQLite and PostgreSQL (the
moments bound and read back through `calls.at`'s type on both); the bench's
newest verdicts the same as the ORM query forgetting used to send, read down
`ix_verdicts_at` without sorting the window."""

from __future__ import annotations

import contextlib
import sqlite3
from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from sqlalchemy import insert, select

from benchwarmers.bench import recent
from benchwarmers.store.db import Store
from benchwarmers.store.migrate import migrate
from benchwarmers.store.schema import Call, Verdict
from benchwarmers.store.times import utc

from ..conftest import throwaway_postgres

NOW = datetime(2026, 12, 1, 12, 0, tzinfo=UTC)


def rows() -> list[dict[str, object]]:
    """alpha: 7 seats on trio/short (newest 3 quick), 2 on trio/code, an old
    answer and a failed one; beta: one seat; gamma: answers with no first byte."""
    out: list[dict[str, object]] = []

    def call(alias: str, minutes: float, **kw: object) -> None:
        out.append(
            {
                "id": f"c{len(out):04d}",
                "at": NOW - timedelta(minutes=minutes),
                "kind": "seat",
                "alias": alias,
                "collection": "trio",
                "shape": "short",
                "status": "ok",
                **kw,
            }
        )

    for i in range(7):
        call("alpha", i + 1, first_byte_seconds=0.1 if i < 3 else 0.5)
    call("alpha", 30, shape="code", first_byte_seconds=0.9)
    call("alpha", 31, shape="code", first_byte_seconds=0.9)
    call("alpha", 60 * 24 * 30, first_byte_seconds=5.0)  # outside the window
    call("alpha", 0.5, status="error", first_byte_seconds=9.0)  # not an answer
    call("beta", 2, collection="other", first_byte_seconds=0.25)
    call("gamma", 3, kind="route", first_byte_seconds=None)
    return out


def judged() -> list[tuple[dict[str, object], dict[str, object]]]:
    """(call, verdict), one a minute back from NOW: in the window, 31 on the
    bench's seats (alpha, beta; judged/short and judged/code, a collection of
    their own; every third not useful) with 9 of a model gone from the bench
    and 5 on merges in between; then 5 older than the window."""
    out = []
    for i in range(50):
        alias, kind, shape = ("alpha", "beta")[i % 2], "seat", ("short", "code")[i % 4 // 2]
        if i % 5 == 1:
            alias = "gone"
        elif i % 10 == 3:
            kind = "merge"
        at = NOW - timedelta(days=61 if i >= 45 else 0, minutes=i)
        facts = {"alias": alias, "kind": kind, "collection": "judged", "shape": shape}
        call = {"id": f"v{i:04d}", "at": at, "status": "ok", **facts}
        verdict = {"call_id": call["id"], "useful": i % 3 != 0, "note": "", "at": at, "ask_id": f"a{i}"}
        out.append((call, verdict | facts))
    return out


@pytest.fixture(params=["sqlite", "postgresql"])
async def store(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[Store]:
    async with contextlib.AsyncExitStack() as stack:
        if request.param == "sqlite":
            url = f"sqlite+aiosqlite:///{tmp_path / 'bench.db'}"
        else:
            try:
                url = await stack.enter_async_context(throwaway_postgres())
            except (OSError, TimeoutError) as exc:
                pytest.skip(f"PostgreSQL is not reachable: {exc}")
        opened = Store(url)
        stack.push_async_callback(opened.close)
        await migrate(opened)
        async with opened.write() as session:
            await session.execute(insert(Call), rows())
            await session.execute(insert(Call), [c for c, _ in judged()])
            await session.execute(insert(Verdict), [v for _, v in judged()])
        yield opened


async def test_first_bytes_are_the_newest_answers_means(store: Store) -> None:
    async with store.read() as session:
        got = await recent.first_bytes(
            session, ["alpha", "beta", "gamma", "nobody"], NOW - timedelta(days=7), 3
        )
        everything = await recent.first_bytes(session, ["alpha"], NOW - timedelta(days=7), 50)
    assert got.keys() == {"alpha", "beta"}
    assert got["alpha"] == pytest.approx(0.1) and got["beta"] == pytest.approx(0.25)
    assert everything["alpha"] == pytest.approx((3 * 0.1 + 4 * 0.5 + 2 * 0.9) / 9)
    async with store.read() as session:
        assert await recent.first_bytes(session, [], NOW, 3) == {}


async def test_seats_are_counted_up_to_the_cap_with_the_last_one(store: Store) -> None:
    async with store.read() as session:
        got = await recent.seats(session, "trio", "short", ["alpha", "beta", "gamma"], 5)
        code = await recent.seats(session, "trio", "code", ["alpha"], 5)
        uncapped = await recent.seats(session, "trio", "short", ["alpha"], 100)
    # alpha's failed call at 0.5 min is a seat too (a seat is a seat, answered or not).
    assert got == {"alpha": (5, (NOW - timedelta(minutes=0.5)).timestamp())}
    assert uncapped["alpha"][0] == 9  # 7 answers, the old one, the failed one
    assert code == {"alpha": (2, (NOW - timedelta(minutes=30)).timestamp())}


async def test_newest_verdicts_are_what_the_orm_query_read(store: Store) -> None:
    """What `bench/decisions.py` sent before `recent.verdicts`: the same rows
    in the same order, whether the cap cuts the window or not."""
    aliases, kinds, since = ["alpha", "beta", "nobody"], ("seat", "route", "shadow"), NOW - timedelta(days=60)
    for cap in (3, 17, 2000):
        before = (
            select(Verdict.alias, Verdict.collection, Verdict.shape, Verdict.useful, Verdict.at)
            .where(Verdict.alias.in_(aliases), Verdict.at >= since, Verdict.kind.in_(kinds))
            .order_by(Verdict.at.desc())
            .limit(cap)
        )
        async with store.read() as session:
            expected = [(a, c, s, bool(u), utc(at)) for a, c, s, u, at in await session.execute(before)]
            got = await recent.verdicts(session, aliases, kinds, since, cap)
        assert [(a, c, s, u, utc(at)) for a, c, s, u, at in got] == expected
        assert len(got) == min(cap, 31)
        assert {a for a, *_ in got} == ({"alpha"} if cap == 3 else {"alpha", "beta"})
    async with store.read() as session:
        assert await recent.verdicts(session, [], kinds, since, 10) == []


def test_newest_verdicts_go_down_the_time_index_without_sorting(tmp_path: Path) -> None:
    """On SQLite, with statistics or without (a young store's say "few
    verdicts", and the planner preferred a seek per model and a sort)."""
    db = sqlite3.connect(tmp_path / "plan.db")
    db.execute("CREATE TABLE verdicts (call_id, useful, note, at, alias, kind, collection, shape, ask_id)")
    db.execute("CREATE INDEX ix_verdicts_alias_at ON verdicts (alias, at)")
    db.execute("CREATE INDEX ix_verdicts_at ON verdicts (at)")
    statement = str(recent._verdicts(3, 2, True))
    params = {"a0": "x", "a1": "y", "a2": "z", "k0": "seat", "k1": "route", "since": "2026", "cap": 5}
    for analyzed in (False, True):
        if analyzed:
            db.executemany(
                "INSERT INTO verdicts VALUES (?, 1, '', ?, ?, 'seat', 'c', 's', '')",
                [(str(i), f"2026-12-01 {i % 24:02d}:00:00", "xyz"[i % 3]) for i in range(300)],
            )
            db.execute("ANALYZE")
        plan = [row[3] for row in db.execute(f"EXPLAIN QUERY PLAN {statement}", params)]
        assert plan == ["SEARCH verdicts USING INDEX ix_verdicts_at (at>?)"], plan
