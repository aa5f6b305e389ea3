"""What every format route's streamed reply shares: the headers that keep
proxies from buffering it, and the response around a format's byte stream.

SSE (OpenAI, Anthropic, Gemini) and NDJSON (Ollama) alike: a stream the
client reads piece by piece must not sit in a proxy's buffer or a cache.
"""

from __future__ import annotations

import dataclasses
from collections.abc import AsyncIterator

from fastapi.responses import StreamingResponse
from starlette.requests import Request

from benchwarmers.formats.base import STREAM_CHOICE_HEADER, seat_text_wanted
from benchwarmers.types import Ask

STREAM_HEADERS = {"cache-control": "no-cache", "x-accel-buffering": "no"}


def panel_stream_ask(request: Request, ask: Ask) -> Ask:
    """A streamed panel ask as its client wants the seats' text: as it is
    written (the default), or each seat's section as it finishes
    (`x-bench-stream: sections`). A merged ask shows one answer: no seat
    text is streamed for it."""
    live = seat_text_wanted(request.headers.get(STREAM_CHOICE_HEADER)) and ask.mode != "merged"
    return dataclasses.replace(ask, seat_text=live) if live else ask


def stream_response(body: AsyncIterator[bytes], media_type: str) -> StreamingResponse:
    """A format's rendered stream as the response, unbuffered."""
    return StreamingResponse(body, media_type=media_type, headers=STREAM_HEADERS)
