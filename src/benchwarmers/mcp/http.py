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

A tool call whose request's stream closes (its HTTP connection goes, or a
2026-era client cancels it, which closes that stream) is cancelled by the
SDK, and so is the panel it runs (`server._Tools._with_progress`). A
handshake-era client cancels with a `notifications/cancelled` POST of its
own, which the stateless SDK serves in a session of its own, blind to the
call it names: `McpEndpoint` cancels that call itself, found by who asked
and its request id (`_Running`; two calls of one caller under one id, from
two clients, are left running: neither can be told from the other).
"""

from __future__ import annotations

import contextlib
import json
import logging
import time
from collections.abc import AsyncIterator, Callable, Iterator
from contextlib import AbstractAsyncContextManager, asynccontextmanager, suppress
from typing import Any

import anyio
from anyio import CancelScope
from mcp.server.mcpserver import Context
from mcp.server.streamable_http_manager import StreamableHTTPSessionManager
from mcp.server.transport_security import TransportSecuritySettings
from starlette.requests import Request
from starlette.types import Message, Receive, Scope, Send

from benchwarmers import jsontext
from benchwarmers.core import Panels
from benchwarmers.formats.errors import error_bytes
from benchwarmers.mcp.backend import InProcessBackend
from benchwarmers.mcp.server import build_server, progress_seconds

STATE_KEY = "mcp_sessions"
CANCELLED = "notifications/cancelled"
# Where the guard put the body it read (`server.guard.BODY_STATE`; the server is above us).
BODY_STATE = "body"
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
        self.running = _Running()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        manager: StreamableHTTPSessionManager | None = getattr(scope["app"].state, STATE_KEY, None)
        if manager is None:
            raise RuntimeError("the MCP session manager is not running (the app's lifespan did not start it)")
        every = self.keep_alive_every if self.keep_alive_every is not None else progress_seconds()
        addressed = _addressed(scope)
        if addressed is not None and addressed[0] == CANCELLED:
            self.running.cancel(addressed[1])  # and the SDK acknowledges it, as it does
        if addressed is None or addressed[0] != "tools/call":
            await _with_keep_alive(manager.handle_request, every, scope, receive, _json_rpc_refusals(send))
            return
        call = addressed[1]
        ended = {"started": False, "done": False}

        async def sending(message: Message) -> None:
            ended["started"] = ended["started"] or message["type"] == "http.response.start"
            ended["done"] = message["type"] == "http.response.body" and not message.get("more_body", False)
            await send(message)

        with self.running.held(call) as held:
            await _with_keep_alive(manager.handle_request, every, scope, receive, _json_rpc_refusals(sending))
        if held.cancelled_caught and ended["started"] and not ended["done"]:
            await send({"type": "http.response.body", "body": b"", "more_body": False})


class _Running:
    """The tool calls running, by who asked and request id, so that a
    handshake-era `notifications/cancelled` (a POST of its own) can cancel
    the call it names, as the SDK does for a call in its own session."""

    def __init__(self) -> None:
        self.calls: dict[tuple[str, str], list[CancelScope]] = {}

    @contextlib.contextmanager
    def held(self, call: tuple[str, str]) -> Iterator[CancelScope]:
        scope = CancelScope()
        self.calls.setdefault(call, []).append(scope)
        try:
            with scope:
                yield scope
        finally:
            held = self.calls[call]
            held.remove(scope)
            if not held:
                del self.calls[call]

    def cancel(self, call: tuple[str, str]) -> None:
        held = self.calls.get(call, [])
        if len(held) == 1:  # two clients of one caller under one id: neither is told from the other
            held[0].cancel()


def _addressed(scope: Scope) -> tuple[str, tuple[str, str]] | None:
    """The body's JSON-RPC method and (who asked, the request id it names:
    a request's own, a `notifications/cancelled`'s `requestId`), when it is
    one message that names one; ids spelled as sent (1 is not "1")."""
    state = scope.get("state", {})
    body = state.get(BODY_STATE)
    if not body or not body.lstrip().startswith(b"{"):
        return None  # a batch, or no body: the SDK answers it as it does
    try:
        message = jsontext.loads(body)
    except ValueError:
        return None
    if not isinstance(message, dict) or not isinstance(method := message.get("method"), str):
        return None
    params = message.get("params")
    named = params.get("requestId") if method == CANCELLED and isinstance(params, dict) else message.get("id")
    if named is None:
        return None
    return method, (getattr(state.get("identity"), "name", ""), json.dumps(named))


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
