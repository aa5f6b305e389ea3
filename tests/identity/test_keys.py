"""The key cache (requests that find it stale at once read the table once;
a key made elsewhere is known at once), expiry and rotation with grace."""

from __future__ import annotations

import asyncio
import math
import time
from datetime import UTC, datetime, timedelta

import pytest
from sqlalchemy import event

from benchwarmers.errors import Conflict, NotFound, UserError
from benchwarmers.identity import keys as keys_module
from benchwarmers.identity.keys import (
    MISS_RELOAD_AFTER,
    SECRET_PREFIX,
    KeyCache,
    create_key,
    hash_secret,
    keys_by_hash,
    revoke_key,
    rotate_key,
    set_expiry,
)
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


async def test_a_table_in_use_is_read_again_behind_the_requests(runtime: Runtime) -> None:
    """Past three quarters of its time to live, a lookup answers from the
    table it has and a read starts behind it: no request waits for it."""
    _info, secret = await create_key(runtime.store, "busy")
    cache = KeyCache(runtime.store, ttl=10)
    reads: list[str] = []

    def count(_conn: object, _cursor: object, statement: str, *_rest: object) -> None:
        if "FROM gateway_keys" in statement:
            reads.append(statement)

    await cache.find(secret)
    event.listen(runtime.store.engine.sync_engine, "before_cursor_execute", count)
    try:
        cache._loaded_at -= 8  # 0.8 of its time to live
        found = await cache.find(secret)
        assert found is not None and found.name == "busy" and not reads
        behind = cache._behind
        assert behind is not None
        assert await cache.find(secret) is found and cache._behind is behind  # one read behind, not one each
        await behind
        assert len(reads) == 1 and cache._behind is None
        assert time.monotonic() - cache._loaded_at < 8  # read again
    finally:
        event.remove(runtime.store.engine.sync_engine, "before_cursor_execute", count)


async def test_a_read_begun_before_a_key_changed_here_is_not_kept(
    runtime: Runtime, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A key revoked here (`forget`) while a read of the table is under way:
    that read's table, from before the revocation, is not kept, so the next
    lookup reads again and the key is refused."""
    _info, secret = await create_key(runtime.store, "leaving")
    cache = KeyCache(runtime.store)
    read, hold = asyncio.Event(), asyncio.Event()
    real = keys_module.keys_by_hash

    async def slow(store: object) -> dict[str, keys_module.KeyInfo]:
        keys = await real(runtime.store)
        read.set()
        await hold.wait()
        return keys

    monkeypatch.setattr(keys_module, "keys_by_hash", slow)
    lookup = asyncio.create_task(cache.find(secret))
    await read.wait()  # the table was read, the key still working in it
    await revoke_key(runtime.store, "leaving")
    cache.forget()
    hold.set()
    await lookup
    monkeypatch.setattr(keys_module, "keys_by_hash", real)
    found = await cache.find(secret)
    assert found is not None and not found.works(datetime.now(UTC).timestamp())


async def test_rotation_keeps_the_key_and_gives_the_old_secret_its_grace(runtime: Runtime) -> None:
    now = datetime.now(UTC)
    expires = now + timedelta(days=30)
    _, old_secret = await create_key(
        runtime.store, "ci", collections=("trio",), requests_per_minute=7, expires_at=expires
    )
    new, old, new_secret = await rotate_key(runtime.store, "ci", 3600, now=now)
    assert new_secret != old_secret and new_secret.startswith(SECRET_PREFIX)
    assert (new.name, new.collections, new.requests_per_minute, new.expires_at) == (
        "ci",
        ("trio",),
        7,
        expires,
    )
    assert old.name == "ci" and old.rotated_at == now and old.revoked_at == now + timedelta(hours=1)
    known = await keys_by_hash(runtime.store)
    before, after = known[hash_secret(old_secret)], known[hash_secret(new_secret)]
    assert before.works(now.timestamp() + 3599) and not before.works(now.timestamp() + 3600)
    assert after.works(now.timestamp() + 3600)
    assert "rotated on" in (before.refusal(now.timestamp() + 3600) or "")
    assert old_secret not in (before.refusal(now.timestamp() + 3600) or "")
    assert after.refusal(expires.timestamp()) is not None and "expired on" in after.refusal(
        expires.timestamp()
    )
    # A revocation ends the old secret's grace too.
    await revoke_key(runtime.store, "ci")
    ended = (await keys_by_hash(runtime.store))[hash_secret(old_secret)]
    assert not ended.works(datetime.now(UTC).timestamp() + 1)


async def test_a_zero_grace_ends_the_old_secret_now_and_mistakes_change_nothing(runtime: Runtime) -> None:
    _, old_secret = await create_key(runtime.store, "now")
    await rotate_key(runtime.store, "now", 0)
    old = (await keys_by_hash(runtime.store))[hash_secret(old_secret)]
    assert not old.works(datetime.now(UTC).timestamp())
    with pytest.raises(UserError):
        await rotate_key(runtime.store, "now", -1)
    with pytest.raises(NotFound):
        await rotate_key(runtime.store, "nobody", 0)
    await revoke_key(runtime.store, "now")
    with pytest.raises(Conflict):
        await rotate_key(runtime.store, "now", 0)
    with pytest.raises(Conflict):
        await set_expiry(runtime.store, "now", None)


async def test_an_expiry_is_changed_and_an_expired_key_is_not_rotated(runtime: Runtime) -> None:
    soon = datetime.now(UTC) + timedelta(minutes=1)
    await create_key(runtime.store, "short", expires_at=soon)
    later = soon + timedelta(days=1)
    assert (await set_expiry(runtime.store, "short", later)).expires_at == later
    assert (await set_expiry(runtime.store, "short", None)).ends == math.inf
    await set_expiry(runtime.store, "short", soon)
    with pytest.raises(Conflict, match="expired on"):
        await rotate_key(runtime.store, "short", 0, now=soon + timedelta(seconds=1))


async def test_a_key_made_or_rotated_elsewhere_is_known_at_once(runtime: Runtime) -> None:
    """Another worker's cache read the table before the key existed: an
    unknown `bw-` secret reads it again (at most every MISS_RELOAD_AFTER),
    where a made-up secret of another shape never does."""
    cache = KeyCache(runtime.store, ttl=3600)
    assert await cache.find("sk-placeholder") is None
    _, secret = await create_key(runtime.store, "elsewhere")
    cache._loaded_at -= MISS_RELOAD_AFTER  # the half second since its read
    found = await cache.find(secret)
    assert found is not None and found.name == "elsewhere"
    _, _, rotated = await rotate_key(runtime.store, "elsewhere", 0)
    cache._loaded_at -= MISS_RELOAD_AFTER
    assert (await cache.find(rotated)) is not None
    assert not (await cache.find(secret) or found).works(datetime.now(UTC).timestamp())


async def test_unknown_secrets_reload_the_table_at_most_every_so_often(runtime: Runtime) -> None:
    cache = KeyCache(runtime.store, ttl=3600)
    reads: list[str] = []

    def count(_conn: object, _cursor: object, statement: str, *_rest: object) -> None:
        if "FROM gateway_keys" in statement:
            reads.append(statement)

    await cache.find("bw-first")
    event.listen(runtime.store.engine.sync_engine, "before_cursor_execute", count)
    try:
        for attempt in range(50):
            await cache.find(f"bw-made-up-{attempt}")
        assert len(reads) <= 1  # within MISS_RELOAD_AFTER of the first read: none, or one at most
    finally:
        event.remove(runtime.store.engine.sync_engine, "before_cursor_execute", count)
