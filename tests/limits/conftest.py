"""Counters for the limits tests: the in-process ones, and Redis on
127.0.0.1:6379 under a prefix unique to the test, removed afterwards; and
the fake provider."""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import pytest

from benchwarmers.limits.counters import Counters, MemoryCounters, RedisCounters

REDIS_URL = "redis://127.0.0.1:6379/0"


@asynccontextmanager
async def redis_under_a_test_prefix() -> AsyncIterator[RedisCounters]:
    from redis.asyncio import Redis

    client = Redis.from_url(REDIS_URL, socket_connect_timeout=0.5)
    try:
        await client.ping()
    except Exception as exc:  # whatever the reason, there is no Redis to test against
        pytest.skip(f"no Redis on 127.0.0.1:6379 ({type(exc).__name__}: {exc})")
    finally:
        await client.aclose()
    prefix = f"bw-test:{uuid.uuid4().hex}:"
    counters = RedisCounters(REDIS_URL, prefix=prefix)
    try:
        yield counters
    finally:
        keys = [key async for key in counters._redis.scan_iter(match=prefix + "*")]
        if keys:
            await counters._redis.delete(*keys)
        await counters.close()


@pytest.fixture
async def redis_counters() -> AsyncIterator[RedisCounters]:
    async with redis_under_a_test_prefix() as counters:
        yield counters


@pytest.fixture(params=["memory", "redis"])
async def counters(request: pytest.FixtureRequest) -> AsyncIterator[Counters]:
    if request.param == "memory":
        yield MemoryCounters()
    else:
        async with redis_under_a_test_prefix() as redis:
            yield redis
