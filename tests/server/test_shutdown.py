"""A request still running when the server stops: uvicorn cancels it at its
graceful-shutdown timeout and starts the lifespan's shutdown at once; the
lifespan waits for it to unwind before the store closes
(`server.app.cancelled_requests_unwound`), so a request cancelled inside a
store session can still close it."""

from __future__ import annotations

import asyncio
import threading
from contextlib import suppress
from pathlib import Path

import httpx
from fastapi import APIRouter, Request
from fastapi.responses import Response
from sqlalchemy import text

from benchwarmers.server.access import gateway
from benchwarmers.server.routes import health
from benchwarmers.testing.live_server import LiveServer

ROUTERS = (health.router,)
lane = APIRouter()
arrived = threading.Event()
unwound: list[int] = []
servers: list[LiveServer] = []


@lane.post("/v1/probe/stuck")
@gateway
async def stuck(request: Request) -> Response:
    store = servers[0].runtime.store
    arrived.set()
    try:
        await asyncio.sleep(3600)
    finally:
        # Only possible while the store is open: the shutdown waited for this.
        async with store.read() as session:
            unwound.append(await session.scalar(text("SELECT 1")))
    return Response()


def test_a_request_cancelled_at_shutdown_unwinds_before_the_store_closes(home: Path) -> None:
    server = LiveServer(home, routers=ROUTERS, extra_routers=[lane])
    servers.append(server)
    server.start()

    def ask() -> None:
        with suppress(httpx.HTTPError):  # the server goes away mid-request: what this test does to it
            httpx.post(f"{server.url}/v1/probe/stuck", timeout=30)

    client = threading.Thread(target=ask, daemon=True)
    client.start()
    assert arrived.wait(10)
    server.stop()  # the client's connection still open: uvicorn's own shutdown path
    client.join(10)
    assert unwound == [1]
