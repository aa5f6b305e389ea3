"""Dashboard sessions as store rows: a token is known until it is ended or
expires, the store keeps only its hash, and ending all ends every one."""

from __future__ import annotations

from datetime import timedelta

import pytest
from sqlalchemy import select

from benchwarmers.identity import sessions
from benchwarmers.runtime import Runtime
from benchwarmers.store.schema import DashboardSession

pytestmark = pytest.mark.unit


async def test_a_session_is_known_until_it_ends(runtime: Runtime) -> None:
    store = runtime.store
    first = await sessions.start(store, "ann", timedelta(hours=1))
    second = await sessions.start(store, "ann", timedelta(hours=1))
    assert await sessions.user_of(store, first) == "ann" and await sessions.user_of(store, second) == "ann"
    assert await sessions.user_of(store, "made-up") == "" and await sessions.user_of(store, "") == ""
    await sessions.end(store, first)
    assert await sessions.user_of(store, first) == "" and await sessions.user_of(store, second) == "ann"
    assert await sessions.end_all(store) == 1
    assert await sessions.user_of(store, second) == ""


async def test_only_the_hash_is_stored_and_an_expired_session_is_swept(runtime: Runtime) -> None:
    store = runtime.store
    expired = await sessions.start(store, "ann", timedelta(seconds=-1))
    assert await sessions.user_of(store, expired) == ""
    live = await sessions.start(store, "ann", timedelta(hours=1))  # sweeps the expired one
    async with store.read() as session:
        rows = (await session.scalars(select(DashboardSession))).all()
    assert len(rows) == 1 and live not in rows[0].token_hash and len(rows[0].token_hash) == 64
