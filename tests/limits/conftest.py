"""Counters for the limits tests: the in-process ones, Redis on
127.0.0.1:6379 under a prefix unique to the test, removed afterwards, and
the supervisor's service of `serve --workers` (`limits/shared.py`) on a
Unix socket; and
`bench`, two models on an endpoint nothing answers (limits are decided
before a call goes)."""

from __future__ import annotations

import shutil
import tempfile
import uuid
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager

import pytest

from benchwarmers.limits.counters import Counters, MemoryCounters, RedisCounters
from benchwarmers.limits.shared import CounterService, SocketCounters
from benchwarmers.runtime import Runtime
from benchwarmers.store.endpoints import add_endpoint
from benchwarmers.store.models import add_model

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


@pytest.fixture
def counter_service() -> Iterator[CounterService]:
    """The service listening in its own thread, on a short path (a Unix socket's is bounded)."""
    folder = tempfile.mkdtemp(prefix="bw-counters-")
    service = CounterService(f"{folder}/counters")
    service.start()
    try:
        yield service
    finally:
        service.stop()
        shutil.rmtree(folder, ignore_errors=True)


@pytest.fixture(params=["memory", "redis", "shared"])
async def counters(request: pytest.FixtureRequest) -> AsyncIterator[Counters]:
    if request.param == "memory":
        yield MemoryCounters()
    elif request.param == "redis":
        async with redis_under_a_test_prefix() as redis:
            yield redis
    else:
        service = request.getfixturevalue("counter_service")
        client = SocketCounters(service.path)
        try:
            yield client
        finally:
            await client.close()


@pytest.fixture
async def bench(runtime: Runtime) -> Runtime:
    await add_endpoint(runtime.store, "fake", "http://127.0.0.1:9/v1", "openai")
    await add_model(runtime.store, "one", "fake", "model-one")
    await add_model(runtime.store, "two", "fake", "model-two")
    return runtime
