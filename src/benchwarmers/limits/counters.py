"""Counters behind the limiter: one interface, kept in this process or in Redis.

Two kinds of window, each chosen for what it models:

- **Sliding** (a log of timestamped amounts over the last `span` seconds) for
  per-minute limits. Providers enforce those as rolling windows or token
  buckets, so a fixed minute would let twice the limit through around a
  minute boundary and earn a 429; the log also says exactly when room frees
  (the oldest entries age out), which is what a waiting call needs. Beside
  the log runs its total: an entry is added to it when counted and taken
  off when it ages out, so a charge costs O(1) (amortised) however many
  calls the window holds; only a refusal walks the log, to say when room
  frees. (Summing the log on every charge cost 1.3 ms at 10k entries, and a
  busy minute holds that many.)
- **Fixed** (one number that expires at a given time) for calendar windows,
  per day and per month, and for what a provider told us ("remaining N until
  T"). These reset at a known instant, which the quotas view shows, and a
  month of calls would be too long a log.
- **Pairs**: a fixed window that counts two amounts, each against its own
  limit: a budget's nano-dollars and its tokens (`spending.py`). One
  window where two fixed ones would each be looked up, checked, counted
  and corrected a call: a budgeted call's counters were most of what a
  budget costs it (docs/benchmarks.md, "Issue 41").

`take` checks every charge of a call and, only if all fit, counts them all:
all or nothing, atomically, so concurrent admits never overshoot (in this
process there is no `await` inside the check-and-count; in Redis it is one
Lua script). Times come from the caller's clock so servers sharing a Redis
agree on windows as far as their clocks agree, and tests can drive time.
"""

from __future__ import annotations

import math
from abc import ABC, abstractmethod
from array import array
from collections.abc import Iterable, Sequence
from typing import Any, NamedTuple

from benchwarmers import ids


class Charge(NamedTuple):
    """An amount counted against one limit. Exactly one of `span` (a sliding
    window's length in seconds) and `resets_at` (a fixed window's end, Unix
    time) is set. A named tuple, not a frozen dataclass: every limited call
    makes several, and a frozen dataclass sets each field through
    `object.__setattr__`, which made Charges most of what a budget costs a
    call (docs/benchmarks.md, "Issue 41")."""

    key: str
    amount: int
    limit: int
    span: float = 0.0
    resets_at: float = 0.0

    @classmethod
    def sliding(cls, key: str, amount: int, limit: int, span: float) -> Charge:
        return cls(key, amount, limit, span=span)

    @classmethod
    def fixed(cls, key: str, amount: int, limit: int, resets_at: float) -> Charge:
        return cls(key, amount, limit, resets_at=resets_at)

    @property
    def is_sliding(self) -> bool:
        return self.span > 0


# A pair's limit that is never reached: its amount counted, never refused.
UNLIMITED = 2**63 - 1


class PairCharge(NamedTuple):
    """Two amounts counted in one fixed window (`resets_at`), each against
    its own limit (`UNLIMITED`: counted, never refused)."""

    key: str
    first: int
    second: int
    first_limit: int
    second_limit: int
    resets_at: float


class Admission(NamedTuple):
    """What a take answers (a named tuple: every limited call gets one)."""

    admitted: bool
    # When refused: the earliest time worth trying again (all refused charges
    # free by then), or None when the call can never fit (amount > limit).
    frees_at: float | None = None
    # The charge that refused it, for the message.
    blocked_by: Charge | None = None
    # When admitted: how `settle` finds what this take counted (the backend's own).
    receipt: object = None


class Counters(ABC):
    @abstractmethod
    async def take(self, charges: list[Charge], now: float) -> Admission:
        """Count all charges if every one fits, else none."""

    @abstractmethod
    async def adjust(self, charges: list[Charge], now: float) -> None:
        """Add amounts (negative to give back) without checking limits: the
        correction once a call's real token count is known."""

    async def settle(self, charges: list[Charge], receipt: object, amount: int, now: float) -> None:
        """Count `amount` in place of what each of `charges` counted when
        they were taken (`receipt` from that take): a token estimate settled
        with the real count once the reply says it, so a call is charged once.
        A sliding window's entry is corrected where it stands (it ages out
        when the call's did), unless it already aged out; a fixed counter
        moves by the difference."""
        fixed = [
            Charge(c.key, amount - c.amount, c.limit, c.span, c.resets_at)
            for c in charges
            if not c.is_sliding and amount != c.amount
        ]
        if fixed:
            await self.adjust(fixed, now)
        sliding = [c for c in charges if c.is_sliding and amount != c.amount]
        if sliding:
            await self._settle_sliding(sliding, receipt, amount, now)

    @abstractmethod
    async def _settle_sliding(self, charges: list[Charge], receipt: object, amount: int, now: float) -> None:
        """`settle` for sliding windows."""

    @abstractmethod
    async def put(
        self, key: str, used: int, resets_at: float, now: float, *, only_if_absent: bool = False
    ) -> None:
        """Set a fixed counter: what a provider says was used, or a count
        restored from the store after a restart (`only_if_absent`)."""

    @abstractmethod
    async def used(self, key: str, now: float) -> int | None:
        """A fixed counter's count now; None when it is not kept (never
        started, or its window ended)."""

    @abstractmethod
    async def take_pairs(self, charges: Sequence[PairCharge], now: float) -> int:
        """Count every pair if both amounts of each fit, else none: -1 when
        counted, else the index of the pair that refused (one over a limit
        by itself first, else the one that resets last, as `take` chooses)."""

    @abstractmethod
    async def adjust_pairs(self, windows: Sequence[PairCharge], first: int, second: int, now: float) -> None:
        """Add `first` and `second` (negative to give back) to each of the
        windows (their keys and ends: not their amounts) without checking
        limits: a settled call's correction, the same in each of its windows."""

    @abstractmethod
    async def put_pair(
        self, key: str, first: int, second: int, resets_at: float, now: float, *, only_if_absent: bool = False
    ) -> None:
        """Set a pair's counts (restored from the store: `only_if_absent`)."""

    @abstractmethod
    async def used_pair(self, key: str, now: float) -> tuple[int, int] | None:
        """A pair's counts now; None when it is not kept (never started, or its window ended)."""

    async def close(self) -> None:
        return None


def _frees_at(entries: Iterable[Sequence[Any]], used: int, charge: Charge) -> float | None:
    """When enough of a sliding log has aged out for `charge` to fit."""
    freed = 0
    for at, amount in entries:
        freed += amount
        if used - freed + charge.amount <= charge.limit:
            return float(at) + charge.span
    return None


# Aged-out entries are cut from the front of a log's arrays once this many
# have gathered and they are at least half the arrays (amortised O(1) a call).
_COMPACT_AT = 4096
# What one entry of a log holds at most either way (its array's 64 bits): a
# reply may claim any count of tokens, and a window past this is over any limit.
_MOST = 2**63 - 1


def _bounded(amount: int, most: int = _MOST) -> int:
    return amount if -most <= amount <= most else max(-most, min(amount, most))


class _SlidingLog:
    """One sliding window: its entries (times and amounts, oldest first) and
    their running total. The entries are two flat arrays, not an object
    each: a busy minute holds hundreds of thousands of them (five logs a
    configured call), and as objects (a `[time, amount]` list each) they
    were what the cyclic collector walked, in passes of up to 200 ms that
    stopped the event loop and every request on it (docs/benchmarks.md,
    issue 37, "the collector"). Entries older than `start` have aged out;
    `dropped` counts those cut from the front, so an entry's number
    (`dropped` + its index: a take's receipt) stays its own until it goes."""

    __slots__ = ("amounts", "dropped", "start", "times", "total")

    def __init__(self) -> None:
        self.times = array("d")
        self.amounts = array("q")
        self.start = 0
        self.dropped = 0
        self.total = 0

    def add(self, at: float, amount: int) -> int:
        """Append an entry; its number (for `correct`)."""
        number = self.dropped + len(self.times)
        amount = _bounded(amount)
        self.times.append(at)
        self.amounts.append(amount)
        self.total += amount
        return number

    def expire(self, span: float, now: float) -> None:
        times, horizon, start = self.times, now - span, self.start
        end = len(times)
        if start == end or times[start] > horizon:
            return  # nothing aged out (most calls of a busy window)
        amounts = self.amounts
        while start < end and times[start] <= horizon:
            self.total -= amounts[start]
            start += 1
        if start >= _COMPACT_AT and start * 2 >= end:
            del times[:start]
            del amounts[:start]
            self.dropped += start
            start = 0
        self.start = start

    def entries(self) -> Iterable[tuple[float, int]]:
        """(time, amount) of each entry in the window, oldest first."""
        return zip(self.times[self.start :], self.amounts[self.start :], strict=True)

    def correct(self, number: int, by: int, after: float) -> None:
        """Move entry `number`'s amount by `by`, if it is still kept and newer than `after`."""
        index = number - self.dropped
        if index >= self.start and self.times[index] > after:
            was = self.amounts[index]
            now = self.amounts[index] = _bounded(was + by)
            self.total += now - was


class MemoryCounters(Counters):
    """Counters of one process. Correct under concurrent coroutines because
    nothing in `take` awaits between checking and counting."""

    def __init__(self) -> None:
        self._logs: dict[str, _SlidingLog] = {}
        # Fixed windows: key -> [count, end], counted in place.
        self._fixed: dict[str, list[Any]] = {}
        # Pairs: key -> [first, second, end], counted in place.
        self._pairs: dict[str, list[Any]] = {}

    def _log(self, key: str, span: float, now: float) -> _SlidingLog:
        log = self._logs.get(key)
        if log is None:
            log = self._logs[key] = _SlidingLog()
        else:
            log.expire(span, now)
        return log

    def _fixed_used(self, key: str, now: float) -> int:
        used, until = self._fixed.get(key, (0, 0.0))
        if until <= now:
            self._fixed.pop(key, None)
            return 0
        return used

    async def take(self, charges: list[Charge], now: float) -> Admission:
        # Every limited call runs this (the key's rate, then the limiter's
        # charges): one pass checks, ageing each sliding log out once, and
        # only if all fit a second counts; fields unpacked, `is_sliding` inlined.
        refusals: list[Admission] = []
        fixed, logs = self._fixed, self._logs
        for charge in charges:
            key, amount, limit, span, resets_at = charge
            if span > 0:
                log = logs.get(key)
                if log is None:
                    log = logs[key] = _SlidingLog()
                else:
                    log.expire(span, now)
                if log.total + amount > limit:
                    refusals.append(Admission(False, _frees_at(log.entries(), log.total, charge), charge))
                continue
            found = fixed.get(key)
            used = found[0] if found is not None and found[1] > now else 0
            if used + amount > limit:
                refusals.append(Admission(False, resets_at if amount <= limit else None, charge))
        if refusals:
            return _worst_refusal(refusals)
        entries = self._count(charges, now, aged=True)
        return Admission(True, receipt=entries) if entries else _ADMITTED

    async def adjust(self, charges: list[Charge], now: float) -> None:
        self._count(charges, now)

    def _count(self, charges: list[Charge], now: float, *, aged: bool = False) -> dict[str, int]:
        """Add every charge; the sliding windows' new entries' numbers by key (a
        take's receipt). `aged`: the sliding logs were aged out at `now` already (by `take`)."""
        entries = {}
        fixed, logs = self._fixed, self._logs
        for key, amount, _limit, span, resets_at in charges:
            if span > 0:
                log = logs[key] if aged else self._log(key, span, now)
                if -_MOST <= amount <= _MOST:  # `_SlidingLog.add` inline: five a configured call
                    times = log.times
                    entries[key] = log.dropped + len(times)
                    times.append(now)
                    log.amounts.append(amount)
                    log.total += amount
                else:
                    entries[key] = log.add(now, amount)
                continue
            found = fixed.get(key)
            if found is not None and found[1] > now:
                found[0] += amount
                continue
            if found is None:  # a new window: forget the ended ones
                fixed = self._fixed = {k: v for k, v in fixed.items() if v[1] > now}
            fixed[key] = [amount, resets_at]
        return entries

    async def settle(self, charges: list[Charge], receipt: object, amount: int, now: float) -> None:
        # `Counters.settle` in one pass, as every call a token limit counted settles.
        entries = receipt if isinstance(receipt, dict) else {}
        for charge in charges:
            key, taken, _limit, span, _resets_at = charge
            if amount == taken:
                continue
            if span <= 0:
                self._count([charge._replace(amount=amount - taken)], now)
                continue
            number = entries.get(key)
            if number is not None:  # still in the window (older ones were let go)
                self._logs[key].correct(number, amount - taken, now - span)

    async def _settle_sliding(self, charges: list[Charge], receipt: object, amount: int, now: float) -> None:
        await self.settle(charges, receipt, amount, now)

    async def put(
        self, key: str, used: int, resets_at: float, now: float, *, only_if_absent: bool = False
    ) -> None:
        if resets_at <= now:
            return
        if only_if_absent:
            self._fixed_used(key, now)  # drops the counter if its window ended
            if key in self._fixed:
                return
        self._fixed[key] = [used, resets_at]

    async def used(self, key: str, now: float) -> int | None:
        self._fixed_used(key, now)  # drops the counter if its window ended
        found = self._fixed.get(key)
        return None if found is None else found[0]

    async def take_pairs(self, charges: Sequence[PairCharge], now: float) -> int:
        pairs = self._pairs
        for key, first, second, first_limit, second_limit, _ in charges:
            found = pairs.get(key)
            if found is not None and found[2] > now:
                if found[0] + first > first_limit or found[1] + second > second_limit:
                    return self._refused_pair(charges, now)
            elif first > first_limit or second > second_limit:
                return self._refused_pair(charges, now)
        for key, first, second, _first_limit, _second_limit, resets_at in charges:
            found = pairs.get(key)
            if found is not None and found[2] > now:
                found[0] += first
                found[1] += second
            else:
                self._open_pair(key, first, second, resets_at, now)
        return -1

    def _refused_pair(self, charges: Sequence[PairCharge], now: float) -> int:
        """Which pair refuses a take that does not fit (`take_pairs`)."""
        used = [self._pairs.get(c.key) for c in charges]
        return _worst_pair(charges, [(u[0], u[1]) if u is not None and u[2] > now else (0, 0) for u in used])

    async def adjust_pairs(self, windows: Sequence[PairCharge], first: int, second: int, now: float) -> None:
        pairs = self._pairs
        for window in windows:
            found = pairs.get(window[0])
            if found is not None and found[2] > now:
                found[0] += first
                found[1] += second
            else:
                self._open_pair(window[0], first, second, window[5], now)

    def _open_pair(self, key: str, first: int, second: int, resets_at: float, now: float) -> None:
        """A window counted for the first time (or again after it ended)."""
        if key not in self._pairs:  # a new window: forget the ended ones
            self._pairs = {k: v for k, v in self._pairs.items() if v[2] > now}
        if resets_at > now:
            self._pairs[key] = [first, second, resets_at]

    async def put_pair(
        self, key: str, first: int, second: int, resets_at: float, now: float, *, only_if_absent: bool = False
    ) -> None:
        if resets_at <= now:
            return
        found = self._pairs.get(key)
        if only_if_absent and found is not None and found[2] > now:
            return
        self._pairs[key] = [first, second, resets_at]

    async def used_pair(self, key: str, now: float) -> tuple[int, int] | None:
        found = self._pairs.get(key)
        return None if found is None or found[2] <= now else (found[0], found[1])


def _worst_pair(charges: Sequence[PairCharge], used: Sequence[tuple[int, int]]) -> int:
    """The pair that refuses: the first whose amount is over its limit by
    itself (it never fits), else the one that resets last; -1 when all fit."""
    worst, worst_at = -1, -1.0
    for i, (charge, (first_used, second_used)) in enumerate(zip(charges, used, strict=True)):
        _key, first, second, first_limit, second_limit, resets_at = charge
        if first_used + first <= first_limit and second_used + second <= second_limit:
            continue
        if first > first_limit or second > second_limit:
            return i
        if resets_at > worst_at:
            worst, worst_at = i, resets_at
    return worst


# An admission whose take counted no sliding window (nothing for `settle` to find), shared.
_ADMITTED = Admission(True)


def _worst_refusal(refusals: list[Admission]) -> Admission:
    """The refusal that frees last (never, if any never frees)."""
    never = [r for r in refusals if r.frees_at is None]
    if never:
        return never[0]
    return max(refusals, key=lambda r: r.frees_at or 0.0)


# ----------------------------------------------------------------------- redis

# Both scripts: KEYS two per charge, the counter and (for a sliding window)
# its running total; ARGV: now, member id, then per charge: kind ("s"|"f"),
# amount, limit, span or resets_at. A sliding log is a sorted set scored by
# time whose members carry their amount; its total is a number beside it,
# with the same expiry. `total_of` ages the log out and takes what left it
# off the total (a handful of entries a call), and counts the log whole
# only when the total is missing (a log written before totals were kept).
_SLIDING = """
local function amount_of(member) return tonumber(string.match(member, ":(-?%d+)$")) end
local function total_of(key, total_key, now, span)
  local gone = redis.call("ZRANGEBYSCORE", key, "-inf", now - span)
  local kept = redis.call("GET", total_key)
  if #gone > 0 then redis.call("ZREMRANGEBYSCORE", key, "-inf", now - span) end
  if kept then
    local total = tonumber(kept)
    for j = 1, #gone do total = total - amount_of(gone[j]) end
    if #gone > 0 then redis.call("SET", total_key, total, "KEEPTTL") end
    return total
  end
  local total = 0
  for _, member in ipairs(redis.call("ZRANGE", key, 0, -1)) do total = total + amount_of(member) end
  return total
end
local function charge_of(i)
  local base = 3 + (i - 1) * 4
  local amount, limit = tonumber(ARGV[base + 1]), tonumber(ARGV[base + 2])
  return ARGV[base], KEYS[2 * i - 1], KEYS[2 * i], amount, limit, tonumber(ARGV[base + 3])
end
local function count(now, member, used)
  for i = 1, #KEYS / 2 do
    local kind, key, total_key, amount, limit, param = charge_of(i)
    if kind == "s" then
      local ttl = math.ceil(param * 1000) + 1000
      redis.call("ZADD", key, now, member .. ":" .. amount)
      redis.call("SET", total_key, (used[i] or total_of(key, total_key, now, param)) + amount, "PX", ttl)
      redis.call("PEXPIRE", key, ttl)
    else
      redis.call("INCRBY", key, amount)
      if redis.call("PTTL", key) < 0 then redis.call("PEXPIREAT", key, math.ceil(param * 1000)) end
    end
  end
end
"""

# Returns {1} when admitted, else {0, index of the blocking charge (1-based),
# frees_at as a string or ""}. Only a refusal reads the log, to say when
# room frees.
_TAKE = (
    _SLIDING
    + """
local now = tonumber(ARGV[1])
local member = ARGV[2]
local worst_index, worst_frees, never = 0, -1, false
local used = {}
for i = 1, #KEYS / 2 do
  local kind, key, total_key, amount, limit, param = charge_of(i)
  if kind == "s" then
    used[i] = total_of(key, total_key, now, param)
    if used[i] + amount > limit then
      local entries = redis.call("ZRANGE", key, 0, -1, "WITHSCORES")
      local frees, freed = nil, 0
      for j = 1, #entries, 2 do
        freed = freed + amount_of(entries[j])
        if used[i] - freed + amount <= limit then frees = tonumber(entries[j+1]) + param; break end
      end
      if frees == nil then
        if not never then worst_index = i end
        never = true
      elseif not never and frees > worst_frees then worst_index, worst_frees = i, frees end
    end
  else
    local fixed_used = tonumber(redis.call("GET", key) or "0")
    if fixed_used + amount > limit then
      if amount > limit then
        if not never then worst_index = i end
        never = true
      elseif not never and param > worst_frees then worst_index, worst_frees = i, param end
    end
  end
end
if worst_index > 0 then
  if never then return {0, worst_index, ""} end
  return {0, worst_index, tostring(worst_frees)}
end
count(now, member, used)
return {1}
"""
)

# Adds every charge without checking limits (`adjust`); returns nothing.
_ADD = (
    _SLIDING
    + """
count(tonumber(ARGV[1]), ARGV[2], {})
"""
)

# Settles sliding charges a take counted (ARGV[2] its member id) at the
# amount ARGV[3]: the entry, if still in its window, is put back with the
# new amount at its old time, and the total moves by the difference.
_SETTLE = (
    _SLIDING
    + """
local now, member, amount = tonumber(ARGV[1]), ARGV[2], tonumber(ARGV[3])
for i = 1, #KEYS / 2 do
  local base = 4 + (i - 1) * 2
  local key, total_key = KEYS[2 * i - 1], KEYS[2 * i]
  local taken, span = tonumber(ARGV[base]), tonumber(ARGV[base + 1])
  local total = total_of(key, total_key, now, span)
  local at = redis.call("ZSCORE", key, member .. ":" .. taken)
  if at then
    local ttl = math.ceil(span * 1000) + 1000
    redis.call("ZREM", key, member .. ":" .. taken)
    redis.call("ZADD", key, at, member .. ":" .. amount)
    redis.call("SET", total_key, total + amount - taken, "PX", ttl)
    redis.call("PEXPIRE", key, ttl)
  end
end
"""
)


# Pairs: KEYS one hash per pair (fields "1" and "2", expiring when its
# window ends). Amounts go to HINCRBY as sent (a Lua number prints 1e+15).

# ARGV per pair: first, second, first limit, second limit, resets_at (ms).
# Returns 0 when counted, else the refusing pair's index (1-based), chosen as `take_pairs` says.
_TAKE_PAIRS = """
local worst, worst_at, never = 0, -1, false
for i = 1, #KEYS do
  local base = (i - 1) * 5
  local first, second = tonumber(ARGV[base + 1]), tonumber(ARGV[base + 2])
  local first_limit, second_limit = tonumber(ARGV[base + 3]), tonumber(ARGV[base + 4])
  local resets_at = tonumber(ARGV[base + 5])
  local used = redis.call("HMGET", KEYS[i], "1", "2")
  if tonumber(used[1] or "0") + first > first_limit or tonumber(used[2] or "0") + second > second_limit then
    if first > first_limit or second > second_limit then
      if not never then worst = i end
      never = true
    elseif not never and resets_at > worst_at then worst, worst_at = i, resets_at end
  end
end
if worst > 0 then return worst end
for i = 1, #KEYS do
  local base = (i - 1) * 5
  redis.call("HINCRBY", KEYS[i], "1", ARGV[base + 1])
  redis.call("HINCRBY", KEYS[i], "2", ARGV[base + 2])
  if redis.call("PTTL", KEYS[i]) < 0 then redis.call("PEXPIREAT", KEYS[i], ARGV[base + 5]) end
end
return 0
"""

# ARGV: first, second, then each window's resets_at (ms).
_ADJUST_PAIRS = """
for i = 1, #KEYS do
  redis.call("HINCRBY", KEYS[i], "1", ARGV[1])
  redis.call("HINCRBY", KEYS[i], "2", ARGV[2])
  if redis.call("PTTL", KEYS[i]) < 0 then redis.call("PEXPIREAT", KEYS[i], ARGV[2 + i]) end
end
"""

# KEYS[1] the pair; ARGV: first, second, resets_at (ms), "1" to set it only if absent.
_PUT_PAIR = """
if ARGV[4] == "1" and redis.call("EXISTS", KEYS[1]) == 1 then return 0 end
redis.call("HSET", KEYS[1], "1", ARGV[1], "2", ARGV[2])
redis.call("PEXPIREAT", KEYS[1], ARGV[3])
return 1
"""


# What an amount may be in the scripts: Lua counts in doubles and prints them
# with 14 digits ("%.14g"), so a bigger one would name its entry "<id>:1e+30",
# which no script reads back, and INCRBY refuses it. A reply may claim any
# count of tokens; one past this is over any limit anyway (as `_MOST` in memory).
_MOST_IN_LUA = 10**14 - 1


def _for_lua(amount: int) -> int:
    return _bounded(amount, _MOST_IN_LUA)


class RedisCounters(Counters):
    """Counters several servers share (`BENCHWARMERS_REDIS_URL`). A sliding
    log is a sorted set scored by time whose members carry their amount
    (`<id>:<amount>`, the id its take's, unique per call), with its running total beside
    it (`<key>:total`); a fixed counter is a number that expires when its
    window ends."""

    def __init__(self, url: str, *, prefix: str = "bw:limits:") -> None:
        from redis.asyncio import Redis

        self.prefix = prefix
        self._redis: Any = Redis.from_url(url, decode_responses=True)
        self._take = self._redis.register_script(_TAKE)
        self._add = self._redis.register_script(_ADD)
        self._settle = self._redis.register_script(_SETTLE)
        self._take_pairs = self._redis.register_script(_TAKE_PAIRS)
        self._adjust_pairs = self._redis.register_script(_ADJUST_PAIRS)
        self._put_pair = self._redis.register_script(_PUT_PAIR)

    def _key(self, key: str) -> str:
        return self.prefix + key

    def _call(self, charges: list[Charge], now: float) -> tuple[list[str], list[Any]]:
        """The scripts' KEYS and ARGV for `charges` (see `_SLIDING`)."""
        keys: list[str] = []
        argv: list[Any] = [repr(now), ids.token_hex(16)]
        for charge in charges:
            key = self._key(charge.key)
            keys += [key, key + ":total"]
            param = charge.span if charge.is_sliding else charge.resets_at
            argv += ["s" if charge.is_sliding else "f", _for_lua(charge.amount), charge.limit, repr(param)]
        return keys, argv

    async def take(self, charges: list[Charge], now: float) -> Admission:
        if not charges:
            return Admission(True)
        keys, argv = self._call(charges, now)
        result = await self._take(keys=keys, args=argv)
        if int(result[0]) == 1:
            return Admission(True, receipt=argv[1])
        frees = float(result[2]) if result[2] != "" else None
        return Admission(False, frees, charges[int(result[1]) - 1])

    async def adjust(self, charges: list[Charge], now: float) -> None:
        if charges:
            keys, argv = self._call(charges, now)
            await self._add(keys=keys, args=argv)

    async def _settle_sliding(self, charges: list[Charge], receipt: object, amount: int, now: float) -> None:
        if not isinstance(receipt, str):
            return
        keys: list[str] = []
        argv: list[Any] = [repr(now), receipt, _for_lua(amount)]
        for charge in charges:
            key = self._key(charge.key)
            keys += [key, key + ":total"]
            argv += [_for_lua(charge.amount), repr(charge.span)]
        await self._settle(keys=keys, args=argv)

    async def put(
        self, key: str, used: int, resets_at: float, now: float, *, only_if_absent: bool = False
    ) -> None:
        if resets_at > now:
            await self._redis.set(self._key(key), used, pxat=int(resets_at * 1000), nx=only_if_absent)

    async def used(self, key: str, now: float) -> int | None:
        value = await self._redis.get(self._key(key))
        return None if value is None else int(value)

    async def take_pairs(self, charges: Sequence[PairCharge], now: float) -> int:
        if not charges:
            return -1
        argv: list[Any] = []
        for _key, first, second, first_limit, second_limit, resets_at in charges:
            argv += (
                _for_lua(first),
                _for_lua(second),
                first_limit,
                second_limit,
                math.ceil(resets_at * 1000),
            )
        keys = [self.prefix + c[0] for c in charges]
        return int(await self._take_pairs(keys=keys, args=argv)) - 1

    async def adjust_pairs(self, windows: Sequence[PairCharge], first: int, second: int, now: float) -> None:
        if windows:
            keys = [self.prefix + w[0] for w in windows]
            argv = [_for_lua(first), _for_lua(second), *(math.ceil(w[5] * 1000) for w in windows)]
            await self._adjust_pairs(keys=keys, args=argv)

    async def put_pair(
        self, key: str, first: int, second: int, resets_at: float, now: float, *, only_if_absent: bool = False
    ) -> None:
        if resets_at > now:
            argv = [first, second, math.ceil(resets_at * 1000), "1" if only_if_absent else "0"]
            await self._put_pair(keys=[self._key(key)], args=argv)

    async def used_pair(self, key: str, now: float) -> tuple[int, int] | None:
        first, second = await self._redis.hmget(self._key(key), "1", "2")
        if first is None and second is None:
            return None
        return int(first or 0), int(second or 0)

    async def close(self) -> None:
        await self._redis.aclose()


def open_counters(redis_url: str | None, *, prefix: str = "bw:limits:") -> Counters:
    """Redis when a URL is set (several servers share limits), else memory."""
    return RedisCounters(redis_url, prefix=prefix) if redis_url else MemoryCounters()
