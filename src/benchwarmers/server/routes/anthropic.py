"""`POST /v1/messages` and `POST /v1/messages/count_tokens`: the Anthropic
Messages face of the gateway.

Glue only: `formats.anthropic` reads the body and writes the message or
its SSE events; the core API (`benchwarmers.core`) checks the
collection and the caller's key and starts the panel before the first
byte. A whole reply carries the `bench` object twice: as the
message's extra key and as the `x-bench` header (for clients that hand
back only typed fields).

Route mode (`bench/<collection>:route`, what Claude Code drives) goes to
`server.route_mode`: one member answers each turn, with the agent's tools,
rendered by `formats.anthropic_route`.

`count_tokens` is an estimate (`Panels.count_tokens`: about four
characters a token plus a fixed allowance per image), the same number the
limiter and seating use; no member is asked, since each counts its own way.
"""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Request
from fastapi.responses import Response

from benchwarmers.formats import anthropic, anthropic_route
from benchwarmers.formats.base import OPTION_HEADERS, parse_model_name, with_header_options
from benchwarmers.formats.bench_json import bench_header
from benchwarmers.server.access import gateway
from benchwarmers.server.deps import headers_of, panels_of
from benchwarmers.server.errors import read_json
from benchwarmers.server.hot import hot
from benchwarmers.server.json_response import JSONResponse
from benchwarmers.server.protocol import client_left
from benchwarmers.server.route_mode import route_response
from benchwarmers.server.streaming import STREAM_HEADERS, panel_stream_ask, stream_response

router = APIRouter()


@router.post("/v1/messages")
@hot
@gateway
async def messages(request: Request) -> Response:
    ask = anthropic.parse_ask(await read_json(request))
    if ask.mode == "route":
        return await route_response(request, ask, anthropic_route, stream_headers=STREAM_HEADERS)
    ask = with_header_options(ask, headers_of(request, OPTION_HEADERS))
    panels = panels_of(request)
    if ask.stream:
        ask = panel_stream_ask(request, ask)
        events = await panels.panel(ask, stop_on_close=True)
        return stream_response(anthropic.render_stream(events, ask), anthropic.MEDIA_TYPE_STREAM)
    reply = await panels.answer(ask, left=client_left(request.scope))
    return JSONResponse(anthropic.render_reply(reply, ask), headers=bench_header(reply))


@router.post("/v1/messages/count_tokens")
@gateway
async def count_tokens(request: Request) -> dict[str, Any]:
    body = await read_json(request)
    counted = anthropic.parse_count(body)
    collection, _mode = parse_model_name(body["model"])
    return anthropic.render_count(await panels_of(request).count_tokens(collection, counted))
