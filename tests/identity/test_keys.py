"""The key cache: requests that find it stale at once read the table once."""

from __future__ import annotations

import asyncio

import pytest
from sqlalchemy import event

from benchwarmers.identity.keys import KeyCache, create_key
from benchwarmers.runtime import Runtime

pytestmark = pytest.mark.unit


async def test_concurrent_lookups_of_a_stale_cache_read_the_keys_once(runtime: Runtime) -> None:
    _info, secret = await create_key(runtime.store, "reader", requests_per_minute=5)
    cache = KeyCache(runtime.store)
    reads: list[str] = []

    def count(_conn: object, _cursor: object, statement: str, *_rest: object) -> None:
        if "FROM gateway_keys" in statement:
            reads.append(statement)

    event.listen(runtime.store.engine.sync_engine, "before_cursor_execute", count)
    try:
        found = await asyncio.gather(*(cache.find(secret) for _ in range(10)))
        assert {key.name if key else None for key in found} == {"reader"}
        assert len(reads) == 1
        cache.forget()  # a key made or revoked here: read again at once
        await cache.find(secret)
        assert len(reads) == 2
    finally:
        event.remove(runtime.store.engine.sync_engine, "before_cursor_execute", count)
