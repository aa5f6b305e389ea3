"""The limiter on a real store: user limits, learned limits, rests, waits
(sharing them through Redis: test_limiter_redis.py)."""

from __future__ import annotations

import asyncio
import time
from datetime import UTC, datetime

import pytest

from benchwarmers.calls.call_ids import new_call_id
from benchwarmers.calls.log import CallRow, record_call
from benchwarmers.errors import LimitExceeded
from benchwarmers.limits import enforce
from benchwarmers.limits.counters import Admission, Charge, MemoryCounters
from benchwarmers.limits.enforce import Limiter
from benchwarmers.limits.ledger import next_day
from benchwarmers.limits.rest import is_resting
from benchwarmers.limits.user_limits import set_limits
from benchwarmers.runtime import Runtime
from benchwarmers.store.db import Store
from benchwarmers.store.models import get_model
from benchwarmers.types import Usage
from tests.waiting import Clock, back_from_rest

pytestmark = pytest.mark.unit


async def outcomes(
    limiter: Limiter, served: str, n: int, *, tokens: int = 10, max_wait: float = 0.0
) -> list[bool]:
    async def one() -> bool:
        try:
            await limiter.admit("fake", served, tokens=tokens, max_wait=max_wait)
        except LimitExceeded:
            return False
        return True

    return list(await asyncio.gather(*(one() for _ in range(n))))


async def test_three_a_minute_lets_three_go_and_refuses_the_fourth(bench: Runtime) -> None:
    await set_limits(bench.store, "fake", "", {"rpm": 3})
    limiter = bench.limiter
    for _ in range(3):
        await limiter.admit("fake", "model-one", tokens=10, max_wait=5.0)
    started = time.time()
    with pytest.raises(LimitExceeded) as refused:
        await limiter.admit("fake", "model-one", tokens=10, max_wait=5.0)
    assert time.time() - started < 4.0  # refused at once, not after waiting its 5 s out
    assert refused.value.frees_at == pytest.approx(started + 60, abs=2)
    assert "3 requests a minute on fake" in str(refused.value)


async def test_concurrent_admits_count_exactly(bench: Runtime) -> None:
    await set_limits(bench.store, "fake", "", {"rpm": 5})
    assert sum(await outcomes(bench.limiter, "model-one", 20)) == 5


async def test_endpoint_limit_is_shared_and_a_model_limit_narrows_it(bench: Runtime) -> None:
    await set_limits(bench.store, "fake", "", {"rpm": 2})
    await set_limits(bench.store, "fake", "model-one", {"rpm": 1})
    assert sorted(await outcomes(bench.limiter, "model-one", 2)) == [False, True]
    assert sorted(await outcomes(bench.limiter, "model-two", 2)) == [False, True]


async def test_a_limit_set_between_calls_holds_from_the_next_call(bench: Runtime) -> None:
    # The charges a model's calls make are kept from call to call (`Limiter._made`):
    # a limit set, lowered or added must still count from the next call on.
    limiter = bench.limiter
    await set_limits(bench.store, "fake", "", {"rpm": 5})
    for _ in range(2):
        await limiter.admit("fake", "model-one", tokens=10, max_wait=0)
    await set_limits(bench.store, "fake", "", {"rpm": 2})
    with pytest.raises(LimitExceeded):
        await limiter.admit("fake", "model-one", tokens=10, max_wait=0)
    await set_limits(bench.store, "fake", "", {"rpm": 5, "tpm": 50})
    await limiter.admit("fake", "model-one", tokens=40, max_wait=0)
    with pytest.raises(LimitExceeded):  # a new estimate, against the token limit just added
        await limiter.admit("fake", "model-one", tokens=20, max_wait=0)


async def test_tokens_are_estimated_then_corrected(bench: Runtime) -> None:
    await set_limits(bench.store, "fake", "", {"tpm": 1000})
    limiter = bench.limiter
    await limiter.admit("fake", "model-one", tokens=900, max_wait=0)
    with pytest.raises(LimitExceeded):
        await limiter.admit("fake", "model-one", tokens=200, max_wait=0)
    await limiter.spent("fake", "model-one", usage=Usage(60, 40))  # it took 100, not 900
    await limiter.admit("fake", "model-one", tokens=200, max_wait=0)


async def test_the_real_count_corrects_the_limits_the_estimate_was_counted_against(bench: Runtime) -> None:
    limiter = bench.limiter
    await set_limits(bench.store, "fake", "", {"tpm": 1000})
    await limiter.admit("fake", "model-one", tokens=900, max_wait=0)
    await set_limits(bench.store, "fake", "model-one", {"tpm": 500})  # set while the call runs
    await limiter.spent("fake", "model-one", usage=Usage(60, 40))  # 100 on the first limit, none on the new
    await limiter.admit("fake", "model-one", tokens=450, max_wait=0)  # 550 of 1000, 450 of 500
    with pytest.raises(LimitExceeded):
        await limiter.admit("fake", "model-one", tokens=100, max_wait=0)  # 550 of 500


class _Counting(MemoryCounters):
    """In-process counters that count how often they are asked."""

    def __init__(self) -> None:
        super().__init__()
        self.asked = 0

    async def take(self, charges: list[Charge], now: float) -> Admission:
        self.asked += 1
        return await super().take(charges, now)

    async def put(
        self, key: str, used: int, resets_at: float, now: float, *, only_if_absent: bool = False
    ) -> None:
        self.asked += 1
        await super().put(key, used, resets_at, now, only_if_absent=only_if_absent)


async def test_a_call_no_limit_applies_to_never_asks_the_counters(bench: Runtime) -> None:
    # In Redis every ask is a round trip: a call with nothing to count, and a
    # reply that says nothing of limits, make none.
    counters = _Counting()
    limiter = Limiter(bench.store, counters)
    await limiter.admit("fake", "model-one", tokens=10, max_wait=0)
    await limiter.learn("fake", "model-one", status=200, headers={"Content-Type": "application/json"})
    await limiter.spent("fake", "model-one", usage=Usage(5, 5))
    assert counters.asked == 0
    await set_limits(bench.store, "fake", "", {"rpm": 3})
    await limiter.admit("fake", "model-one", tokens=10, max_wait=0)
    assert counters.asked == 1  # the limit set is counted


async def test_a_call_bigger_than_the_limit_is_refused_for_good(bench: Runtime) -> None:
    await set_limits(bench.store, "fake", "", {"tpm": 100})
    with pytest.raises(LimitExceeded) as refused:
        await bench.limiter.admit("fake", "model-one", tokens=500, max_wait=60)
    assert refused.value.frees_at is None
    assert "500 tokens" in str(refused.value)


async def test_a_learned_limit_waits_when_the_wait_fits(bench: Runtime) -> None:
    limiter = bench.limiter
    headers = {
        "x-ratelimit-limit-requests": "10",
        "x-ratelimit-remaining-requests": "1",
        "x-ratelimit-reset-requests": "300ms",
    }
    await limiter.learn("fake", "model-one", status=200, headers=headers)
    await limiter.admit("fake", "model-one", tokens=1, max_wait=0)  # the one that was left
    with pytest.raises(LimitExceeded) as refused:
        await limiter.admit("fake", "model-two", tokens=1, max_wait=0)  # shared by the endpoint
    assert refused.value.frees_at is not None and refused.value.frees_at - time.time() < 0.35
    await limiter.admit("fake", "model-one", tokens=1, max_wait=2.0)
    # It waited for the reset (within its 2 s, or it would have raised): never let through before it.
    assert time.time() >= refused.value.frees_at - 0.01
    async with bench.store.read() as session:
        from sqlalchemy import select

        from benchwarmers.store.schema import LearnedLimit

        row = await session.scalar(select(LearnedLimit).where(LearnedLimit.endpoint == "fake"))
    assert row is not None and (row.unit, row.limit, row.remaining, row.source) == (
        "requests",
        10,
        1,
        "x-ratelimit",
    )


async def test_waiters_go_first_come_first_served_without_blocking_the_loop(bench: Runtime) -> None:
    limiter = bench.limiter
    await limiter.learn(
        "fake",
        "model-one",
        status=200,
        headers={
            "x-ratelimit-limit-requests": "5",
            "x-ratelimit-remaining-requests": "0",
            "x-ratelimit-reset-requests": "1s",
        },
    )
    order: list[int] = []

    async def waiter(n: int) -> None:
        # Ten times the 1 s they wait: a loaded box makes them late, never refused.
        await limiter.admit("fake", "model-one", tokens=1, max_wait=10.0)
        order.append(n)

    ticks = 0

    async def ticker() -> None:
        nonlocal ticks
        while len(order) < 4:
            ticks += 1
            await asyncio.sleep(0.01)

    tasks = []
    for n in range(4):
        tasks.append(asyncio.create_task(waiter(n)))
        await asyncio.sleep(0.01)
    await asyncio.gather(ticker(), *tasks)
    assert order == [0, 1, 2, 3]
    assert ticks >= 5  # the loop kept running while they waited


async def test_a_429_rests_the_model_and_it_comes_back_after_the_reset(bench: Runtime) -> None:
    # On a clock the test moves: the rest cannot end before the test has looked (however
    # slow the machine), and its end costs no real wait.
    clock = Clock()
    limiter = Limiter(bench.store, MemoryCounters(), clock=clock, sleep=clock.sleep)
    await limiter.learn("fake", "model-one", status=429, headers={"retry-after": "600"}, body="slow down")
    model = await get_model(bench.store, "one")
    assert model.status == "resting" and is_resting(model)
    assert "429" in model.status_reason
    with pytest.raises(LimitExceeded) as refused:
        await limiter.admit("fake", "model-one", tokens=1, max_wait=0)
    assert "resting" in str(refused.value)
    await limiter.admit("fake", "model-two", tokens=1, max_wait=0)  # only the model rests
    await clock.advance(601)  # past the rest's end
    model = await back_from_rest(bench, "one")
    assert model.status == "available" and model.resting_until is None and not is_resting(model)
    await limiter.admit("fake", "model-one", tokens=1, max_wait=0)
    await limiter.close()


async def test_a_429_that_says_nothing_rests_for_the_default(bench: Runtime) -> None:
    before = datetime.now(UTC).timestamp()
    await bench.limiter.learn("fake", "model-one", status=429, headers={}, body="")
    model = await get_model(bench.store, "one")
    assert model.resting_until is not None
    until = model.resting_until.replace(tzinfo=UTC).timestamp()
    assert until == pytest.approx(before + 60, abs=2)


async def test_day_counters_restart_from_the_call_log(bench: Runtime) -> None:
    for _ in range(2):
        await record_call(
            bench.store,
            CallRow(
                id=new_call_id(),
                kind="seat",
                alias="one",
                endpoint="fake",
                served="model-one",
                status="ok",
                seconds=1,
            ),
        )
    await set_limits(bench.store, "fake", "", {"rpd": 3})
    fresh = Limiter(bench.store, MemoryCounters())  # as after a restart
    await fresh.admit("fake", "model-one", tokens=1, max_wait=0)
    with pytest.raises(LimitExceeded) as refused:
        await fresh.admit("fake", "model-two", tokens=1, max_wait=0)
    assert refused.value.frees_at == next_day(datetime.now(UTC)).timestamp()


async def test_a_restarted_limiter_remembers_what_providers_said(bench: Runtime) -> None:
    await bench.limiter.learn(
        "fake",
        "model-one",
        status=429,
        headers={
            "x-ratelimit-limit-requests": "100",
            "x-ratelimit-remaining-requests": "0",
            "x-ratelimit-reset-requests": "30s",
            "retry-after": "20",
        },
    )
    fresh = Limiter(bench.store, MemoryCounters())  # as after a restart, or on another server
    with pytest.raises(LimitExceeded) as resting:
        await fresh.admit("fake", "model-one", tokens=1, max_wait=0)
    assert "resting" in str(resting.value)
    assert resting.value.frees_at == pytest.approx(time.time() + 20, abs=2)
    with pytest.raises(LimitExceeded) as learned:
        await fresh.admit("fake", "model-two", tokens=1, max_wait=0)
    assert "100 requests (from the provider)" in str(learned.value)
    assert learned.value.frees_at == pytest.approx(time.time() + 30, abs=2)


async def test_closing_waits_for_a_waker_cancelled_inside_its_store_write(
    bench: Runtime, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The runtime closes the store right after the limiter: a waker
    cancelled mid-write must have closed its session by then (else the
    loop's end leaves its connection to the garbage collector)."""
    entered, unwound = asyncio.Event(), asyncio.Event()

    async def wake(store: Store, now: datetime) -> None:
        try:
            async with store.write():
                entered.set()
                await asyncio.Event().wait()
        finally:
            unwound.set()

    monkeypatch.setattr(enforce, "wake_rested", wake)
    await bench.limiter.learn("fake", "model-one", status=429, headers={"retry-after": "0"}, body="")
    await asyncio.wait_for(entered.wait(), 10)
    await bench.limiter.close()
    assert unwound.is_set()


async def test_a_forgotten_learned_limit_no_longer_holds_calls_back(bench: Runtime) -> None:
    """One model's used-up allowance on an endpoint counted per key held back
    every model; forgetting it (the Quotas page's Forget) lets them go now."""
    from sqlalchemy import func, select

    from benchwarmers.store.schema import LearnedLimit

    limiter = bench.limiter
    headers = {
        "x-ratelimit-limit-requests": "10",
        "x-ratelimit-remaining-requests": "0",
        "x-ratelimit-reset-requests": "6h",
    }
    await limiter.learn("fake", "model-one", status=200, headers=headers)
    with pytest.raises(LimitExceeded):
        await limiter.admit("fake", "model-two", tokens=1, max_wait=0)
    async with bench.store.read() as session:
        row = await session.scalar(select(LearnedLimit).where(LearnedLimit.endpoint == "fake"))
    assert row is not None
    assert await limiter.forget_learned("fake", row.served, row.unit, row.window) == 1
    await limiter.admit("fake", "model-two", tokens=1, max_wait=0)
    async with bench.store.read() as session:
        assert await session.scalar(select(func.count()).select_from(LearnedLimit)) == 0
    assert await limiter.forget_learned("fake", row.served, row.unit, row.window) == 0
