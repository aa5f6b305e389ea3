"""The ask route of each registered format that has no router of its own.

A format that answers only asks (`formats.registry.InboundFormat` with an
`ask_path` and `has_router` off) needs no route module: this builds its
`POST ask_path` from its registration, the same glue the hand-written
routes are (`openai_chat.py`): the format parses, the core starts the panel
before the first byte, the format renders the reply (with the `bench`
object as the `x-bench` header too) or the stream; route mode goes to
`server.route_mode` with the format's route renderer. `{model}` in the
path is the model's name travelling in the URL (slashes and all), handed to
the parser. The app mounts these beside `ROUTERS` (`server/app.py`).
"""

from __future__ import annotations

from fastapi import APIRouter, Request
from fastapi.responses import Response

from benchwarmers.errors import UserError
from benchwarmers.formats import registry
from benchwarmers.formats.base import OPTION_HEADERS, require_object, with_header_options
from benchwarmers.formats.bench_json import bench_header
from benchwarmers.server.access import gateway
from benchwarmers.server.deps import headers_of, panels_of
from benchwarmers.server.errors import read_json
from benchwarmers.server.hot import hot
from benchwarmers.server.json_response import JSONResponse
from benchwarmers.server.protocol import client_left
from benchwarmers.server.route_mode import route_response
from benchwarmers.server.streaming import STREAM_HEADERS, stream_response


def format_routers() -> list[APIRouter]:
    """A router for every registered format the server builds the route of."""
    return [
        ask_router(fmt)
        for fmt in registry.formats()
        if fmt.ask_path is not None and fmt.codec is not None and not fmt.has_router
    ]


def ask_router(fmt: registry.InboundFormat) -> APIRouter:
    codec = fmt.codec
    assert codec is not None and fmt.ask_path is not None  # format_routers chose it so
    router = APIRouter()

    async def answer(request: Request, model: str | None) -> Response:
        body = await read_json(request)
        ask = codec.parse_ask(body, model=model)
        if ask.mode == "route":
            if fmt.route is None:
                raise UserError(f"route mode is not offered in the {fmt.name} format")
            renderer = fmt.route(require_object(body), request.query_params)
            return await route_response(request, ask, renderer, stream_headers=STREAM_HEADERS)
        ask = with_header_options(ask, headers_of(request, OPTION_HEADERS))
        panels = panels_of(request)
        if ask.stream:
            events = await panels.panel(ask, stop_on_close=True)
            return stream_response(codec.render_stream(events, ask), codec.MEDIA_TYPE_STREAM)
        reply = await panels.answer(ask, left=client_left(request.scope))
        return JSONResponse(codec.render_reply(reply, ask), headers=bench_header(reply))

    async def ask(request: Request) -> Response:
        return await answer(request, None)

    async def ask_model(request: Request, model: str) -> Response:
        return await answer(request, model)

    endpoint = ask_model if "{model}" in fmt.ask_path else ask
    path = fmt.ask_path.replace("{model}", "{model:path}")
    router.add_api_route(path, hot(gateway(endpoint)), methods=["POST"], name=f"{fmt.name}_ask")
    return router
