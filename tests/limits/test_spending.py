"""Budgets enforced on the counters: a call reserves its estimate or is
refused naming the budget, what is left and the reset; it settles at its
real cost; a reservation given back leaves the budget as it was; a
restarted process starts from what was spent; a panel seats what its
budget pays for, cheapest first or by record; in memory and in Redis."""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

import pytest

from benchwarmers.identity.keys import create_key
from benchwarmers.limits.budget_spend import spent_since
from benchwarmers.limits.budgets import set_budget, window
from benchwarmers.limits.counters import Counters, MemoryCounters
from benchwarmers.limits.spending import BudgetExceeded, Spending, paying
from benchwarmers.runtime import Runtime
from benchwarmers.store.collections import add_collection
from benchwarmers.store.endpoints import add_endpoint
from benchwarmers.store.models import add_model
from benchwarmers.testing.store_template import copy_migrated_store
from benchwarmers.types import Usage

# 2036-12-05 12:00 UTC, a Friday: in the future, since Redis expires a window at its real end.
NOON = datetime(2036, 12, 5, 12, tzinfo=UTC).timestamp()


@dataclass
class Model:
    alias: str
    price_in: float | None
    price_out: float | None


@dataclass
class PlannedSeat:
    model: Model


async def _key(runtime: Runtime) -> str:
    name = f"k-{uuid.uuid4().hex[:8]}"  # Redis outlives the test: counters of its own
    await create_key(runtime.store, name)
    return name


async def test_a_call_reserves_settles_and_is_refused_when_it_does_not_fit(
    runtime: Runtime, counters: Counters
) -> None:
    key = await _key(runtime)
    await set_budget(runtime.store, "key", key, "day", usd=0.001, tokens=None)  # a million nano-dollars
    spending = Spending(runtime.store, counters, clock=lambda: NOON)
    # 100 in + 100 out at $2/M: $0.0004 each, estimated.
    call = {"collection": "", "price_in": 2.0, "price_out": 2.0, "tokens_in": 100, "tokens_out": 100}
    first = await spending.reserve(key=key, **call)
    second = await spending.reserve(key=key, **call)
    with pytest.raises(BudgetExceeded) as refused:
        await spending.reserve(key=key, **call)
    assert refused.value.message == (
        f"budget key {key} per day: $0.0002 of $0.001 left, resets 2036-12-06T00:00:00+00:00"
    )
    assert refused.value.frees_at == datetime(2036, 12, 6, tzinfo=UTC).timestamp()
    # The first used less than it reserved, the second failed: room for the third now.
    await spending.settle(first, Usage(100, 10))  # $0.00022
    await spending.settle(second, Usage())
    await spending.settle(second, Usage(100, 100))  # settled once only
    third = await spending.reserve(key=key, **call)
    (status,) = await spending.status()
    assert (status.spent_nano, status.left_usd) == (620_000, pytest.approx(0.00038))
    await spending.settle(third, Usage(100, 100))
    (status,) = await spending.status()
    assert status.spent_nano == 620_000 and status.resets_at == datetime(2036, 12, 6, tzinfo=UTC)


async def test_token_budgets_bound_a_model_of_unknown_price(runtime: Runtime) -> None:
    key = await _key(runtime)
    await set_budget(runtime.store, "key", key, "month", usd=0.000001, tokens=300)
    spending = Spending(runtime.store, MemoryCounters(), clock=lambda: NOON)
    call = {"collection": "", "price_in": None, "price_out": None, "tokens_in": 100, "tokens_out": 100}
    await spending.reserve(key=key, **call)  # the USD budget cannot price it; the tokens can
    with pytest.raises(
        BudgetExceeded, match=f"budget key {key} per month: 100 of 300 tokens left, resets 2037-01-01"
    ):
        await spending.reserve(key=key, **call)


async def test_every_scope_applies_and_the_request_names_its_key(runtime: Runtime) -> None:
    store = runtime.store
    await add_endpoint(store, "fake", "http://127.0.0.1:9/v1", "openai", needs_key=False)
    await add_model(store, "m", "fake", "m")
    await add_collection(store, "solo", ["m"])
    key = await _key(runtime)
    await set_budget(store, "install", "", "week", usd=None, tokens=1000)
    await set_budget(store, "collection", "solo", "day", usd=None, tokens=500)
    await set_budget(store, "key", key, "month", usd=None, tokens=300)
    spending = Spending(store, MemoryCounters(), clock=lambda: NOON)
    call = {"price_in": None, "price_out": None, "tokens_in": 200, "tokens_out": 0}
    paying(key)
    assert len(await spending.applying("other")) == 2  # the key's and the install's
    await spending.reserve(collection="solo", **call)
    with pytest.raises(BudgetExceeded, match=f"budget key {key} per month"):
        await spending.reserve(collection="solo", **call)
    paying("")  # the owner: no key budget, the collection's still
    await spending.reserve(collection="solo", **call)
    with pytest.raises(BudgetExceeded, match="budget collection solo per day: 100 of 500 tokens left"):
        await spending.reserve(collection="solo", **call)
    for _ in range(3):  # 400 counted so far
        await spending.reserve(collection="", **call)
    with pytest.raises(
        BudgetExceeded, match="budget install per week: 0 of 1000 tokens left, resets 2036-12-08"
    ):
        await spending.reserve(collection="", **call)


async def test_a_restart_starts_from_what_was_spent(home: Path) -> None:
    copy_migrated_store(home)
    call = {"collection": "", "price_in": 1.0, "price_out": 1.0, "tokens_in": 400, "tokens_out": 0}
    async with Runtime.open(home=home) as runtime:
        key = await _key(runtime)
        await set_budget(runtime.store, "key", key, "day", usd=None, tokens=1000)
        spending = Spending(runtime.store, MemoryCounters(), clock=lambda: NOON)
        for _ in range(2):
            await spending.settle(await spending.reserve(key=key, **call), Usage(400, 0))
    # The store closed: what was spent was written on the way out.
    async with Runtime.open(home=home) as runtime:
        start, _ = window("day", datetime.fromtimestamp(NOON, UTC))
        assert await spent_since(runtime.store, "key", key, start) == (800_000, 800)
        spending = Spending(runtime.store, MemoryCounters(), clock=lambda: NOON)
        with pytest.raises(BudgetExceeded, match="200 of 1000 tokens left"):
            await spending.reserve(key=key, **call)
        (status,) = await spending.status()
        assert (status.spent_tokens, status.left_tokens) == (800, 200)


async def test_spend_is_booked_in_the_utc_day_each_call_settled_in(runtime: Runtime) -> None:
    """The day a settled call counts in is worked out once a day, not per
    call: a call a second either side of midnight, and a clock set back,
    still land in their own days."""
    now = [datetime(2036, 12, 5, 23, 59, 59, tzinfo=UTC).timestamp()]
    spending = Spending(runtime.store, MemoryCounters(), clock=lambda: now[0])
    call = {"collection": "", "price_in": None, "price_out": None, "tokens_in": 10, "tokens_out": 0}
    for moment, tokens in (
        (datetime(2036, 12, 5, 23, 59, 59, tzinfo=UTC), 1),
        (datetime(2036, 12, 6, 0, 0, 0, tzinfo=UTC), 20),
        (datetime(2036, 12, 6, 0, 0, 1, tzinfo=UTC), 300),
        (datetime(2036, 12, 5, 12, tzinfo=UTC), 4000),  # the clock set back
    ):
        now[0] = moment.timestamp()
        await spending.settle(await spending.reserve(key="k", **call), Usage(tokens, 0))
    assert spending.book.pending("key", "k", "2036-12-05") == (0, 4321)
    assert spending.book.pending("key", "k", "2036-12-06") == (0, 320)


async def test_a_panel_seats_what_the_budget_pays_for_cheapest_first_or_by_record(runtime: Runtime) -> None:
    key = await _key(runtime)
    # Estimates of 100 + 100 tokens: dear $0.002, mid $0.0004, cheap $0.0002, free unknown.
    await set_budget(runtime.store, "key", key, "day", usd=0.0021, tokens=None)
    seats = [
        PlannedSeat(Model("dear", 10.0, 10.0)),
        PlannedSeat(Model("free", None, None)),
        PlannedSeat(Model("mid", 2.0, 2.0)),
        PlannedSeat(Model("cheap", 1.0, 1.0)),
    ]
    estimates = [(100, 100)] * 4
    paying(key)
    cheapest = Spending(runtime.store, MemoryCounters(), clock=lambda: NOON)
    applying = await cheapest.applying("")
    holds, left_off, _ = await cheapest.seat(applying, seats, estimates, collection="", order="cheapest")
    assert sorted(holds) == [1, 2, 3]
    assert [(m.alias, m.reason) for m in left_off] == [
        ("dear", f"budget: key {key} per day: $0.0015 of $0.0021 left, resets 2036-12-06T00:00:00+00:00")
    ]
    record = Spending(runtime.store, MemoryCounters(), clock=lambda: NOON)
    holds, left_off, refusals = await record.seat(applying, seats, estimates, collection="", order="record")
    assert sorted(holds) == [0, 1]
    assert [m.alias for m in left_off] == ["mid", "cheap"]
    assert all(m.reason.startswith("budget: ") for m in left_off) and len(refusals) == 2


async def test_a_panel_the_budget_pays_for_whole_is_reserved_in_one_take(
    runtime: Runtime, counters: Counters
) -> None:
    """Every seat priced: one take for the panel when the budget pays for
    all of it; when it does not, seat by seat as before, the refused take
    having counted nothing. Each seat settles at its own cost."""
    key = await _key(runtime)
    # Estimates of 100 + 100 tokens: dear $0.002, mid $0.0004, cheap $0.0002.
    await set_budget(runtime.store, "key", key, "day", usd=0.0026, tokens=None)
    await set_budget(runtime.store, "key", key, "month", usd=None, tokens=1000)
    seats = [PlannedSeat(Model("dear", 10.0, 10.0)), PlannedSeat(Model("mid", 2.0, 2.0))]
    trio = [*seats, PlannedSeat(Model("cheap", 1.0, 1.0))]
    paying(key)
    spending = Spending(runtime.store, counters, clock=lambda: NOON)
    applying = await spending.applying("")
    taken = counters.take_pairs
    takes = []

    async def counted_take(*args: object, **kwargs: object) -> int:
        takes.append(args)
        return await taken(*args, **kwargs)  # type: ignore[arg-type]

    counters.take_pairs = counted_take  # type: ignore[method-assign]
    holds, left_off, _ = await spending.seat(applying, seats, [(100, 100)] * 2, collection="", order="record")
    assert sorted(holds) == [0, 1] and not left_off and len(takes) == 1
    assert [(s.spent_nano, s.spent_tokens) for s in await spending.status()] == [(2_400_000, 400)] * 2
    await spending.settle(holds[0], Usage(100, 50))  # $0.0015
    await spending.settle(holds[1], Usage())  # failed: all of its reservation back
    assert [(s.spent_nano, s.spent_tokens) for s in await spending.status()] == [(1_500_000, 150)] * 2
    # $0.0011 left for the trio's $0.0026: the one take refused, then seat by seat, cheapest first.
    takes.clear()
    estimates = [(100, 100)] * 3
    holds, left_off, _ = await spending.seat(applying, trio, estimates, collection="", order="cheapest")
    assert sorted(holds) == [1, 2] and len(takes) == 1 + 3
    assert [(m.alias, m.reason.split(":")[1]) for m in left_off] == [("dear", f" key {key} per day")]
    assert [(s.spent_nano, s.spent_tokens) for s in await spending.status()] == [(2_100_000, 550)] * 2


async def test_unbudgeted_is_the_hold_reserve_gives_where_no_budget_applies(runtime: Runtime) -> None:
    """What a panel's seat takes when its plan found no budget (`panel/plan.py`)."""
    paying(await _key(runtime))
    spending = Spending(runtime.store, MemoryCounters(), clock=lambda: NOON)
    call = {"collection": "c", "price_in": 2.0, "price_out": 3.0}
    assert await spending.reserve(tokens_in=100, tokens_out=100, **call) == spending.unbudgeted(**call)  # type: ignore[arg-type]
