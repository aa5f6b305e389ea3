"""`benchwarmers mcp`: the MCP server on stdio, for MCP clients that launch
their servers (Claude Desktop, editors, aggregators). It talks to a running
`benchwarmers serve` over HTTP; see `benchwarmers.mcp.stdio`."""

from __future__ import annotations

import typer


def register(app: typer.Typer) -> None:
    app.command("mcp")(mcp)


def mcp() -> None:
    """Serve the MCP tools (list_collections, ask, verdict, pending_verdicts) on stdio.

    Calls a running server: BENCHWARMERS_URL (default http://127.0.0.1:8122),
    BENCHWARMERS_KEY (a gateway key, if keys are on), BENCHWARMERS_TIMEOUT
    (seconds to wait for a panel, default 900).
    """
    # Imported here: the MCP SDK takes a second to import, which no other command should pay.
    from benchwarmers.mcp.stdio import serve_stdio

    serve_stdio()
