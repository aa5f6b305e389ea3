"""The Gemini face of the gateway: `POST /v1beta/models/{model}:generateContent`,
`:streamGenerateContent` (SSE with `?alt=sse`, else one streamed JSON array),
`:countTokens`, `GET /v1beta/models` and `GET /v1beta/models/{model}`.

The official client sends `bench/trio` as `/v1beta/models/bench/trio:...`
(a literal slash), so the model is read as a path and the method split off
its last colon (`formats.gemini.split_model_path`). Keys come as
`x-goog-api-key` or `?key=`, both read by the guard. google-genai given a
custom base URL speaks API version `v1`, so generation is answered under
`/v1/models/...` too (a POST there means nothing to OpenAI's API), and
LiteLLM's `gemini/` provider given an `api_base` posts to
`/models/...` with no version at all, so there too. A whole reply carries
`bench` in the body and in the `x-bench` header, since google-genai keeps
only the fields it knows (the header is on `sdk_http_response.headers`).

Route mode (`bench/<collection>:route`) goes to `server.route_mode`,
rendered by `formats.gemini_route` in the request's stream framing.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from fastapi import APIRouter, Request
from fastapi.responses import Response

from benchwarmers.errors import NotFound, UserError
from benchwarmers.formats import gemini
from benchwarmers.formats.base import OPTION_HEADERS, parse_model_name, with_header_options
from benchwarmers.formats.bench_json import bench_header
from benchwarmers.formats.gemini_route import GeminiRoute
from benchwarmers.server.access import gateway
from benchwarmers.server.deps import headers_of, panels_of
from benchwarmers.server.errors import read_json
from benchwarmers.server.hot import hot
from benchwarmers.server.json_response import JSONResponse
from benchwarmers.server.protocol import client_left
from benchwarmers.server.route_mode import route_response
from benchwarmers.server.streaming import STREAM_HEADERS, panel_stream_ask, stream_response

router = APIRouter()

METHODS_FORM = (
    "POST /v1beta/models/bench/<collection>:generateContent (or :streamGenerateContent, :countTokens)"
)


@router.get("/v1beta/models")
@gateway
async def list_models(request: Request) -> dict[str, Any]:
    """The collections this caller may call, each as its panel and its
    merged name."""
    models = [
        gemini.model_object(c.name, mode, description=c.purpose)
        for c in await panels_of(request).collections()
        for mode in ("panel", "merged")
    ]
    return {"models": models}


@router.get("/v1beta/models/{target:path}")
@gateway
async def get_model(request: Request, target: str) -> dict[str, Any]:
    name, method = gemini.split_model_path(target)
    if method:
        raise UserError(f"{method} is a POST: {METHODS_FORM}", status=405)
    collection, mode = parse_model_name(name)
    view = await panels_of(request).collection(collection)
    return gemini.model_object(collection, mode, description=view.purpose)


@router.post("/v1beta/models/{target:path}")
@router.post("/v1/models/{target:path}")
@router.post("/models/{target:path}")
@hot
@gateway
async def generate(request: Request, target: str) -> Response:
    name, method = gemini.split_model_path(target)
    if not method:
        raise NotFound(f"no method on {target!r}: {METHODS_FORM}")
    body = await read_json(request)
    panels = panels_of(request)
    if method == "countTokens":
        counted = gemini.parse_count(body, model=name)
        tokens = await panels.count_tokens(parse_model_name(name)[0], counted)
        return JSONResponse(gemini.render_count(tokens))
    ask = gemini.parse_ask(body, model=name)
    sse = request.query_params.get("alt") == "sse"
    if ask.mode == "route":
        ask = dataclasses.replace(ask, stream=method == "streamGenerateContent")
        return await route_response(request, ask, GeminiRoute(sse=sse), stream_headers=STREAM_HEADERS)
    ask = with_header_options(ask, headers_of(request, OPTION_HEADERS))
    if method == "streamGenerateContent":
        ask = panel_stream_ask(request, dataclasses.replace(ask, stream=True))
        events = await panels.panel(ask, stop_on_close=True)
        media_type = gemini.MEDIA_TYPE_STREAM if sse else gemini.MEDIA_TYPE_ARRAY_STREAM
        return stream_response(gemini.render_stream(events, ask, sse=sse), media_type)
    reply = await panels.answer(ask, left=client_left(request.scope))
    return JSONResponse(gemini.render_reply(reply, ask), headers=bench_header(reply))
