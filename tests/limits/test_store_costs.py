"""What the limiter costs the store per call: user limits come from a cache
a `limit set` drops at once, and the limits every reply's headers repeat
are written only when they are news. Counted with SQLAlchemy's events."""

from __future__ import annotations

from collections import Counter
from typing import Any

import pytest
from sqlalchemy import event, select

from benchwarmers.errors import LimitExceeded
from benchwarmers.limits import enforce
from benchwarmers.limits.user_limits import _ALL, set_limits
from benchwarmers.runtime import Runtime
from benchwarmers.store.endpoints import add_endpoint
from benchwarmers.store.models import add_model
from benchwarmers.store.schema import LearnedLimit
from benchwarmers.types import Usage

pytestmark = pytest.mark.unit


@pytest.fixture
async def bench(runtime: Runtime, monkeypatch: pytest.MonkeyPatch) -> Runtime:
    monkeypatch.setattr(_ALL, "ttl", 3600.0)  # only a write drops it, however slow the machine
    await add_endpoint(runtime.store, "fake", "http://127.0.0.1:9/v1", "openai")
    await add_model(runtime.store, "one", "fake", "model-one")
    return runtime


def count_statements(runtime: Runtime) -> Counter[str]:
    seen: Counter[str] = Counter()

    def on_execute(_conn: Any, _cursor: Any, statement: str, *_rest: Any) -> None:
        seen[statement.split(None, 1)[0].upper()] += 1

    event.listen(runtime.store.engine.sync_engine, "before_cursor_execute", on_execute)
    return seen


def headers(remaining: int, limit: int = 100) -> dict[str, str]:
    return {
        "x-ratelimit-limit-requests": str(limit),
        "x-ratelimit-remaining-requests": str(remaining),
        "x-ratelimit-reset-requests": "30s",
    }


async def test_admit_and_spent_read_the_limits_once_until_they_change(bench: Runtime) -> None:
    limiter = bench.limiter
    await set_limits(bench.store, "fake", "", {"rpm": 2, "tpm": 10_000})
    await limiter.admit("fake", "model-one", tokens=10, max_wait=0)  # reads them
    seen = count_statements(bench)
    await limiter.spent("fake", "model-one", usage=Usage(5, 20))
    await limiter.admit("fake", "model-one", tokens=10, max_wait=0)
    assert seen["SELECT"] == 0
    with pytest.raises(LimitExceeded):
        await limiter.admit("fake", "model-one", tokens=10, max_wait=0)
    await set_limits(bench.store, "fake", "", {"rpm": 3})  # seen at once, not after a time-to-live
    await limiter.admit("fake", "model-one", tokens=10, max_wait=0)


async def test_headers_every_reply_repeats_are_written_when_they_are_news(bench: Runtime) -> None:
    clock = [1_000_000.0]
    limiter = enforce.Limiter(bench.store, bench.counters, clock=lambda: clock[0])

    async def remaining_in_store() -> int | None:
        async with bench.store.read() as session:
            row = await session.scalar(select(LearnedLimit).where(LearnedLimit.endpoint == "fake"))
        return None if row is None else row.remaining

    await limiter.learn("fake", "model-one", status=200, headers=headers(99))
    assert await remaining_in_store() == 99  # the first time
    seen = count_statements(bench)
    clock[0] += 0.1
    await limiter.learn("fake", "model-one", status=200, headers=headers(98))
    assert sum(seen.values()) == 0 and await remaining_in_store() == 99  # the same ceiling, just now
    clock[0] += 0.1
    await limiter.learn("fake", "model-one", status=200, headers=headers(97, limit=500))
    assert await remaining_in_store() == 97  # a new ceiling
    clock[0] += 0.1
    await limiter.learn("fake", "model-one", status=200, headers=headers(0, limit=500))
    assert await remaining_in_store() == 0  # used up
    clock[0] += enforce.KEEP_EVERY
    await limiter.learn("fake", "model-one", status=200, headers=headers(400, limit=500))
    assert await remaining_in_store() == 400  # a while later
