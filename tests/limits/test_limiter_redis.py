"""The limiter's counters in Redis: two servers share one limit, and the
runtime counts in Redis when told to."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from benchwarmers.limits.counters import MemoryCounters, RedisCounters
from benchwarmers.limits.enforce import Limiter
from benchwarmers.limits.user_limits import set_limits
from benchwarmers.runtime import REDIS_URL_ENV, Runtime

from .conftest import REDIS_URL
from .test_limiter import outcomes


async def test_two_servers_on_one_redis_share_the_limits(
    bench: Runtime, redis_counters: RedisCounters
) -> None:
    await set_limits(bench.store, "fake", "", {"rpm": 3, "rpd": 100})
    other = RedisCounters(REDIS_URL, prefix=redis_counters.prefix)
    servers = [Limiter(bench.store, redis_counters), Limiter(bench.store, other)]
    try:
        admitted = await asyncio.gather(*(outcomes(servers[n % 2], "model-one", 1) for n in range(10)))
        assert sum(sum(a) for a in admitted) == 3
    finally:
        await other.close()


async def test_the_runtime_uses_redis_when_told(home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(REDIS_URL_ENV, REDIS_URL)
    async with Runtime.open(home=home) as runtime:
        assert isinstance(runtime.counters, RedisCounters)
        assert runtime.limiter.counters is runtime.counters
    monkeypatch.delenv(REDIS_URL_ENV)
    async with Runtime.open(home=home) as runtime:
        assert isinstance(runtime.counters, MemoryCounters)
