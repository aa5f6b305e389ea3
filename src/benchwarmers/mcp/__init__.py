"""The MCP server: four tools (`list_collections`, `ask`, `verdict`,
`pending_verdicts`) written once in `server.py` against a small backend
(`backend.py`), served two ways: streamable HTTP at `/mcp` and `/v1/mcp`
on the gateway (`http.py`, in-process, with the caller's key scope) and
stdio (`stdio.py`, `benchwarmers mcp`, over HTTP to a running server).
"""
