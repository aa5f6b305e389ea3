"""`POST /v1/chat/completions` and `GET /v1/models`: the OpenAI chat
completions face of the gateway.

The route is glue: the format reads the body into an `Ask`, the guard's
caller must be allowed the collection, the panel engine answers, the
format writes the reply or the stream. `panel_events` is shared with the
other formats' routes: it checks the collection and starts the panel before
the first byte, so an unknown collection or an unseatable request still
gets its 4xx, and a stream that starts is one that will finish.

Route mode (`bench/<collection>:route`) goes to `server.route_mode`, which
the Messages route shares: one member answers, rendered by
`formats.openai_route`.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

from fastapi import APIRouter, Request
from fastapi.responses import JSONResponse, Response, StreamingResponse

from benchwarmers.errors import NotFound, Refused
from benchwarmers.formats import openai_chat, openai_route
from benchwarmers.formats.base import model_name
from benchwarmers.panel.engine import PanelEngine
from benchwarmers.server.callers import caller_may_call, caller_of
from benchwarmers.server.deps import runtime_of
from benchwarmers.server.errors import read_json
from benchwarmers.server.route_mode import route_response
from benchwarmers.store import registry
from benchwarmers.types import Ask, PanelDone, PanelEvent

router = APIRouter()

SSE_HEADERS = {"cache-control": "no-cache", "x-accel-buffering": "no"}


async def check_collection(request: Request, collection: str) -> None:
    """404 listing the collections this caller may call; 403 for one that
    exists but the caller's key does not cover."""
    caller = caller_of(request)
    names = [c.name for c in await registry.list_collections(runtime_of(request).store)]
    if collection not in names:
        callable_names = [model_name(n) for n in names if caller_may_call(caller, n)]
        there = ", ".join(callable_names) if callable_names else "none yet (benchwarmers collection add)"
        raise NotFound(f"no collection {model_name(collection)!r}; collections here: {there}")
    if not caller_may_call(caller, collection):
        raise Refused(f"this key may not call {model_name(collection)}", status=403)


async def panel_events(request: Request, ask: Ask) -> AsyncIterator[PanelEvent]:
    """The panel's events, with its first one already taken, so seating
    errors surface before a response starts."""
    await check_collection(request, ask.collection)
    events = PanelEngine(runtime_of(request)).run(ask)
    first = await anext(events)

    async def chained() -> AsyncIterator[PanelEvent]:
        yield first
        async for event in events:
            yield event

    return chained()


@router.post("/v1/chat/completions")
async def chat_completions(request: Request) -> Response:
    ask = openai_chat.parse_ask(await read_json(request))
    if ask.mode == "route":
        await check_collection(request, ask.collection)
        return await route_response(request, ask, openai_route, stream_headers=SSE_HEADERS)
    events = await panel_events(request, ask)
    if ask.stream:
        return StreamingResponse(
            openai_chat.render_stream(events, ask),
            media_type=openai_chat.MEDIA_TYPE_STREAM,
            headers=SSE_HEADERS,
        )
    async for event in events:
        if isinstance(event, PanelDone):
            return JSONResponse(openai_chat.render_reply(event.reply, ask))
    raise RuntimeError("the panel ended without a reply")


@router.get("/v1/models")
async def models(request: Request) -> dict[str, Any]:
    """The collections this caller may call, with extra keys describing
    them (clients ignore keys they do not know; an orchestrator can choose a
    collection by its purpose)."""
    caller = caller_of(request)
    collections = await registry.list_collections(runtime_of(request).store)
    data = [
        {
            "id": model_name(c.name),
            "object": "model",
            "created": int(c.created_at.timestamp()),
            "owned_by": "benchwarmers",
            "purpose": c.purpose,
            "members": list(c.members),
            "reply": c.reply,
            "seats": c.seats or len(c.members),
            "explorerSeats": c.explorer_seats,
            "modes": [model_name(c.name), model_name(c.name, "merged"), model_name(c.name, "route")],
        }
        for c in collections
        if caller_may_call(caller, c.name)
    ]
    return {"object": "list", "data": data}
