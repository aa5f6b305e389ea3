"""Route stickiness from memory (`store/conversations.py`): a turn that
keeps its member sends no SQL; the table is the copy a restart, a
forgotten conversation and another process read; another process's change
is seen at once through Redis, and within the TTL on PostgreSQL without it."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import AsyncIterator, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import event

from benchwarmers.runtime import Runtime
from benchwarmers.store import conversations as conversations_module
from benchwarmers.store.conversations import Conversations
from benchwarmers.store.db import Store

REDIS_URL = "redis://127.0.0.1:6379/0"


@contextmanager
def statements(store: Store) -> Iterator[list[str]]:
    sent: list[str] = []

    def note(_conn: Any, _cursor: Any, statement: str, *_rest: Any) -> None:
        sent.append(statement)

    event.listen(store.engine.sync_engine, "before_cursor_execute", note)
    try:
        yield sent
    finally:
        event.remove(store.engine.sync_engine, "before_cursor_execute", note)


async def test_a_kept_member_is_read_from_memory_and_the_table_is_the_durable_copy(
    any_runtime: Runtime,
) -> None:
    store = any_runtime.store
    sticky = Conversations(store, ttl=None)
    assert await sticky.get("prompt:one") is None
    await sticky.put("prompt:one", "agents", "alpha")
    with statements(store) as sent:
        assert [await sticky.get("prompt:one") for _ in range(5)] == ["alpha"] * 5
    assert sent == []
    await sticky.put("prompt:one", "agents", "beta")  # failover: the member changes
    # A restart (a fresh map on the same store) finds it in the table, once, then in memory.
    restarted = Conversations(store, ttl=None)
    with statements(store) as sent:
        assert await restarted.get("prompt:one") == "beta"
        assert await restarted.get("prompt:one") == "beta"
    assert len(sent) == 1


async def test_the_map_is_bounded_and_a_forgotten_conversation_reads_the_table(runtime: Runtime) -> None:
    sticky = Conversations(runtime.store, size=2)
    for index in range(3):
        await sticky.put(f"prompt:{index}", "agents", f"m{index}")
    with statements(runtime.store) as sent:
        assert await sticky.get("prompt:2") == "m2"
        assert await sticky.get("prompt:1") == "m1"
    assert sent == []
    with statements(runtime.store) as sent:
        assert await sticky.get("prompt:0") == "m0"  # pushed out first, still in the table
    assert len(sent) == 1


async def test_on_postgresql_without_redis_another_replicas_change_shows_after_the_ttl(
    home: Path, shared_postgres: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    key = f"prompt:{uuid.uuid4().hex}"
    async with Runtime.open(home, shared_postgres) as one, Runtime.open(home, shared_postgres) as two:
        assert one.conversations.ttl is not None  # a replica may change a row unseen
        await one.conversations.put(key, "agents", "alpha")
        await two.conversations.put(key, "agents", "beta")
        assert await one.conversations.get(key) == "alpha"  # trusted for the TTL, as cached reads are
        later = conversations_module.time.monotonic() + one.conversations.ttl
        monkeypatch.setattr(conversations_module.time, "monotonic", lambda: later)
        assert await one.conversations.get(key) == "beta"


@pytest.fixture
async def redis_url() -> AsyncIterator[str]:
    from redis.asyncio import Redis

    client = Redis.from_url(REDIS_URL, socket_connect_timeout=0.5)
    try:
        await client.ping()
    except Exception as exc:  # whatever the reason, there is no Redis to test against
        pytest.skip(f"no Redis on 127.0.0.1:6379 ({type(exc).__name__}: {exc})")
    finally:
        await client.aclose()
    yield REDIS_URL


async def seen(sticky: Conversations, drops: int) -> None:
    """Until `sticky` has had `drops` drops from other processes (Redis delivers them in order)."""
    for _ in range(1000):
        if sticky.drops_seen >= drops:
            return
        await asyncio.sleep(0.01)
    raise AssertionError(f"{sticky.drops_seen} drops seen, not {drops}")


async def test_with_redis_a_change_in_one_process_is_dropped_by_the_others(
    shared_postgres: str, redis_url: str
) -> None:
    channel = f"bw-test:{uuid.uuid4().hex}"
    key, other = f"prompt:{uuid.uuid4().hex}", f"prompt:{uuid.uuid4().hex}"
    store_one, store_two = Store(shared_postgres), Store(shared_postgres)
    one = Conversations(store_one, redis_url, channel=channel)
    two = Conversations(store_two, redis_url, channel=channel)
    try:
        await one.start()
        await two.start()
        assert one.coherent and two.coherent and one.ttl is None
        await one.put(key, "agents", "alpha")
        await one.put(other, "agents", "gamma")
        await seen(two, drops=2)
        assert await two.get(key) == "alpha"  # read from the table once, then remembered
        assert await two.get(other) == "gamma"
        with statements(store_two) as sent:
            assert await two.get(key) == "alpha"
        assert sent == []

        await one.put(key, "agents", "beta")  # one fails over; two must not keep alpha
        await seen(two, drops=3)
        assert await two.get(key) == "beta"
        with statements(store_two) as sent:
            assert await two.get(other) == "gamma"  # what did not change stays remembered
            assert await two.get(key) == "beta"
            assert await one.get(key) == "beta"  # its own change needs no drop
        assert sent == []
    finally:
        await one.close()
        await two.close()
        await store_one.close()
        await store_two.close()


async def test_without_its_redis_subscription_every_turn_reads_the_table(runtime: Runtime) -> None:
    sticky = Conversations(runtime.store, "redis://127.0.0.1:9/0")  # nothing listens there
    try:
        await sticky.start(wait=0.2)
        assert not sticky.coherent
        await sticky.put("prompt:x", "agents", "alpha")
        with statements(runtime.store) as sent:
            assert await sticky.get("prompt:x") == "alpha"
            assert await sticky.get("prompt:x") == "alpha"
        assert len(sent) == 2
    finally:
        await sticky.close()
