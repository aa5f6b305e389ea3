"""Gateway keys: who may call the gateway, which collections, how often.

A key is shown once, when it is made, and never again: the store keeps only
its SHA-256 (to recognise it) and its first characters (so a list can tell
keys apart). Keys are high-entropy random tokens, so a plain hash is the
right tool (a slow password hash buys nothing and costs every request).

Revoked keys stay in the table (hash and all), so a revoked key is told
apart from one we never made: on loopback without required keys an unknown
key is the local owner (clients insist on sending some key), but a revoked
one is refused. Reusing a revoked key's name therefore keeps the old row,
renamed `<name>@<id>` (`@` is never in a name we accept); a list shows it
under its old name, revoked.

A key may expire (`expires_at`, set at `key add --expires` and changed with
`key set`), and `key rotate` replaces its secret: the old row is retired the
same way (renamed, `rotated_at` set) with `revoked_at` at the end of the
grace period the owner chose, and a new row takes the name, scope, rate and
expiry. So one moment, `KeyInfo.ends`, says when any secret stops working,
and the guard compares it with the clock: no read of the store per request.

Lookups go through `KeyCache`, which reloads the (small) table at most every
few seconds: a request costs one hash and a dict lookup, a revocation takes
effect at once in this process and within `KeyCache.ttl` in other replicas
(workers, replicas on PostgreSQL). A secret the cache does not know but that
looks like ours (`bw-`) reloads it sooner, at most every `MISS_RELOAD_AFTER`
seconds, so a key made or rotated by another process works there at once
without letting made-up keys read the table on every request.
"""

from __future__ import annotations

import asyncio
import hashlib
import logging
import math
import re
import secrets
import time
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta

from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession

from benchwarmers.config import tunables
from benchwarmers.errors import Conflict, NotFound, UserError
from benchwarmers.identity.expiry import show
from benchwarmers.store.changes import REFRESH_AHEAD
from benchwarmers.store.db import Store
from benchwarmers.store.schema import GatewayKey
from benchwarmers.store.times import utc

SECRET_PREFIX = "bw-"
SHOWN_PREFIX_LENGTH = 10
_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$")
NAME_LENGTH = 64  # the column's width
RETIRED_MARK = "@"  # joins a replaced revoked key's name and its row id
MISS_RELOAD_AFTER = tunables.KEY_MISS_RELOAD_SECONDS.value

log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class KeyInfo:
    """What may be known about a key: everything but the key itself."""

    name: str
    prefix: str
    collections: tuple[str, ...]
    requests_per_minute: int | None
    created_at: datetime
    revoked_at: datetime | None  # a rotated secret's: the end of its grace
    expires_at: datetime | None = None
    rotated_at: datetime | None = None
    # When this secret stops working (epoch seconds): the first of revoked_at
    # and expires_at. The guard's one comparison per request.
    ends: float = field(default=math.inf, compare=False, repr=False)

    @property
    def active(self) -> bool:
        """The name's current secret, not revoked (it may still have expired)."""
        return self.revoked_at is None

    def works(self, now: float) -> bool:
        return now < self.ends

    def refusal(self, now: float) -> str | None:
        """Why this secret is refused at `now` (epoch seconds), or None. Names
        the key and the moment, never the secret."""
        if now < self.ends:
            return None
        if self.expires_at is not None and self.ends == self.expires_at.timestamp():
            return (
                f"the gateway key {self.name!r} expired on {show(self.expires_at)}; ask the server's "
                f"owner to extend it (`benchwarmers key set {self.name} --expires 30d`) or for a new one"
            )
        assert self.revoked_at is not None  # ends is finite and the expiry did not set it
        if self.rotated_at is not None:
            return (
                f"the gateway key {self.name!r} was rotated on {show(self.rotated_at)} and this "
                f"(old) secret stopped working at {show(self.revoked_at)}; use the new one"
            )
        return (
            f"the gateway key {self.name!r} was revoked; ask the server's owner for a new one "
            "(`benchwarmers key add NAME`)"
        )

    def state(self, now: datetime) -> str:
        """One short phrase for lists: active, expires, expired, rotated, revoked."""
        ends_after = now.timestamp() < self.ends
        if self.rotated_at is not None and self.revoked_at is not None:
            verb = "works until" if ends_after else "ended"
            return f"rotated out, {verb} {show(min(self.revoked_at, self.expires_at or self.revoked_at))}"
        if self.revoked_at is not None:
            return f"revoked {show(self.revoked_at)}"
        if self.expires_at is not None:
            when = show(self.expires_at)
            return f"active, expires {when}" if ends_after else f"expired {when}"
        return "active"


def hash_secret(secret: str) -> str:
    return hashlib.sha256(secret.encode()).hexdigest()


def collection_name(name: str) -> str:
    """`bench/trio:merged` and `trio` both name the collection `trio`."""
    return name.strip().removeprefix("bench/").split(":", 1)[0]


async def create_key(
    store: Store,
    name: str,
    *,
    collections: tuple[str, ...] = (),
    requests_per_minute: int | None = None,
    expires_at: datetime | None = None,
) -> tuple[KeyInfo, str]:
    """Make a key; returns its info and the secret, which is never stored.
    A revoked key's name may be reused (the old row is kept, renamed, so
    the revoked key is still recognised). `expires_at` comes from
    `expiry.parse_expiry`, which refused a moment in the past."""
    if not _NAME.match(name):
        raise UserError(f"key name {name!r}: use letters, digits, '.', '_' or '-' (at most 64)")
    if requests_per_minute is not None and requests_per_minute < 1:
        raise UserError("the rate must be at least 1 request per minute")
    scoped = tuple(dict.fromkeys(collection_name(c) for c in collections if collection_name(c)))
    row, secret = _new_row(name, list(scoped), requests_per_minute, expires_at, datetime.now(UTC))
    async with store.write() as session:
        existing = await session.scalar(select(GatewayKey).where(GatewayKey.name == name))
        if existing is not None:
            if existing.revoked_at is None:
                raise Conflict(f"a gateway key named {name!r} exists; revoke it first or pick another name")
            existing.name = _retired_name(existing.name, existing.id)
            await session.flush()
        session.add(row)
    return _info(row), secret


async def list_keys(store: Store) -> list[KeyInfo]:
    """Every key, active and revoked, by name (a reused name's active key first)."""
    async with store.read() as session:
        rows = (await session.scalars(select(GatewayKey))).all()
    return sorted((_info(r) for r in rows), key=lambda k: (k.name, not k.active, k.created_at))


async def revoke_key(store: Store, name: str) -> KeyInfo:
    """Revoke the key: its secret, and any old secret of it still in the
    grace of a rotation, stop working now."""
    now = datetime.now(UTC)
    async with store.write() as session:
        row = await session.scalar(select(GatewayKey).where(GatewayKey.name == name))
        if row is None:
            raise NotFound(f"no gateway key named {name!r}")
        if row.revoked_at is None:
            row.revoked_at = now
        graced = await session.scalars(
            select(GatewayKey).where(GatewayKey.rotated_at.is_not(None), GatewayKey.revoked_at > now)
        )
        for old in graced:
            if old.name == _retired_name(name, old.id):
                old.revoked_at = now
        return _info(row)


async def set_expiry(store: Store, name: str, expires_at: datetime | None) -> KeyInfo:
    """Change when the key expires (None: never). A revoked key stays revoked."""
    async with store.write() as session:
        row = await _current(session, name)
        row.expires_at = expires_at
        return _info(row)


async def rotate_key(
    store: Store, name: str, grace: float, *, now: datetime | None = None
) -> tuple[KeyInfo, KeyInfo, str]:
    """A new secret for the key: the new key's info, the old secret's (its
    `ends`: when it stops) and the new secret (returned once, never
    stored); the old one works `grace` seconds more (0: stops now). Scope, rate and expiry carry
    over. An expired key is refused: its new secret would not work either."""
    if grace < 0:
        raise UserError("the grace period cannot be negative (0: the old secret stops at once)")
    now = now or datetime.now(UTC)
    async with store.write() as session:
        old = await _current(session, name)
        if old.expires_at is not None and utc(old.expires_at) <= now:
            raise Conflict(
                f"the gateway key {name!r} expired on {show(utc(old.expires_at))}; set a new expiry first "
                f"(`benchwarmers key set {name} --expires 30d`)"
            )
        old.name = _retired_name(old.name, old.id)
        old.rotated_at = now
        old.revoked_at = now + timedelta(seconds=grace)
        await session.flush()
        scoped = list(old.collections or ())
        row, secret = _new_row(name, scoped, old.requests_per_minute, old.expires_at, now)
        session.add(row)
    return _info(row), _info(old), secret


async def keys_by_hash(store: Store) -> dict[str, KeyInfo]:
    """Every key, revoked ones too, by its hash."""
    async with store.read() as session:
        rows = (await session.scalars(select(GatewayKey))).all()
    return {r.key_hash: _info(r) for r in rows}


class KeyCache:
    """Keys (active and revoked) by hash, reloaded at most every `ttl` seconds,
    and sooner (at most every `MISS_RELOAD_AFTER`) for an unknown `bw-` secret.

    A table in use is read again behind the requests once `REFRESH_AHEAD` of
    its `ttl` has passed, so under load no request waits for the read: when
    every request that found the table stale waited for it, all ten
    connections stalled together every `ttl` (the configured scenario's p99).
    A table older than `ttl` is still read before the lookup, as before."""

    def __init__(self, store: Store, ttl: float = 3.0) -> None:
        self.store = store
        self.ttl = ttl
        self._keys: dict[str, KeyInfo] = {}
        self._loaded_at = float("-inf")
        # Counted up by `forget`: a read that began before it is not kept.
        self._generation = 0
        # One reload at a time: at ten connections, every request that found
        # the table stale read it again itself (ten reads every `ttl`).
        self._reloading = asyncio.Lock()
        self._behind: asyncio.Task[None] | None = None
        store.on_close(self._finish)

    async def find(self, secret: str) -> KeyInfo | None:
        age = time.monotonic() - self._loaded_at
        if age > self.ttl:
            await self._reload(self.ttl)
        elif age > self.ttl * REFRESH_AHEAD and self._behind is None:
            self._behind = asyncio.get_running_loop().create_task(self._refresh_behind(), name="key refresh")
        digest = hash_secret(secret)
        found = self._keys.get(digest)
        stale = time.monotonic() - self._loaded_at > MISS_RELOAD_AFTER
        if found is None and stale and secret.startswith(SECRET_PREFIX):
            # Made or rotated by another process since we read the table?
            await self._reload(MISS_RELOAD_AFTER)
            found = self._keys.get(digest)
        return found

    async def _refresh_behind(self) -> None:
        try:
            await self._reload(self.ttl * REFRESH_AHEAD)
        except Exception as exc:  # the table runs out as before; the next request's own read reports it
            log.warning("gateway keys not read again: %s", exc)
        finally:
            self._behind = None

    async def _reload(self, older_than: float) -> None:
        async with self._reloading:
            if time.monotonic() - self._loaded_at > older_than:  # not reloaded while we waited
                started, generation = time.monotonic(), self._generation
                keys = await keys_by_hash(self.store)
                if generation == self._generation:  # not forgotten meanwhile (a key changed here)
                    self._keys, self._loaded_at = keys, started

    def forget(self) -> None:
        """Reload on the next lookup (after a key was made or revoked here)."""
        self._loaded_at = float("-inf")
        self._generation += 1

    async def _finish(self) -> None:
        """The store closes: let a read behind the requests end first."""
        behind = self._behind
        if behind is not None and behind.get_loop() is asyncio.get_running_loop():
            await asyncio.gather(behind, return_exceptions=True)


async def _current(session: AsyncSession, name: str) -> GatewayKey:
    """The name's current, unrevoked row (for changes only such a key takes)."""
    row = await session.scalar(select(GatewayKey).where(GatewayKey.name == name))
    if row is None:
        raise NotFound(f"no gateway key named {name!r}")
    if row.revoked_at is not None:
        raise Conflict(f"the gateway key {name!r} was revoked; make a new one (`benchwarmers key add NAME`)")
    return row


def _new_row(
    name: str, scoped: list[str], requests_per_minute: int | None, expires_at: datetime | None, now: datetime
) -> tuple[GatewayKey, str]:
    secret = SECRET_PREFIX + secrets.token_urlsafe(32)
    row = GatewayKey(
        name=name,
        key_hash=hash_secret(secret),
        prefix=secret[:SHOWN_PREFIX_LENGTH],
        collections=scoped,
        requests_per_minute=requests_per_minute,
        created_at=now,
        revoked_at=None,
        expires_at=expires_at,
        rotated_at=None,
    )
    return row, secret


def _retired_name(name: str, row_id: int) -> str:
    mark = f"{RETIRED_MARK}{row_id}"
    return name[: NAME_LENGTH - len(mark)] + mark


def _info(row: GatewayKey) -> KeyInfo:
    revoked_at = None if row.revoked_at is None else utc(row.revoked_at)
    expires_at = None if row.expires_at is None else utc(row.expires_at)
    ends = min((m.timestamp() for m in (revoked_at, expires_at) if m is not None), default=math.inf)
    return KeyInfo(
        name=row.name.partition(RETIRED_MARK)[0],
        prefix=row.prefix,
        collections=tuple(row.collections or ()),
        requests_per_minute=row.requests_per_minute,
        created_at=utc(row.created_at),
        revoked_at=revoked_at,
        expires_at=expires_at,
        rotated_at=None if row.rotated_at is None else utc(row.rotated_at),
        ends=ends,
    )
