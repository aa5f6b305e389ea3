"""Route mode in the Gemini API: one member's reply as google-genai
expects it, whatever API the member spoke upstream.

Parsing is `gemini.parse_ask` (function declarations, function calling
mode, `functionCall`/`functionResponse` parts). The reply is one candidate
whose parts are the member's text and a `functionCall` part per tool call
(`id` the member's call id, `args` an object), finish reason `STOP` (as
Gemini says after function calls too) or `MAX_TOKENS`. Streamed, text
pieces go out as chunks as they arrive, each function call in one chunk
once its arguments are whole (Gemini never splits a call), and the last
chunk carries the finish reason, usage and `bench`. Framing follows the
request: SSE with `?alt=sse`, else one JSON array. A failure after the
first byte ends the stream with Gemini's `{"error": ...}` object.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

from benchwarmers import ids, jsontext
from benchwarmers.errors import ProviderError
from benchwarmers.formats.base import arguments_object, model_name
from benchwarmers.formats.errors import error_body
from benchwarmers.formats.gemini import finish_reason, usage_metadata
from benchwarmers.types import (
    Ask,
    Chunk,
    FinishReason,
    Reply,
    ReplyBuilder,
    TextDelta,
    ToolCall,
    Usage,
)

# A member that failed mid-reply: the provider's failure, not the caller's.
MID_STREAM_STATUS = 502


class GeminiRoute:
    """The route renderer for one request, in its stream framing."""

    def __init__(self, *, sse: bool) -> None:
        self.sse = sse
        self.MEDIA_TYPE_STREAM = "text/event-stream" if sse else "application/json"

    def render_route_reply(self, reply: Reply, ask: Ask, bench: dict[str, Any]) -> dict[str, Any]:
        parts: list[dict[str, Any]] = [{"text": reply.text}] if reply.text else []
        parts += [_function_call(call) for call in reply.tool_calls]
        body = _chunk(ask, ids.token_hex(16), parts, finish=reply.finish, usage=reply.usage)
        return {**body, "bench": bench}

    async def render_route_stream(
        self, chunks: AsyncIterator[Chunk], ask: Ask, bench: dict[str, Any]
    ) -> AsyncIterator[bytes]:
        response_id = ids.token_hex(16)
        first = True

        def frame(chunk: dict[str, Any]) -> bytes:
            nonlocal first
            data = jsontext.dumps(chunk)
            if self.sse:
                return b"data: " + data + b"\r\n\r\n"
            lead = b"[" if first else b",\r\n"
            first = False
            return lead + data

        so_far = ReplyBuilder()  # tool calls made whole, usage, the finish
        try:
            async for piece in chunks:
                so_far.add(piece)
                if isinstance(piece, TextDelta) and piece.text:
                    yield frame(_chunk(ask, response_id, [{"text": piece.text}]))
        except ProviderError as exc:
            yield frame(
                error_body("gemini", MID_STREAM_STATUS, f"the model's provider failed mid-reply: {exc}")
            )
            if not self.sse:
                yield b"]"
            return
        reply = so_far.reply()
        parts = [_function_call(call) for call in reply.tool_calls]
        yield frame(
            {**_chunk(ask, response_id, parts, finish=reply.finish, usage=reply.usage), "bench": bench}
        )
        if not self.sse:
            yield b"]"


def _function_call(call: ToolCall) -> dict[str, Any]:
    return {"functionCall": {"id": call.id, "name": call.name, "args": arguments_object(call.arguments)}}


def _chunk(
    ask: Ask,
    response_id: str,
    parts: list[dict[str, Any]],
    *,
    finish: FinishReason | None = None,
    usage: Usage | None = None,
) -> dict[str, Any]:
    candidate: dict[str, Any] = {"content": {"role": "model", "parts": parts}, "index": 0}
    if finish is not None:
        candidate["finishReason"] = finish_reason(finish)
    out: dict[str, Any] = {"candidates": [candidate]}
    if usage is not None:
        out["usageMetadata"] = usage_metadata(usage)
    return {**out, "modelVersion": model_name(ask.collection, ask.mode), "responseId": response_id}
