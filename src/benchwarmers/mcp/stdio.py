"""The MCP server over stdio (`benchwarmers mcp`), for clients that start
their servers as subprocesses.

The same tools as `/mcp`, with a backend that calls a running server over
HTTP (`BENCHWARMERS_URL`, `BENCHWARMERS_KEY`, `BENCHWARMERS_TIMEOUT`): the
server keeps the limits, the guard and the call log, and this process
holds nothing but the connection. With no server answering, each tool
says so and how to start one, rather than the process failing to start
(a client would only show "server disconnected").
"""

from __future__ import annotations

import anyio

from benchwarmers.mcp.remote import HttpBackend
from benchwarmers.mcp.server import build_server


def serve_stdio() -> None:
    """Serve the tools on stdin/stdout until the client closes them."""
    backend = HttpBackend.from_environment()
    server = build_server(lambda _ctx: backend)
    anyio.run(server.run_stdio_async)
