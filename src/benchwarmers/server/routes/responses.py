"""`POST /v1/responses`: the OpenAI Responses face of the gateway.

Glue only: `formats.responses` reads the body and writes the reply or its
SSE events; the core API (`benchwarmers.core`) checks the collection
and the caller's key and starts the panel before the first byte, so a
wrong name is a 4xx, never a broken stream.
"""

from __future__ import annotations

from fastapi import APIRouter, Request
from fastapi.responses import JSONResponse, Response

from benchwarmers.formats import responses
from benchwarmers.server.deps import panels_of
from benchwarmers.server.errors import read_json
from benchwarmers.server.streaming import stream_response

router = APIRouter()


@router.post("/v1/responses")
async def create_response(request: Request) -> Response:
    ask = responses.parse_ask(await read_json(request))
    panels = panels_of(request)
    if ask.stream:
        events = await panels.panel(ask)
        return stream_response(responses.render_stream(events, ask), responses.MEDIA_TYPE_STREAM)
    return JSONResponse(responses.render_reply(await panels.answer(ask), ask))
