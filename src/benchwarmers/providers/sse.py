"""Line framings of streamed replies: Server-Sent Events and NDJSON.

Three of the four APIs stream SSE (OpenAI, Anthropic, Gemini with
`alt=sse`); Ollama streams one JSON object per line. Both readers take the
body's lines (the transport splits them) and know nothing of any API, so the
transport can frame a stream once and each adapter only reads events.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class SseEvent:
    """One dispatched SSE event: its `event:` name ("" when none was sent)
    and its `data:` lines joined by newlines."""

    name: str
    data: str


async def sse_events(lines: AsyncIterator[str]) -> AsyncIterator[SseEvent]:
    """Events as the SSE spec dispatches them: on a blank line, with `:`
    comments ignored. An event still pending when the body ends is dropped,
    as the spec says, so a cut stream never yields half an event."""
    name = ""
    data: list[str] = []
    async for raw in lines:
        line = raw.rstrip("\r\n")
        if not line:
            if data:
                yield SseEvent(name, "\n".join(data))
            name, data = "", []
            continue
        if line.startswith(":"):
            continue
        field, _, value = line.partition(":")
        value = value.removeprefix(" ")
        if field == "event":
            name = value
        elif field == "data":
            data.append(value)


async def ndjson_lines(lines: AsyncIterator[str]) -> AsyncIterator[str]:
    """Non-blank lines, each one JSON document."""
    async for raw in lines:
        line = raw.strip()
        if line:
            yield line
