"""What every format route's streamed reply shares: the headers that keep
proxies from buffering it, and the response around a format's byte stream.

SSE (OpenAI, Anthropic, Gemini) and NDJSON (Ollama) alike: a stream the
client reads piece by piece must not sit in a proxy's buffer or a cache.
"""

from __future__ import annotations

from collections.abc import AsyncIterator

from fastapi.responses import StreamingResponse

STREAM_HEADERS = {"cache-control": "no-cache", "x-accel-buffering": "no"}


def stream_response(body: AsyncIterator[bytes], media_type: str) -> StreamingResponse:
    """A format's rendered stream as the response, unbuffered."""
    return StreamingResponse(body, media_type=media_type, headers=STREAM_HEADERS)
