"""The Ollama face of the gateway: `POST /api/chat`, `POST /api/generate`,
`GET /api/tags`, `POST /api/show`, `GET /api/version`.

Glue only: `formats.ollama` reads the bodies and writes replies and NDJSON
streams (Ollama streams unless told `"stream": false`). A whole reply
carries `bench` in the body and in the `x-bench` header, since Ollama's
client keeps only the fields it knows. An empty chat or prompt is Ollama's
"load the model" and is answered at once, asking no one, once the
collection is known to exist.

Route mode (`bench/<collection>:route` on `/api/chat`) goes to
`server.route_mode`, rendered by `formats.ollama_route`.
"""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Request
from fastapi.responses import Response

from benchwarmers.formats import ollama, ollama_route
from benchwarmers.formats.base import OPTION_HEADERS, model_name, with_header_options
from benchwarmers.formats.bench_json import bench_header
from benchwarmers.server.access import gateway
from benchwarmers.server.deps import headers_of, panels_of
from benchwarmers.server.errors import read_json
from benchwarmers.server.hot import hot
from benchwarmers.server.json_response import JSONResponse
from benchwarmers.server.protocol import client_left
from benchwarmers.server.route_mode import route_response
from benchwarmers.server.streaming import STREAM_HEADERS, panel_stream_ask, stream_response
from benchwarmers.types import Ask

router = APIRouter()


@router.post("/api/chat")
@hot
@gateway
async def chat(request: Request) -> Response:
    return await _answer(request, generate=False)


@router.post("/api/generate")
@hot
@gateway
async def generate(request: Request) -> Response:
    return await _answer(request, generate=True)


async def _answer(request: Request, *, generate: bool) -> Response:
    body = await read_json(request)
    panels = panels_of(request)
    if ollama.is_load(body, generate=generate):
        collection, _mode = ollama.ask_model(body, route=not generate)
        await panels.check_collection(collection)
        return JSONResponse(ollama.render_load(body, generate=generate))
    ask: Ask = ollama.parse_generate(body) if generate else ollama.parse_ask(body)
    if ask.mode == "route":
        return await route_response(request, ask, ollama_route, stream_headers=STREAM_HEADERS)
    ask = with_header_options(ask, headers_of(request, OPTION_HEADERS))
    if ask.stream:
        ask = panel_stream_ask(request, ask)
        events = await panels.panel(ask, stop_on_close=True)
        return stream_response(ollama.render_stream(events, ask, generate=generate), ollama.MEDIA_TYPE_STREAM)
    reply = await panels.answer(ask, left=client_left(request.scope))
    return JSONResponse(ollama.render_reply(reply, ask, generate=generate), headers=bench_header(reply))


@router.get("/api/tags")
@gateway
async def tags(request: Request) -> dict[str, Any]:
    """The collections this caller may call, each as its panel and its
    merged name."""
    models = [
        ollama.tag_object(model_name(c.name, mode), c.created_at.isoformat())
        for c in await panels_of(request).collections()
        for mode in ("panel", "merged")
    ]
    return {"models": models}


@router.post("/api/show")
@gateway
async def show(request: Request) -> dict[str, Any]:
    collection, mode = ollama.show_model(await read_json(request))
    view = await panels_of(request).collection(collection)
    return ollama.show_object(
        model_name(collection, mode),
        description=view.purpose,
        modified_at=view.created_at.isoformat(),
        mode=mode,
    )


@router.get("/api/version")
@gateway
async def version() -> dict[str, str]:
    return {"version": ollama.OLLAMA_VERSION}
