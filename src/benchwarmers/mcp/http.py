"""The MCP server over streamable HTTP, inside the gateway's app.

`McpEndpoint` is a plain ASGI endpoint the router mounts at `POST /mcp`
and `POST /v1/mcp`, so every MCP request has already passed the guard
(Host, Origin, gateway key, its rate, body size) and carries its identity;
the tools answer through an `InProcessBackend` over `core.Panels` as that
request's identity (the server hands `mcp_lifespan` its `panels_of`), so a
key limited to some collections is limited the same way here.

The SDK runs stateless (each POST stands alone; Claude Code keeps no
session id) and answers in SSE when the client accepts it. The SDK's own
DNS-rebinding check is off because the guard already made it, with the
user's allowed hosts. `lifespan` starts a fresh session manager per app
start (a manager runs once), kept on `app.state`.

While a tool runs, a stream that has been silent for the progress
interval gets an SSE comment (`: keep-alive`), so a client or proxy with
an idle limit keeps the connection even when it sent no progress token.
"""

from __future__ import annotations

import logging
import time
from collections.abc import AsyncIterator, Callable
from contextlib import AbstractAsyncContextManager, asynccontextmanager, suppress
from typing import Any

import anyio
from mcp.server.mcpserver import Context
from mcp.server.streamable_http_manager import StreamableHTTPSessionManager
from mcp.server.transport_security import TransportSecuritySettings
from starlette.requests import Request
from starlette.types import Message, Receive, Scope, Send

from benchwarmers.core import Panels
from benchwarmers.formats.errors import error_bytes
from benchwarmers.mcp.backend import InProcessBackend
from benchwarmers.mcp.server import build_server, progress_seconds

STATE_KEY = "mcp_sessions"
KEEP_ALIVE = b": keep-alive\n\n"


def mcp_lifespan(
    panels_for: Callable[[Request], Panels],
) -> Callable[[Any], AbstractAsyncContextManager[None]]:
    """The lifespan that runs the MCP session manager for as long as the app
    runs; each tool call answers through `panels_for(its request)`."""

    def in_process_backend(ctx: Context) -> InProcessBackend:
        request = ctx.request_context.request
        if not isinstance(request, Request):
            raise RuntimeError("an MCP tool on the server ran outside an HTTP request")
        return InProcessBackend(panels_for(request))

    @asynccontextmanager
    async def lifespan(app: Any) -> AsyncIterator[None]:
        # The SDK logs every stateless request at INFO ("Terminating session"):
        # noise in a server log where each MCP call is one request.
        logging.getLogger("mcp.server").setLevel(logging.WARNING)
        server = build_server(in_process_backend)
        server.streamable_http_app(
            stateless_http=True,
            transport_security=TransportSecuritySettings(enable_dns_rebinding_protection=False),
        )
        manager = server.session_manager
        async with manager.run():
            setattr(app.state, STATE_KEY, manager)
            try:
                yield
            finally:
                setattr(app.state, STATE_KEY, None)

    return lifespan


class McpEndpoint:
    """ASGI endpoint handing a request to the running session manager."""

    def __init__(self, keep_alive_every: float | None = None) -> None:
        self.keep_alive_every = keep_alive_every

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        manager: StreamableHTTPSessionManager | None = getattr(scope["app"].state, STATE_KEY, None)
        if manager is None:
            raise RuntimeError("the MCP session manager is not running (the app's lifespan did not start it)")
        every = self.keep_alive_every if self.keep_alive_every is not None else progress_seconds()
        await _with_keep_alive(manager.handle_request, every, scope, receive, _json_rpc_refusals(send))


def _json_rpc_refusals(send: Send) -> Send:
    """The SDK answers some refusals (a POST whose Content-Type is not JSON)
    in plain text; a JSON-RPC client reads only JSON-RPC errors, so a 4xx
    that is not JSON is rewritten into one, keeping its status and words."""
    held: dict[str, Any] = {}

    async def rewriting(message: Message) -> None:
        if message["type"] == "http.response.start" and message["status"] >= 400:
            headers = dict(message.get("headers", []))
            if not headers.get(b"content-type", b"").startswith(b"application/json"):
                held["start"], held["body"] = message, b""
                return
        if "start" not in held:
            await send(message)
            return
        held["body"] += message.get("body", b"")
        if message.get("more_body", False):
            return
        status = held["start"]["status"]
        text = held["body"].decode("utf-8", "replace").strip() or f"HTTP {status}"
        body = error_bytes("jsonrpc", status, text)
        raw = [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]
        await send({"type": "http.response.start", "status": status, "headers": raw})
        await send({"type": "http.response.body", "body": body, "more_body": False})

    return rewriting


async def _with_keep_alive(app: Any, every: float, scope: Scope, receive: Receive, send: Send) -> None:
    """Run `app`; while its SSE reply is open and silent for `every` seconds,
    write a comment line. Sends are serialised so a comment never lands
    inside another message."""
    lock = anyio.Lock()
    state = {"sse": False, "done": False, "last": time.monotonic()}

    async def guarded(message: Message) -> None:
        async with lock:
            if message["type"] == "http.response.start":
                headers = dict(message.get("headers", []))
                state["sse"] = headers.get(b"content-type", b"").startswith(b"text/event-stream")
            elif message["type"] == "http.response.body" and not message.get("more_body", False):
                state["done"] = True
            await send(message)
            state["last"] = time.monotonic()

    async def keep_alive() -> None:
        while not state["done"]:
            await anyio.sleep(every)
            async with lock:
                if state["sse"] and not state["done"] and time.monotonic() - state["last"] >= every:
                    with suppress(OSError):
                        await send({"type": "http.response.body", "body": KEEP_ALIVE, "more_body": True})
                    state["last"] = time.monotonic()

    async with anyio.create_task_group() as group:
        group.start_soon(keep_alive)
        try:
            await app(scope, receive, guarded)
        finally:
            group.cancel_scope.cancel()
