"""Dashboard sessions as store rows, so a session ends when the owner says so.

A signed cookie alone cannot be taken back: a copy made before logout
opened the dashboard until it expired. Here a session is a random token
whose SHA-256 is a row of `dashboard_sessions`; the cookie carries the
token (signed as well, `dashboard/auth.py`, so a made-up cookie costs no
read of the store). Every dashboard request looks its row up, with no
cache: logout (`end`), a password change and "sign out everywhere"
(`end_all`) hold from the next request, on every worker and replica of the
shared store, with no window to measure.

Tokens are high-entropy, so a plain hash is the right tool (as for gateway
keys, `keys.py`). Expired rows are swept whenever a session starts.
"""

from __future__ import annotations

import hashlib
import secrets
from datetime import UTC, datetime, timedelta

from sqlalchemy import delete, select

from benchwarmers.store.db import Store, reading
from benchwarmers.store.schema import DashboardSession
from benchwarmers.store.times import utc

USER_LENGTH = 64  # the column's width


def _hash(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()


async def start(store: Store, user: str, lifetime: timedelta) -> str:
    """A new session of `user`; returns its token (the store keeps only its hash)."""
    token = secrets.token_urlsafe(32)
    now = datetime.now(UTC)
    async with store.write() as session:
        await session.execute(delete(DashboardSession).where(DashboardSession.expires_at <= now))
        session.add(
            DashboardSession(
                token_hash=_hash(token), user=user[:USER_LENGTH], created_at=now, expires_at=now + lifetime
            )
        )
    return token


async def user_of(store: Store, token: str) -> str:
    """The user of a live session, or "" (unknown, ended or expired)."""
    if not token:
        return ""
    with reading(("dashboard_sessions",)):
        async with store.read() as session:
            row = await session.scalar(
                select(DashboardSession).where(DashboardSession.token_hash == _hash(token))
            )
    if row is None or utc(row.expires_at) <= datetime.now(UTC):
        return ""
    return row.user


async def end(store: Store, token: str) -> None:
    """End one session (logout)."""
    async with store.write() as session:
        await session.execute(delete(DashboardSession).where(DashboardSession.token_hash == _hash(token)))


async def end_all(store: Store) -> int:
    """End every session (sign out everywhere, a password change); how many ended."""
    async with store.write() as session:
        ended = await session.execute(delete(DashboardSession))
    return int(getattr(ended, "rowcount", 0) or 0)
