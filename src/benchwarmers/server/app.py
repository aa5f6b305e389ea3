"""The one ASGI app: gateway, MCP, verdicts, bench operations and settings on one port.

The dashboard (`benchwarmers.dashboard`) answers `/` and its pages, outside
the gateway paths, behind its own login. The server cannot import it (it
sits above), so the routers are handed in: the composition root
(`benchwarmers/assembly.py`) lists them all and builds the app.

    app = create_app(lambda: CoreHandle.open(home, database_url), routers=ROUTERS)

The app's lifespan opens the core (`core.CoreHandle`: the runtime under it,
store migrated, pooled http client, settings) and closes it on shutdown,
once running panels have finished (`core.finish_background`); routes reach
it through `deps.core_of(request)`, never the runtime itself; the guard
checks requests against what `CoreHandle.gate` hands it. The server's own
routers are listed in `routes/__init__.py`, one line each. In front of
everything sit `errors.CatchAll` (no traceback ever reaches a client) and
`guard.Guard` (Host, Origin, gateway keys, body size and depth); behind
them each route admits only whom it declares (`access.py`: public, gateway
key or dashboard login), and a route that declares nothing is refused.

`/openapi.json` is served (schema-driven fuzzing runs against it, and
clients may read it; it carries no key, not even in an example); FastAPI's
doc pages (`/docs`, `/redoc`) are off: the gateway speaks other vendors'
APIs, documented by them (docs/api.md).
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable, Sequence
from contextlib import AbstractAsyncContextManager, asynccontextmanager

from fastapi import APIRouter, FastAPI
from fastapi.routing import APIRoute

from benchwarmers import __version__
from benchwarmers.config import tunables
from benchwarmers.core import CoreHandle, finish_background
from benchwarmers.server import DEFAULT_HOST
from benchwarmers.server.access import Admission, RouteTable, public
from benchwarmers.server.errors import HANDLERS, CatchAll, install_error_handlers
from benchwarmers.server.guard import Guard, GuardState, Receive, Scope, Send
from benchwarmers.server.hot import HotLane, is_hot
from benchwarmers.server.routes.inbound import format_routers

CoreFactory = Callable[[], AbstractAsyncContextManager[CoreHandle]]

UNWIND_SECONDS = tunables.UNWIND_SECONDS.value


class Gateway(FastAPI):
    """FastAPI, but a request for a hot route (`server/hot.py`) is answered
    by the hot lane before FastAPI's own stack sees it."""

    hot_lane: HotLane | None = None

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        lane = self.hot_lane
        if lane is not None and scope["type"] == "http" and lane.take(scope):
            scope["app"] = self
            await lane.stack(scope, receive, send)
            return
        await super().__call__(scope, receive, send)


async def cancelled_requests_unwound(timeout: float = UNWIND_SECONDS) -> None:
    """uvicorn cancels the requests still running at its graceful-shutdown
    timeout and starts the lifespan's shutdown at once, without waiting for
    them (one process or `--workers N` alike). A request cancelled inside a
    store session closes that session as it unwinds, which it could not do
    after the store's close: its connection would be left to the garbage
    collector. So the shutdown first waits, at most `timeout`, for every task
    with a cancellation pending (the lifespan's own task has none)."""
    cancelled = [task for task in asyncio.all_tasks() if task.cancelling()]
    if cancelled:
        await asyncio.wait(cancelled, timeout=timeout)


def create_app(
    open_core: CoreFactory,
    *,
    routers: Sequence[APIRouter],
    bind_host: str = DEFAULT_HOST,
) -> Gateway:
    """The app, not yet started. `bind_host` is the address the server
    listens on: beyond loopback, the guard requires gateway keys. `routers`
    are mounted as given (the composition root's, or a test's own); beside
    them, the ask route of each registered format that has no router of its
    own (`routes/inbound.py`).
    `app.state.guard` is the guard's state."""
    guard_state = GuardState(bind_host=bind_host)

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        async with open_core() as core:
            app.state.core = core
            guard_state.attach(*core.gate())
            try:
                yield
            finally:
                await cancelled_requests_unwound()
                # Panels whose clients left are still writing: let them, before the store closes.
                await finish_background()
                app.state.core = None

    app = Gateway(
        title="Benchwarmers",
        version=__version__,
        lifespan=lifespan,
        docs_url=None,
        redoc_url=None,
        openapi_url="/openapi.json",
    )
    app.state.guard = guard_state
    app.state.core = None
    install_error_handlers(app)
    hot_routes: list[APIRoute] = []
    for router in (*routers, *format_routers()):
        app.include_router(router)
        hot_routes.extend(route for route in router.routes if is_hot(route))
    for route in app.routes:  # FastAPI's own: the schema, served to anyone (it carries no key)
        if getattr(route, "path", None) == app.openapi_url:
            public(route.endpoint)  # type: ignore[attr-defined]
    app.hot_lane = HotLane(hot_routes, guard_state, HANDLERS)
    # The last added is the outermost: CatchAll wraps the guard wraps each
    # route's declaration (deny by default: server/access.py) wraps the routes.
    app.add_middleware(Admission, table=RouteTable(app.routes))
    app.add_middleware(Guard, state=guard_state)
    app.add_middleware(CatchAll)
    return app
