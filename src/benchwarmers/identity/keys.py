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

Lookups go through `KeyCache`, which reloads the (small) table at most every
few seconds: a request costs one hash and a dict lookup, a revocation takes
effect at once in this process and within `KeyCache.ttl` in other replicas.
"""

from __future__ import annotations

import asyncio
import hashlib
import re
import secrets
import time
from dataclasses import dataclass
from datetime import UTC, datetime

from sqlalchemy import select

from benchwarmers.errors import Conflict, NotFound, UserError
from benchwarmers.store.db import Store
from benchwarmers.store.schema import GatewayKey
from benchwarmers.store.times import utc

SECRET_PREFIX = "bw-"
SHOWN_PREFIX_LENGTH = 10
_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$")
NAME_LENGTH = 64  # the column's width
RETIRED_MARK = "@"  # joins a replaced revoked key's name and its row id


@dataclass(frozen=True, slots=True)
class KeyInfo:
    """What may be known about a key: everything but the key itself."""

    name: str
    prefix: str
    collections: tuple[str, ...]
    requests_per_minute: int | None
    created_at: datetime
    revoked_at: datetime | None

    @property
    def active(self) -> bool:
        return self.revoked_at is None


def hash_secret(secret: str) -> str:
    return hashlib.sha256(secret.encode()).hexdigest()


def collection_name(name: str) -> str:
    """`bench/trio:merged` and `trio` both name the collection `trio`."""
    return name.strip().removeprefix("bench/").split(":", 1)[0]


async def create_key(
    store: Store, name: str, *, collections: tuple[str, ...] = (), requests_per_minute: int | None = None
) -> tuple[KeyInfo, str]:
    """Make a key; returns its info and the secret, which is never stored.
    A revoked key's name may be reused (the old row is kept, renamed, so
    the revoked key is still recognised)."""
    if not _NAME.match(name):
        raise UserError(f"key name {name!r}: use letters, digits, '.', '_' or '-' (at most 64)")
    if requests_per_minute is not None and requests_per_minute < 1:
        raise UserError("the rate must be at least 1 request per minute")
    scoped = tuple(dict.fromkeys(collection_name(c) for c in collections if collection_name(c)))
    secret = SECRET_PREFIX + secrets.token_urlsafe(32)
    row = GatewayKey(
        name=name,
        key_hash=hash_secret(secret),
        prefix=secret[:SHOWN_PREFIX_LENGTH],
        collections=list(scoped),
        requests_per_minute=requests_per_minute,
        created_at=datetime.now(UTC),
        revoked_at=None,
    )
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
    async with store.write() as session:
        row = await session.scalar(select(GatewayKey).where(GatewayKey.name == name))
        if row is None:
            raise NotFound(f"no gateway key named {name!r}")
        if row.revoked_at is None:
            row.revoked_at = datetime.now(UTC)
        return _info(row)


async def keys_by_hash(store: Store) -> dict[str, KeyInfo]:
    """Every key, revoked ones too, by its hash."""
    async with store.read() as session:
        rows = (await session.scalars(select(GatewayKey))).all()
    return {r.key_hash: _info(r) for r in rows}


class KeyCache:
    """Keys (active and revoked) by hash, reloaded at most every `ttl` seconds."""

    def __init__(self, store: Store, ttl: float = 3.0) -> None:
        self.store = store
        self.ttl = ttl
        self._keys: dict[str, KeyInfo] = {}
        self._loaded_at = float("-inf")
        # One reload at a time: at ten connections, every request that found
        # the table stale read it again itself (ten reads every `ttl`).
        self._reloading = asyncio.Lock()

    async def find(self, secret: str) -> KeyInfo | None:
        if time.monotonic() - self._loaded_at > self.ttl:
            async with self._reloading:
                if time.monotonic() - self._loaded_at > self.ttl:  # not reloaded while we waited
                    self._keys = await keys_by_hash(self.store)
                    self._loaded_at = time.monotonic()
        return self._keys.get(hash_secret(secret))

    def forget(self) -> None:
        """Reload on the next lookup (after a key was made or revoked here)."""
        self._loaded_at = float("-inf")


def _retired_name(name: str, row_id: int) -> str:
    mark = f"{RETIRED_MARK}{row_id}"
    return name[: NAME_LENGTH - len(mark)] + mark


def _info(row: GatewayKey) -> KeyInfo:
    return KeyInfo(
        name=row.name.partition(RETIRED_MARK)[0],
        prefix=row.prefix,
        collections=tuple(row.collections or ()),
        requests_per_minute=row.requests_per_minute,
        created_at=utc(row.created_at),
        revoked_at=None if row.revoked_at is None else utc(row.revoked_at),
    )
