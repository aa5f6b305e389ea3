"""`POST /v1/responses`: the OpenAI Responses face of the gateway.

Glue only: `formats.responses` reads the body and writes the reply or its
SSE events; `panel_events` (shared with the chat completions route) checks
the collection and the caller's key and starts the panel before the first
byte, so a wrong name is a 4xx, never a broken stream.
"""

from __future__ import annotations

from fastapi import APIRouter, Request
from fastapi.responses import JSONResponse, Response, StreamingResponse

from benchwarmers.formats import responses
from benchwarmers.server.errors import read_json
from benchwarmers.server.routes.openai_chat import SSE_HEADERS, panel_events
from benchwarmers.types import PanelDone

router = APIRouter()


@router.post("/v1/responses")
async def create_response(request: Request) -> Response:
    ask = responses.parse_ask(await read_json(request))
    events = await panel_events(request, ask)
    if ask.stream:
        return StreamingResponse(
            responses.render_stream(events, ask), media_type=responses.MEDIA_TYPE_STREAM, headers=SSE_HEADERS
        )
    async for event in events:
        if isinstance(event, PanelDone):
            return JSONResponse(responses.render_reply(event.reply, ask))
    raise RuntimeError("the panel ended without a reply")
