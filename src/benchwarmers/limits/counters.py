"""Counters behind the limiter: one interface, kept in this process or in Redis.

Two kinds of window, each chosen for what it models:

- **Sliding** (a log of timestamped amounts over the last `span` seconds) for
  per-minute limits. Providers enforce those as rolling windows or token
  buckets, so a fixed minute would let twice the limit through around a
  minute boundary and earn a 429; the log also says exactly when room frees
  (the oldest entries age out), which is what a waiting call needs. A
  minute's log holds one entry per call, so it stays small.
- **Fixed** (one number that expires at a given time) for calendar windows,
  per day and per month, and for what a provider told us ("remaining N until
  T"). These reset at a known instant, which the quotas view shows, and a
  month of calls would be too long a log.

`take` checks every charge of a call and, only if all fit, counts them all:
all or nothing, atomically, so concurrent admits never overshoot (in this
process there is no `await` inside the check-and-count; in Redis it is one
Lua script). Times come from the caller's clock so servers sharing a Redis
agree on windows as far as their clocks agree, and tests can drive time.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections import deque
from dataclasses import dataclass
from typing import Any

from benchwarmers import ids


@dataclass(frozen=True, slots=True)
class Charge:
    """An amount counted against one limit. Exactly one of `span` (a sliding
    window's length in seconds) and `resets_at` (a fixed window's end, Unix
    time) is set."""

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


@dataclass(frozen=True, slots=True)
class Admission:
    admitted: bool
    # When refused: the earliest time worth trying again (all refused charges
    # free by then), or None when the call can never fit (amount > limit).
    frees_at: float | None = None
    # The charge that refused it, for the message.
    blocked_by: Charge | None = None


class Counters(ABC):
    @abstractmethod
    async def take(self, charges: list[Charge], now: float) -> Admission:
        """Count all charges if every one fits, else none."""

    @abstractmethod
    async def adjust(self, charges: list[Charge], now: float) -> None:
        """Add amounts (negative to give back) without checking limits: the
        correction once a call's real token count is known."""

    @abstractmethod
    async def put(
        self, key: str, used: int, resets_at: float, now: float, *, only_if_absent: bool = False
    ) -> None:
        """Set a fixed counter: what a provider says was used, or a count
        restored from the store after a restart (`only_if_absent`)."""

    async def close(self) -> None:
        return None


def _frees_at(entries: list[tuple[float, int]], used: int, charge: Charge) -> float | None:
    """When enough of a sliding log has aged out for `charge` to fit."""
    freed = 0
    for at, amount in entries:
        freed += amount
        if used - freed + charge.amount <= charge.limit:
            return at + charge.span
    return None


class MemoryCounters(Counters):
    """Counters of one process. Correct under concurrent coroutines because
    nothing in `take` awaits between checking and counting."""

    def __init__(self) -> None:
        self._logs: dict[str, deque[tuple[float, int]]] = {}
        self._fixed: dict[str, tuple[int, float]] = {}

    def _log(self, key: str, span: float, now: float) -> deque[tuple[float, int]]:
        log = self._logs.setdefault(key, deque())
        while log and log[0][0] <= now - span:
            log.popleft()
        return log

    def _fixed_used(self, key: str, now: float) -> int:
        used, until = self._fixed.get(key, (0, 0.0))
        if until <= now:
            self._fixed.pop(key, None)
            return 0
        return used

    async def take(self, charges: list[Charge], now: float) -> Admission:
        refusal = _worst_refusal(self._refusals(charges, now))
        if refusal is not None:
            return refusal
        await self.adjust(charges, now)
        return Admission(True)

    def _refusals(self, charges: list[Charge], now: float) -> list[Admission]:
        refusals = []
        for charge in charges:
            if charge.is_sliding:
                log = self._log(charge.key, charge.span, now)
                used = sum(amount for _, amount in log)
                if used + charge.amount > charge.limit:
                    refusals.append(Admission(False, _frees_at(list(log), used, charge), charge))
            elif self._fixed_used(charge.key, now) + charge.amount > charge.limit:
                frees = charge.resets_at if charge.amount <= charge.limit else None
                refusals.append(Admission(False, frees, charge))
        return refusals

    async def adjust(self, charges: list[Charge], now: float) -> None:
        for charge in charges:
            if charge.is_sliding:
                self._log(charge.key, charge.span, now).append((now, charge.amount))
            else:
                if charge.key not in self._fixed:  # a new window: forget the ended ones
                    self._fixed = {k: v for k, v in self._fixed.items() if v[1] > now}
                used = self._fixed_used(charge.key, now)
                until = self._fixed.get(charge.key, (0, charge.resets_at))[1]
                self._fixed[charge.key] = (used + charge.amount, until)

    async def put(
        self, key: str, used: int, resets_at: float, now: float, *, only_if_absent: bool = False
    ) -> None:
        if resets_at <= now:
            return
        if only_if_absent:
            self._fixed_used(key, now)  # drops the counter if its window ended
            if key in self._fixed:
                return
        self._fixed[key] = (used, resets_at)


def _worst_refusal(refusals: list[Admission]) -> Admission | None:
    """The refusal that frees last (never, if any never frees)."""
    if not refusals:
        return None
    never = [r for r in refusals if r.frees_at is None]
    if never:
        return never[0]
    return max(refusals, key=lambda r: r.frees_at or 0.0)


# ----------------------------------------------------------------------- redis

# KEYS: one per charge. ARGV: now, member id, then per charge: kind ("s"|"f"),
# amount, limit, span or resets_at. Returns {1} when admitted, else
# {0, index of the blocking charge (1-based), frees_at as a string or ""}.
_TAKE = """
local now = tonumber(ARGV[1])
local member = ARGV[2]
local worst_index, worst_frees, never = 0, -1, false
local function charge_of(i)
  local base = 3 + (i - 1) * 4
  local amount, limit = tonumber(ARGV[base + 1]), tonumber(ARGV[base + 2])
  return ARGV[base], KEYS[i], amount, limit, tonumber(ARGV[base + 3])
end
for i = 1, #KEYS do
  local kind, key, amount, limit, param = charge_of(i)
  if kind == "s" then
    redis.call("ZREMRANGEBYSCORE", key, "-inf", now - param)
    local entries = redis.call("ZRANGE", key, 0, -1, "WITHSCORES")
    local used = 0
    for j = 1, #entries, 2 do
      used = used + tonumber(string.match(entries[j], ":(-?%d+)$"))
    end
    if used + amount > limit then
      local frees, freed = nil, 0
      for j = 1, #entries, 2 do
        freed = freed + tonumber(string.match(entries[j], ":(-?%d+)$"))
        if used - freed + amount <= limit then frees = tonumber(entries[j+1]) + param; break end
      end
      if frees == nil then
        if not never then worst_index = i end
        never = true
      elseif not never and frees > worst_frees then worst_index, worst_frees = i, frees end
    end
  else
    local used = tonumber(redis.call("GET", key) or "0")
    if used + amount > limit then
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
for i = 1, #KEYS do
  local kind, key, amount, limit, param = charge_of(i)
  if kind == "s" then
    redis.call("ZADD", key, now, member .. ":" .. i .. ":" .. amount)
    redis.call("PEXPIRE", key, math.ceil(param * 1000) + 1000)
  else
    redis.call("INCRBY", key, amount)
    if redis.call("PTTL", key) < 0 then redis.call("PEXPIREAT", key, math.ceil(param * 1000)) end
  end
end
return {1}
"""


class RedisCounters(Counters):
    """Counters several servers share (`BENCHWARMERS_REDIS_URL`). A sliding
    log is a sorted set scored by time whose members carry their amount
    (`<id>:<n>:<amount>`, unique per call); a fixed counter is a number that
    expires when its window ends."""

    def __init__(self, url: str, *, prefix: str = "bw:limits:") -> None:
        from redis.asyncio import Redis

        self.prefix = prefix
        self._redis: Any = Redis.from_url(url, decode_responses=True)
        self._take = self._redis.register_script(_TAKE)

    def _key(self, key: str) -> str:
        return self.prefix + key

    async def take(self, charges: list[Charge], now: float) -> Admission:
        if not charges:
            return Admission(True)
        argv: list[Any] = [repr(now), ids.token_hex(16)]
        for charge in charges:
            param = charge.span if charge.is_sliding else charge.resets_at
            argv += ["s" if charge.is_sliding else "f", charge.amount, charge.limit, repr(param)]
        result = await self._take(keys=[self._key(c.key) for c in charges], args=argv)
        if int(result[0]) == 1:
            return Admission(True)
        frees = float(result[2]) if result[2] != "" else None
        return Admission(False, frees, charges[int(result[1]) - 1])

    async def adjust(self, charges: list[Charge], now: float) -> None:
        async with self._redis.pipeline(transaction=True) as pipe:
            for index, charge in enumerate(charges):
                key = self._key(charge.key)
                if charge.is_sliding:
                    pipe.zadd(key, {f"{ids.token_hex(16)}:{index}:{charge.amount}": now})
                    pipe.pexpire(key, int(charge.span * 1000) + 1000)
                else:
                    pipe.incrby(key, charge.amount)
                    pipe.pexpireat(key, int(charge.resets_at * 1000))
            await pipe.execute()

    async def put(
        self, key: str, used: int, resets_at: float, now: float, *, only_if_absent: bool = False
    ) -> None:
        if resets_at > now:
            await self._redis.set(self._key(key), used, pxat=int(resets_at * 1000), nx=only_if_absent)

    async def close(self) -> None:
        await self._redis.aclose()


def open_counters(redis_url: str | None, *, prefix: str = "bw:limits:") -> Counters:
    """Redis when a URL is set (several servers share limits), else memory."""
    return RedisCounters(redis_url, prefix=prefix) if redis_url else MemoryCounters()
