"""The same behaviour from both counters: in this process and in Redis."""

from __future__ import annotations

import asyncio
import gc
from collections import deque

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from benchwarmers.limits import counters as counter_module
from benchwarmers.limits.counters import (
    UNLIMITED,
    Charge,
    Counters,
    MemoryCounters,
    PairCharge,
    RedisCounters,
)

T0 = 1_800_000_000.0


async def test_sliding_window_admits_up_to_the_limit_and_says_when_room_frees(counters: Counters) -> None:
    rpm = [Charge.sliding("rpm", 1, 3, 60.0)]
    for offset in (0.0, 10.0, 20.0):
        assert (await counters.take(rpm, T0 + offset)).admitted
    refused = await counters.take(rpm, T0 + 30.0)
    assert not refused.admitted
    assert refused.frees_at == T0 + 60.0  # the oldest call ages out
    assert refused.blocked_by == rpm[0]
    assert (await counters.take(rpm, T0 + 60.0)).admitted
    assert not (await counters.take(rpm, T0 + 61.0)).admitted


async def test_tokens_free_when_enough_old_entries_age_out(counters: Counters) -> None:
    await counters.take([Charge.sliding("tpm", 400, 1000, 60.0)], T0)
    await counters.take([Charge.sliding("tpm", 400, 1000, 60.0)], T0 + 5)
    refused = await counters.take([Charge.sliding("tpm", 700, 1000, 60.0)], T0 + 10)
    assert refused.frees_at == T0 + 65.0  # both earlier entries must age out for 700 to fit
    too_big = await counters.take([Charge.sliding("tpm", 1001, 1000, 60.0)], T0 + 10)
    assert not too_big.admitted and too_big.frees_at is None


async def test_fixed_window_resets_at_its_end(counters: Counters) -> None:
    day = Charge.fixed("rpd", 1, 2, T0 + 100)
    assert (await counters.take([day], T0)).admitted
    assert (await counters.take([day], T0 + 1)).admitted
    refused = await counters.take([day], T0 + 2)
    assert not refused.admitted and refused.frees_at == T0 + 100


async def test_all_or_nothing(counters: Counters) -> None:
    roomy = Charge.sliding("roomy", 1, 100, 60.0)
    full = Charge.fixed("full", 1, 1, T0 + 50)
    assert (await counters.take([full], T0)).admitted
    refused = await counters.take([roomy, full], T0)
    assert not refused.admitted and refused.blocked_by == full
    # The refused call counted nothing against the limit that had room.
    for _ in range(100):
        assert (await counters.take([roomy], T0)).admitted
    assert not (await counters.take([roomy], T0)).admitted


async def test_the_latest_freeing_limit_decides_when_to_retry(counters: Counters) -> None:
    a = Charge.fixed("a", 1, 1, T0 + 10)
    b = Charge.fixed("b", 1, 1, T0 + 30)
    await counters.take([a, b], T0)
    refused = await counters.take([a, b], T0 + 1)
    assert refused.frees_at == T0 + 30 and refused.blocked_by == b


async def test_adjust_corrects_an_estimate_both_ways(counters: Counters) -> None:
    tpm = Charge.sliding("tpm", 500, 1000, 60.0)
    assert (await counters.take([tpm], T0)).admitted
    await counters.adjust([Charge.sliding("tpm", -400, 1000, 60.0)], T0 + 1)  # it used 100, not 500
    assert (await counters.take([Charge.sliding("tpm", 900, 1000, 60.0)], T0 + 2)).admitted
    tpd = Charge.fixed("tpd", 100, 1000, T0 + 500)
    await counters.take([tpd], T0)
    await counters.adjust([Charge.fixed("tpd", 850, 1000, T0 + 500)], T0)
    assert not (await counters.take([tpd], T0 + 1)).admitted


async def test_settle_charges_a_call_once_at_its_real_amount(counters: Counters) -> None:
    """An estimate settled in place: the window holds the real amount where
    the estimate stood, and it ages out when the admit does."""
    estimate = [
        Charge.sliding("tpm-settle", 500, 1000, 60.0),
        Charge.fixed("tpd-settle", 500, 1000, T0 + 500),
    ]
    taken = await counters.take(estimate, T0)
    assert taken.admitted
    await counters.settle(estimate, taken.receipt, 100, T0 + 30)  # it used 100, not 500
    assert (await counters.take([Charge.sliding("tpm-settle", 900, 1000, 60.0)], T0 + 31)).admitted
    refused = await counters.take([Charge.sliding("tpm-settle", 100, 1000, 60.0)], T0 + 32)
    assert not refused.admitted and refused.frees_at == T0 + 60.0  # the settled entry, at its admit's time
    assert (await counters.take([Charge.fixed("tpd-settle", 900, 1000, T0 + 500)], T0 + 33)).admitted
    assert not (await counters.take([Charge.fixed("tpd-settle", 1, 1000, T0 + 500)], T0 + 34)).admitted


async def test_an_estimate_aged_out_before_its_reply_is_left_as_it_went(counters: Counters) -> None:
    estimate = [Charge.sliding("tpm-late", 500, 1000, 60.0)]
    taken = await counters.take(estimate, T0)
    await counters.settle(estimate, taken.receipt, 900, T0 + 61)  # the reply came after the window
    assert (await counters.take([Charge.sliding("tpm-late", 1000, 1000, 60.0)], T0 + 61)).admitted


async def test_put_sets_and_restores_a_fixed_counter(counters: Counters) -> None:
    await counters.put("learned", 9, T0 + 20, T0)  # the provider says 9 of 10 are used
    assert (await counters.take([Charge.fixed("learned", 1, 10, T0 + 20)], T0)).admitted
    assert not (await counters.take([Charge.fixed("learned", 1, 10, T0 + 20)], T0)).admitted
    # A restore does not overwrite a running counter.
    await counters.put("learned", 0, T0 + 20, T0, only_if_absent=True)
    assert not (await counters.take([Charge.fixed("learned", 1, 10, T0 + 20)], T0)).admitted
    await counters.put("fresh", 5, T0 + 20, T0, only_if_absent=True)
    assert not (await counters.take([Charge.fixed("fresh", 1, 5, T0 + 20)], T0)).admitted


async def test_concurrent_takes_never_overshoot(counters: Counters) -> None:
    rpm = [Charge.sliding("busy", 1, 7, 60.0), Charge.fixed("busy-day", 1, 1000, T0 + 3600)]
    results = await asyncio.gather(*(counters.take(rpm, T0) for _ in range(50)))
    assert sum(r.admitted for r in results) == 7


async def test_a_pair_counts_both_amounts_each_against_its_limit(counters: Counters) -> None:
    """A budget's window: its USD and its tokens counted together, refused
    when either would pass its limit, nothing counted then."""
    day = T0 + 100

    def call(usd: int, tokens: int) -> list[PairCharge]:
        return [PairCharge("pair-day", usd, tokens, 10, 1000, day)]

    assert await counters.take_pairs(call(4, 100), T0) == -1
    assert await counters.take_pairs(call(4, 100), T0) == -1
    assert await counters.take_pairs(call(4, 100), T0) == 0  # $12 of $10
    assert await counters.take_pairs(call(2, 801), T0) == 0  # 1001 tokens of 1000
    assert await counters.used_pair("pair-day", T0) == (8, 200)  # the refused counted nothing
    assert await counters.take_pairs(call(2, 800), T0) == -1
    unpriced = [PairCharge("pair-day", 0, 1, UNLIMITED, 1000, day)]  # counted in tokens, whatever its USD
    assert await counters.take_pairs(unpriced, T0) == 0
    await counters.adjust_pairs(call(0, 0), -10, -1000, T0)  # the window's amounts are not counted
    assert await counters.used_pair("pair-day", T0) == (0, 0)
    assert await counters.take_pairs(unpriced, T0) == -1
    assert await counters.used_pair("never-taken", T0) is None
    month = PairCharge("pair-month", 0, 0, 10, 1000, T0 + 200)
    await counters.adjust_pairs([*call(0, 0), month], 2, 3, T0)  # a settle's correction, in each window
    assert [await counters.used_pair(k, T0) for k in ("pair-day", "pair-month")] == [(2, 4), (2, 3)]


async def test_a_budget_settled_at_more_tokens_than_a_counter_holds_is_spent_until_its_window_ends(
    counters: Counters,
) -> None:
    """A reply's claim of 10^30 tokens settled into a budget's window: it
    counts as over the limit (Redis's HINCRBY takes no such number), and the
    next window starts empty."""
    day = PairCharge("huge-day", 1, 1, 10, 1000, T0 + 100)
    assert await counters.take_pairs([day], T0) == -1
    await counters.adjust_pairs([day], 10**30, 10**30, T0 + 1)
    assert await counters.take_pairs([day], T0 + 2) == 0
    assert await counters.take_pairs([day._replace(key="huge-next")], T0 + 2) == -1


async def test_the_pair_that_refuses_is_the_one_that_never_fits_else_the_last_to_reset(
    counters: Counters,
) -> None:
    day = PairCharge("refusing-day", 1, 1, 1, 1, T0 + 10)
    month = PairCharge("refusing-month", 1, 1, 1, 1, T0 + 30)
    roomy = PairCharge("refusing-roomy", 1, 1, 100, 100, T0 + 50)
    assert await counters.take_pairs([day, month], T0) == -1
    assert await counters.take_pairs([roomy, day, month], T0) == 2
    assert await counters.take_pairs([month, day], T0) == 0
    never = PairCharge("refusing-never", 1, 5, 1, 4, T0 + 5)  # more tokens than its whole limit
    assert await counters.take_pairs([roomy, month, never], T0) == 2
    assert await counters.used_pair("refusing-roomy", T0) is None  # all or nothing


async def test_put_pair_sets_and_restores_a_pair(counters: Counters) -> None:
    await counters.put_pair("restored", 7, 70, T0 + 20, T0, only_if_absent=True)
    assert await counters.used_pair("restored", T0) == (7, 70)
    await counters.put_pair("restored", 0, 0, T0 + 20, T0, only_if_absent=True)  # running: kept
    assert await counters.take_pairs([PairCharge("restored", 3, 0, 10, 100, T0 + 20)], T0) == -1
    assert await counters.take_pairs([PairCharge("restored", 1, 0, 10, 100, T0 + 20)], T0) == 0
    await counters.put_pair("restored", 1, 2, T0 + 20, T0)
    assert await counters.used_pair("restored", T0) == (1, 2)


async def test_concurrent_pair_takes_never_overshoot(counters: Counters) -> None:
    pairs = [
        PairCharge("busy-pair", 3, 1, 20, UNLIMITED, T0 + 3600),
        PairCharge("busy-pair-2", 0, 1, 0, 9, T0 + 60),
    ]
    results = await asyncio.gather(*(counters.take_pairs(pairs, T0) for _ in range(50)))
    assert results.count(-1) == 6 and await counters.used_pair("busy-pair", T0) == (18, 6)


async def test_a_pair_window_ends_at_its_reset() -> None:
    counters = MemoryCounters()
    assert await counters.take_pairs([PairCharge("ends", 5, 5, 5, 5, T0 + 10)], T0) == -1
    assert await counters.take_pairs([PairCharge("ends", 5, 5, 5, 5, T0 + 10)], T0 + 9) == 0
    assert await counters.used_pair("ends", T0 + 10) is None
    assert await counters.take_pairs([PairCharge("ends", 5, 5, 5, 5, T0 + 20)], T0 + 10) == -1


async def test_two_redis_clients_share_one_limit(redis_counters: RedisCounters) -> None:
    """Two servers on one Redis: what one counts, the other sees."""
    other = RedisCounters("redis://127.0.0.1:6379/0", prefix=redis_counters.prefix)
    try:
        rpm = [Charge.sliding("shared", 1, 4, 60.0)]
        results = await asyncio.gather(
            *(c.take(rpm, T0) for c in [redis_counters, other] * 5),
        )
        assert sum(r.admitted for r in results) == 4
    finally:
        await other.close()


async def test_a_redis_log_without_its_running_total_is_counted_whole(redis_counters: RedisCounters) -> None:
    """A log written before totals were kept (or whose total was evicted)
    is summed once, then kept as a running total."""
    rpm = [Charge.sliding("legacy", 1, 3, 60.0)]
    assert (await redis_counters.take(rpm, T0)).admitted
    assert (await redis_counters.take(rpm, T0 + 1)).admitted
    await redis_counters._redis.delete(redis_counters.prefix + "legacy:total")
    assert (await redis_counters.take(rpm, T0 + 2)).admitted
    refused = await redis_counters.take(rpm, T0 + 3)
    assert not refused.admitted and refused.frees_at == T0 + 60.0
    assert await redis_counters._redis.get(redis_counters.prefix + "legacy:total") == "3"


async def test_a_long_busy_window_keeps_its_total_as_entries_age_out(counters: Counters) -> None:
    """A call every second for three windows: the total follows entries in
    and out, so the window holds exactly its limit once full (no room lost,
    none overshot) however long it runs."""
    limit, span = 150, 200.0
    admitted: list[float] = []
    for tick in range(600):
        now = T0 + tick
        if (await counters.take([Charge.sliding("busy-long", 1, limit, span)], now)).admitted:
            admitted.append(now)
        in_window = sum(1 for at in admitted if at > now - span)
        assert in_window == min(tick + 1, limit)


async def test_a_busy_minute_adds_nothing_for_the_collector_to_walk() -> None:
    """A minute of a busy gateway is a few hundred thousand entries in the
    logs; as objects the cyclic collector tracked they made its passes stop
    the event loop for up to 200 ms (docs/benchmarks.md, issue 37)."""
    counters = MemoryCounters()
    tpm = Charge.sliding("busy-tpm", 30, 2_000_000_000, 60.0)
    await counters.take([tpm], T0)
    gc.collect()
    before = len(gc.get_objects())
    for call in range(20_000):
        taken = await counters.take([tpm], T0 + call * 0.001)
        await counters.settle([tpm], taken.receipt, 12, T0 + call * 0.001)
    gc.collect()
    assert len(gc.get_objects()) - before < 1000


async def test_a_charge_that_fits_never_walks_a_full_window(monkeypatch: pytest.MonkeyPatch) -> None:
    """Issue 37: a limit costs O(1) a call however full its minute is. With
    50,000 calls in the window, takes that fit and their settles run with
    the log's walk (its entries, `_frees_at`) made to fail: only a refusal
    may walk it, to say when room frees."""
    counters = MemoryCounters()
    rpm, tpm = Charge.sliding("o1-rpm", 1, 10**9, 60.0), Charge.sliding("o1-tpm", 500, 10**12, 60.0)
    for call in range(50_000):
        await counters.take([rpm, tpm], T0 + call * 0.0001)

    def walked(*_: object) -> None:
        raise AssertionError("an admitted charge walked the window")

    monkeypatch.setattr(counter_module, "_frees_at", walked)
    monkeypatch.setattr(counter_module._SlidingLog, "entries", walked)
    now = T0 + 5.0
    for call in range(1000):
        taken = await counters.take([rpm, tpm], now + call * 0.0001)
        assert taken.admitted
        await counters.settle([tpm], taken.receipt, 30, now + call * 0.0001)


async def test_redis_charges_that_fit_read_no_window_whole(redis_counters: RedisCounters) -> None:
    """The same in Redis: with 5,000 calls in the window, 300 takes that fit
    and their settles send no ZRANGE (the whole-window read that made a call
    cost O(calls in the minute)); Redis counts each command a script runs.
    Another client's refusals meanwhile add a few, never one per take."""
    rpm, tpm = Charge.sliding("o1-rpm", 1, 10**9, 60.0), Charge.sliding("o1-tpm", 500, 10**12, 60.0)
    redis = redis_counters._redis
    for call in range(5_000):
        await redis_counters.take([rpm, tpm], T0 + call * 0.001)

    async def zranges() -> int:
        stats = await redis.info("commandstats")
        return int(stats.get("cmdstat_zrange", {}).get("calls", 0))

    before = await zranges()
    now = T0 + 6.0
    for call in range(300):
        taken = await redis_counters.take([rpm, tpm], now + call * 0.001)
        assert taken.admitted
        await redis_counters.settle([tpm], taken.receipt, 30, now + call * 0.001)
    assert await zranges() - before < 100


async def test_a_log_cut_at_its_front_as_it_ages_keeps_exact_counts_and_settles() -> None:
    """Ten windows' worth of calls through one log, every estimate (2)
    settled at the real amount (1) a moment later: through the cuts of its
    aged-out front, the window admits exactly what a log kept whole would,
    and each settle corrects its own entry."""
    counters = MemoryCounters()
    span, limit, step = 1.0, 1000, 0.0004
    admitted: deque[tuple[float, int]] = deque()  # what the window should hold: (time, amount)
    pending: list[tuple[object, int]] = []  # receipts to settle, and where their entry is in `admitted`
    in_window, first = 0, 0  # the reference's total and how many of `admitted` have aged out
    oldest: object = None
    for call in range(30_000):
        now = T0 + call * step
        while first < len(admitted) and admitted[first][0] <= now - span:
            in_window -= admitted[first][1]
            first += 1
        estimate = [Charge.sliding("cut", 2, limit, span)]
        taken = await counters.take(estimate, now)
        assert taken.admitted == (in_window + 2 <= limit)
        if taken.admitted:
            admitted.append((now, 2))
            in_window += 2
            pending.append((taken.receipt, len(admitted) - 1))
            oldest = oldest or taken.receipt
        if len(pending) > 3:  # replies come back a few calls later
            receipt, index = pending.pop(0)
            await counters.settle(estimate, receipt, 1, now)
            if index >= first:
                admitted[index] = (admitted[index][0], 1)
                in_window -= 1
    assert call * step > 10 * span
    # A reply to the very first call, long after its entry was cut: nothing to correct.
    await counters.settle([Charge.sliding("cut", 2, limit, span)], oldest, limit, now)
    assert (await counters.take([Charge.sliding("cut", limit - in_window, limit, span)], now)).admitted


@settings(max_examples=150, deadline=None)
@given(
    limit=st.integers(min_value=1, max_value=20),
    calls=st.lists(
        st.tuples(
            st.floats(min_value=0, max_value=5, allow_nan=False), st.integers(min_value=1, max_value=8)
        ),
        min_size=1,
        max_size=60,
    ),
)
async def test_a_sliding_window_never_holds_more_than_its_limit_and_frees_when_it_says(
    limit: int, calls: list[tuple[float, int]]
) -> None:
    counters = MemoryCounters()
    span, now = 10.0, T0
    admitted: list[tuple[float, int]] = []
    for gap, amount in calls:
        now += gap
        result = await counters.take([Charge.sliding("k", amount, limit, span)], now)
        if result.admitted:
            admitted.append((now, amount))
            assert sum(a for t, a in admitted if t > now - span) <= limit
        elif amount > limit:
            assert result.frees_at is None
        else:
            assert result.frees_at is not None and now < result.frees_at <= now + span
            # Room is there at the time it names (and not a moment before it is needed).
            in_window = sum(a for t, a in admitted if t > result.frees_at - span)
            assert in_window + amount <= limit


async def test_a_reply_claiming_more_tokens_than_a_log_entry_holds_fills_the_window_until_it_ages(
    counters: Counters,
) -> None:
    """A provider may report any count of tokens; settled, it fills the
    window (over any limit) and ages out with its call, and nothing fails:
    in memory, where an entry is 64 bits (`_SlidingLog`), on the workers'
    service and in Redis, whose scripts count in doubles."""
    tpm = [Charge.sliding("tpm-huge", 500, 1000, 60.0)]
    taken = await counters.take(tpm, T0)
    await counters.settle(tpm, taken.receipt, 10**30, T0 + 1)
    assert not (await counters.take([Charge.sliding("tpm-huge", 1, 1000, 60.0)], T0 + 2)).admitted
    assert (await counters.take([Charge.sliding("tpm-huge", 1000, 1000, 60.0)], T0 + 60)).admitted
