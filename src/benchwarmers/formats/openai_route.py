"""Route mode in OpenAI chat completions: one member's reply, tool calls and
all, as the OpenAI API would have sent it.

Parsing is `openai_chat.parse_ask` (it reads `tools`, `tool_choice`,
assistant `tool_calls` and `tool` messages for route asks). What differs
from a panel is the reply: not every seat's text under headings, but one
model's message, whatever API the member spoke upstream: its text, its
`tool_calls` with the ids it gave (Gemini and Ollama members get stable
made-up ids from their adapters), a finish reason of `tool_calls` whenever
it called a tool (some APIs say "stop" then, which would end an agent's
loop), and a `bench` key saying who answered with which call id.

Streamed, the pieces go out as they come: a role chunk, `content` deltas,
`tool_calls` deltas (id, type and name on a call's first piece, argument
text after), then a chunk with the finish reason, usage and `bench`, and
`[DONE]`. A member that fails after its first byte cannot be replaced, so
the stream ends with an `error` chunk, which the official client raises.
"""

from __future__ import annotations

import time
from collections.abc import AsyncIterator
from typing import Any

from benchwarmers import jsontext
from benchwarmers.errors import ProviderError
from benchwarmers.formats.base import model_name
from benchwarmers.formats.errors import error_body
from benchwarmers.formats.openai_chat import chat_usage, chunk_writer, finish_reason, new_chat_id
from benchwarmers.types import (
    Ask,
    Chunk,
    Reply,
    ReplyBuilder,
    TextDelta,
    ToolCallDelta,
)

MEDIA_TYPE_STREAM = "text/event-stream"
# A member that failed mid-reply: the provider's failure, not the caller's.
MID_STREAM_STATUS = 502


def render_route_reply(reply: Reply, ask: Ask, bench: dict[str, Any]) -> dict[str, Any]:
    content = reply.text or (None if reply.tool_calls else "")
    message: dict[str, Any] = {"role": "assistant", "content": content}
    if reply.tool_calls:
        message["tool_calls"] = [
            {"id": c.id, "type": "function", "function": {"name": c.name, "arguments": c.arguments}}
            for c in reply.tool_calls
        ]
    return {
        "id": new_chat_id(),
        "object": "chat.completion",
        "created": int(time.time()),
        "model": model_name(ask.collection, ask.mode),
        "choices": [
            {
                "index": 0,
                "message": message,
                "finish_reason": finish_reason(reply.finish, bool(reply.tool_calls)),
                "logprobs": None,
            }
        ],
        "usage": chat_usage(reply.usage),
        "bench": bench,
    }


async def render_route_stream(
    chunks: AsyncIterator[Chunk], ask: Ask, bench: dict[str, Any]
) -> AsyncIterator[bytes]:
    chunk = chunk_writer(ask)
    yield chunk({"role": "assistant", "content": ""})
    started: set[int] = set()
    so_far = ReplyBuilder()  # usage and the finish, as they come
    try:
        async for piece in chunks:
            so_far.add(piece)
            if isinstance(piece, TextDelta):
                if piece.text:
                    yield chunk({"content": piece.text})
            elif isinstance(piece, ToolCallDelta):
                yield chunk({"tool_calls": [_tool_call_delta(piece, first=piece.index not in started)]})
                started.add(piece.index)
    except ProviderError as exc:
        message = f"the model's provider failed mid-reply: {exc}"
        yield _data(error_body("openai_chat", MID_STREAM_STATUS, message))
        return
    reply = so_far.reply()
    yield chunk({}, finish_reason(reply.finish, bool(started)), usage=chat_usage(reply.usage), bench=bench)
    yield b"data: [DONE]\n\n"


def _tool_call_delta(piece: ToolCallDelta, *, first: bool) -> dict[str, Any]:
    if not first:
        return {"index": piece.index, "function": {"arguments": piece.arguments}}
    return {
        "index": piece.index,
        "id": piece.id,
        "type": "function",
        "function": {"name": piece.name, "arguments": piece.arguments},
    }


def _data(body: dict[str, Any]) -> bytes:
    return b"data: " + jsontext.dumps(body) + b"\n\n"
