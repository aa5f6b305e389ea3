"""The Ollama face of the gateway: `POST /api/chat`, `POST /api/generate`,
`GET /api/tags`, `POST /api/show`, `GET /api/version`.

Glue only: `formats.ollama` reads the bodies and writes replies and NDJSON
streams (Ollama streams unless told `"stream": false`). A whole reply
carries `bench` in the body and in the `x-bench` header, since Ollama's
client keeps only the fields it knows. An empty chat or prompt is Ollama's
"load the model" and is answered at once, asking no one, once the
collection is known to exist.
"""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Request
from fastapi.responses import JSONResponse, Response, StreamingResponse

from benchwarmers.formats import ollama
from benchwarmers.formats.base import bench_header, model_name
from benchwarmers.server.callers import caller_may_call, caller_of
from benchwarmers.server.deps import runtime_of
from benchwarmers.server.errors import read_json
from benchwarmers.server.routes.openai_chat import check_collection, panel_events
from benchwarmers.store import registry
from benchwarmers.types import Ask, PanelDone

router = APIRouter()

NDJSON_HEADERS = {"cache-control": "no-cache", "x-accel-buffering": "no"}


@router.post("/api/chat")
async def chat(request: Request) -> Response:
    return await _answer(request, generate=False)


@router.post("/api/generate")
async def generate(request: Request) -> Response:
    return await _answer(request, generate=True)


async def _answer(request: Request, *, generate: bool) -> Response:
    body = await read_json(request)
    if ollama.is_load(body, generate=generate):
        collection, _mode = ollama.ask_model(body)
        await check_collection(request, collection)
        return JSONResponse(ollama.render_load(body, generate=generate))
    ask: Ask = ollama.parse_generate(body) if generate else ollama.parse_ask(body)
    events = await panel_events(request, ask)
    if ask.stream:
        return StreamingResponse(
            ollama.render_stream(events, ask, generate=generate),
            media_type=ollama.MEDIA_TYPE_STREAM,
            headers=NDJSON_HEADERS,
        )
    async for event in events:
        if isinstance(event, PanelDone):
            reply = ollama.render_reply(event.reply, ask, generate=generate)
            return JSONResponse(reply, headers=bench_header(event.reply))
    raise RuntimeError("the panel ended without a reply")


@router.get("/api/tags")
async def tags(request: Request) -> dict[str, Any]:
    """The collections this caller may call, each as its panel and its
    merged name."""
    caller = caller_of(request)
    models = [
        ollama.tag_object(model_name(c.name, mode), c.created_at.isoformat())
        for c in await registry.list_collections(runtime_of(request).store)
        if caller_may_call(caller, c.name)
        for mode in ("panel", "merged")
    ]
    return {"models": models}


@router.post("/api/show")
async def show(request: Request) -> dict[str, Any]:
    collection, mode = ollama.show_model(await read_json(request))
    await check_collection(request, collection)
    view = await registry.get_collection(runtime_of(request).store, collection)
    return ollama.show_object(
        model_name(collection, mode), description=view.purpose, modified_at=view.created_at.isoformat()
    )


@router.get("/api/version")
async def version() -> dict[str, str]:
    return {"version": ollama.OLLAMA_VERSION}
