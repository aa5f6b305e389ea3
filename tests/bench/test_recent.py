"""The per-model newest-calls reads as one text statement: the same answers
as reading each model's calls one by one, on SQLite and PostgreSQL (the
moments bound and read back through `calls.at`'s type on both)."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from sqlalchemy import insert

from benchwarmers.bench import recent
from benchwarmers.store.db import Store
from benchwarmers.store.migrate import migrate
from benchwarmers.store.schema import Call

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
