"""`POST /mcp` and `POST /v1/mcp`: the MCP server over streamable HTTP.

Both paths are gateway paths, so the guard checks them as it checks `/v1`
(a gateway key's collections and rate hold). Only POST is routed: a
stateless server has no stream for a GET to open, so GET (and DELETE)
answer 405. The session manager lives in this router's lifespan
(`mcp/http.py`).
"""

from __future__ import annotations

from fastapi import APIRouter
from starlette.routing import Route

from benchwarmers.mcp.http import McpEndpoint, mcp_lifespan
from benchwarmers.server.access import gateway
from benchwarmers.server.deps import panels_of

MCP_PATHS = ("/mcp", "/v1/mcp")

router = APIRouter(lifespan=mcp_lifespan(panels_of))
# One endpoint for both paths: a tool call cancelled by a POST to the other is found too.
_ENDPOINT = McpEndpoint()
for _path in MCP_PATHS:
    # A Route whose endpoint is an ASGI app (not a function) hands it the raw request.
    router.routes.append(Route(_path, gateway(_ENDPOINT), methods=["POST"], include_in_schema=False))
