"""Shared counters that do not drift: two server processes on one Redis, an
endpoint limited by the user to N requests a minute, let exactly N calls
through between them, also when one is killed (SIGKILL) mid-window; the
refused seats are `limited`, never sent."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path

import httpx
import pytest

from benchwarmers.limits.user_limits import set_limits
from benchwarmers.runtime import REDIS_URL_ENV, Runtime
from benchwarmers.store.collections import add_collection
from benchwarmers.store.endpoints import add_endpoint
from benchwarmers.store.models import add_model
from benchwarmers.testing import FakeModel, FakeProvider

from ..server.child_server import Child

REDIS_URL = "redis://127.0.0.1:6379/0"
LIMIT = 5
ASKS = 12


@pytest.fixture
def redis_url() -> Iterator[str]:
    from redis import Redis

    redis = Redis.from_url(REDIS_URL, socket_connect_timeout=0.5)
    try:
        redis.ping()
    except Exception as exc:  # no Redis to test against, whatever the reason
        pytest.skip(f"no Redis on 127.0.0.1:6379 ({type(exc).__name__}: {exc})")
    finally:
        redis.close()
    yield REDIS_URL


async def _register(home: Path, fake: FakeProvider, endpoint: str) -> None:
    async with Runtime.open(home) as runtime:
        await add_endpoint(runtime.store, endpoint, fake.openai_base, "openai", needs_key=False)
        fake.add(FakeModel("m", answer="m answers"))
        await add_model(runtime.store, "m", endpoint, "m")
        await add_collection(runtime.store, "one", ["m"], seat_timeout=3)
        await set_limits(runtime.store, endpoint, "", {"rpm": LIMIT})


def _ask(server: Child) -> str:
    """The one seat's status: a 429 naming it `limited` is the panel's
    error when that seat was refused here (docs/api.md)."""
    body = {"model": "bench/one", "messages": [{"role": "user", "content": "hi"}]}
    reply = httpx.post(server.url + "/v1/chat/completions", json=body, timeout=30)
    if reply.status_code == 429 and "Seat 1 (m): the limit of" in reply.text:
        return "limited"
    assert reply.status_code == 200, reply.text
    [seat] = reply.json()["bench"]["seats"]
    return str(seat["status"])


@pytest.mark.parametrize("kill_one", [False, True], ids=["both-up", "one-killed"])
def test_two_processes_on_one_redis_let_exactly_the_limit_through(
    home: Path, redis_url: str, kill_one: bool, counts: Callable[[str], None]
) -> None:
    endpoint = f"shared-{uuid.uuid4().hex[:10]}"  # Redis outlives the test: counters of its own
    with FakeProvider() as fake:
        asyncio.run(_register(home, fake, endpoint))
        first, second = Child(home, **{REDIS_URL_ENV: redis_url}), Child(home, **{REDIS_URL_ENV: redis_url})
        try:
            first.launch()
            second.launch()
            first.until_serving()
            second.until_serving()
            statuses = [_ask(first), _ask(second), _ask(first)]
            if kill_one:
                first.kill()  # mid-window: what it counted must still count
            survivors = [second] if kill_one else [first, second]
            statuses += [_ask(survivors[i % len(survivors)]) for i in range(ASKS - 3)]
        finally:
            first.stop()
            second.stop()
        sent = fake.calls["m"]
    through = statuses.count("ok")
    counts(
        f"shared counters ({'one killed' if kill_one else 'both up'}): {ASKS} asks, {through} through, "
        f"{statuses.count('limited')} limited, {sent} reached the provider; limit {LIMIT}/min"
    )
    assert through == LIMIT == sent
    assert statuses.count("limited") == ASKS - LIMIT
