"""`POST /v1/chat/completions`, `GET /v1/models` and `GET /v1/models/{model}`:
the OpenAI chat completions face of the gateway.

The route is glue: the format reads the body into an `Ask`, the core API
(`core.Panels`, as `deps.panels_of` hands it for this identity)
checks the collection and starts the panel before the first byte, so an
unknown collection or an unseatable request still gets its 4xx, and a
stream that starts is one that will finish; the format writes the reply
or the stream.

Route mode (`bench/<collection>:route`) goes to `server.route_mode`, which
the Messages route shares: one member answers, rendered by
`formats.openai_route`.
"""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Request
from fastapi.responses import Response

from benchwarmers.core import collection_entry
from benchwarmers.errors import NotFound, UserError
from benchwarmers.formats import openai_chat, openai_route
from benchwarmers.formats.base import OPTION_HEADERS, model_name, with_header_options
from benchwarmers.formats.errors import is_unversioned_gemini
from benchwarmers.server.access import gateway
from benchwarmers.server.deps import headers_of, panels_of
from benchwarmers.server.errors import read_json
from benchwarmers.server.hot import hot
from benchwarmers.server.json_response import JSONResponse
from benchwarmers.server.protocol import client_left
from benchwarmers.server.route_mode import route_response
from benchwarmers.server.streaming import STREAM_HEADERS, panel_stream_ask, stream_response

router = APIRouter()


@router.post("/v1/chat/completions")
@hot
@gateway
async def chat_completions(request: Request) -> Response:
    ask = openai_chat.parse_ask(await read_json(request))
    if ask.mode == "route":
        return await route_response(request, ask, openai_route, stream_headers=STREAM_HEADERS)
    ask = with_header_options(ask, headers_of(request, OPTION_HEADERS))
    panels = panels_of(request)
    if ask.stream:
        ask = panel_stream_ask(request, ask)
        events = await panels.panel(ask, stop_on_close=True)
        return stream_response(openai_chat.render_stream(events, ask), openai_chat.MEDIA_TYPE_STREAM)
    reply = await panels.answer(ask, left=client_left(request.scope))
    return JSONResponse(openai_chat.render_reply(reply, ask))


@router.get("/v1/models")
@gateway
async def models(request: Request) -> dict[str, Any]:
    """The collections this caller may call, with extra keys describing
    them (`core.collection_entry`)."""
    collections = await panels_of(request).collections()
    return {"object": "list", "data": [collection_entry(view) for view in collections]}


@router.get("/v1/models/{model:path}")
@gateway
async def retrieve_model(request: Request, model: str) -> dict[str, Any]:
    """One model, as `GET /v1/models` lists it (the openai client's
    `models.retrieve`): a collection's entry, and the same entry under a
    name of its `modes` (`bench/c:merged`, `bench/c:route`), so a client
    that looks a model up before using it may use any of them. A model the
    list does not carry (unknown, or not this key's) is a 404. The name keeps
    its slash, so the parameter takes the rest of the path; a Gemini
    method there (`bench/c:generateContent`) is a POST, as on `/v1beta`."""
    if is_unversioned_gemini(request.url.path):
        method = model.rpartition(":")[2]
        raise UserError(f"{method} is a POST: POST /v1/models/bench/<collection>:{method}", status=405)
    collections = await panels_of(request).collections()
    for view in collections:
        entry = collection_entry(view)
        if model in entry["modes"]:
            return {**entry, "id": model}
    listed = ", ".join(model_name(view.name) for view in collections) or "none"
    raise NotFound(f"no model {model!r}; models here: {listed} (each also as :merged and :route)")
