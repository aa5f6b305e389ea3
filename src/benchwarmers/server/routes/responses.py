"""`POST /v1/responses`: the OpenAI Responses face of the gateway.

Glue only: `formats.responses` reads the body and writes the reply or its
SSE events; the core (`core.Panels`, `core.RouteMode`) checks the
collection and the caller's key and starts the panel before the first
byte, so a wrong name is a 4xx, never a broken stream.

Route mode (`bench/<collection>:route`, what Codex CLI drives) goes to
`server.route_mode`: one member answers each turn, with the agent's tools,
rendered by `formats.responses_route` in the kinds the client declared them.
"""

from __future__ import annotations

from fastapi import APIRouter, Request
from fastapi.responses import Response

from benchwarmers.formats import responses
from benchwarmers.formats.base import OPTION_HEADERS, with_header_options
from benchwarmers.formats.responses_route import ResponsesRoute
from benchwarmers.server.access import gateway
from benchwarmers.server.deps import headers_of, panels_of
from benchwarmers.server.errors import read_json
from benchwarmers.server.hot import hot
from benchwarmers.server.json_response import JSONResponse
from benchwarmers.server.protocol import client_left
from benchwarmers.server.route_mode import route_response
from benchwarmers.server.streaming import STREAM_HEADERS, panel_stream_ask, stream_response

router = APIRouter()


@router.post("/v1/responses")
@hot
@gateway
async def create_response(request: Request) -> Response:
    body = await read_json(request)
    ask = responses.parse_ask(body)
    if ask.mode == "route":
        route = ResponsesRoute(responses.tool_names(body))
        return await route_response(request, ask, route, stream_headers=STREAM_HEADERS)
    ask = with_header_options(ask, headers_of(request, OPTION_HEADERS))
    panels = panels_of(request)
    if ask.stream:
        ask = panel_stream_ask(request, ask)
        events = await panels.panel(ask, stop_on_close=True)
        return stream_response(responses.render_stream(events, ask), responses.MEDIA_TYPE_STREAM)
    reply = await panels.answer(ask, left=client_left(request.scope))
    return JSONResponse(responses.render_reply(reply, ask))
