"""Route mode in Ollama's `/api/chat`: one member's reply as an Ollama
client (an agent on the `ollama` package) expects it, whatever API the
member spoke upstream.

Parsing is `ollama.parse_ask`. The reply is one assistant `message`: its
`content`, and `tool_calls` as Ollama writes them (`function.name`,
`function.arguments` as an object; the member's call id as `id`, which
newer clients send back as `tool_call_id`), `done_reason` "stop" (Ollama
says "stop" after tool calls too; the client looks for `tool_calls`) or
"length". Streamed (NDJSON, Ollama's default), text pieces go out as they
arrive, each tool call in one line once its arguments are whole (Ollama
never splits one), then the `"done": true` line with the counts and
`bench`. A failure after the first byte ends the stream with an
`{"error": ...}` line, which the official client raises.
"""

from __future__ import annotations

import time
from collections.abc import AsyncIterator
from typing import Any

from benchwarmers.errors import ProviderError
from benchwarmers.formats.base import arguments_object, model_name
from benchwarmers.formats.ollama import done_fields, line, now
from benchwarmers.types import (
    Ask,
    Chunk,
    Reply,
    ReplyBuilder,
    TextDelta,
    ToolCall,
)

MEDIA_TYPE_STREAM = "application/x-ndjson"


def render_route_reply(reply: Reply, ask: Ask, bench: dict[str, Any]) -> dict[str, Any]:
    message: dict[str, Any] = {"role": "assistant", "content": reply.text}
    if reply.tool_calls:
        message["tool_calls"] = [_tool_call(call, i) for i, call in enumerate(reply.tool_calls)]
    head = {"model": model_name(ask.collection, ask.mode), "created_at": now(), "message": message}
    return {**head, **done_fields(reply.finish, reply.usage, 0), "bench": bench}


async def render_route_stream(
    chunks: AsyncIterator[Chunk], ask: Ask, bench: dict[str, Any]
) -> AsyncIterator[bytes]:
    name = model_name(ask.collection, ask.mode)
    started = time.monotonic()

    def message(body: dict[str, Any]) -> bytes:
        return line({"model": name, "created_at": now(), "message": body, "done": False})

    so_far = ReplyBuilder()  # tool calls made whole, usage, the finish
    try:
        async for piece in chunks:
            so_far.add(piece)
            if isinstance(piece, TextDelta) and piece.text:
                yield message({"role": "assistant", "content": piece.text})
    except ProviderError as exc:
        yield line({"error": f"the model's provider failed mid-reply: {exc}"})
        return
    reply = so_far.reply()
    if reply.tool_calls:
        tool_calls = [_tool_call(call, i) for i, call in enumerate(reply.tool_calls)]
        yield message({"role": "assistant", "content": "", "tool_calls": tool_calls})
    done = done_fields(reply.finish, reply.usage, int((time.monotonic() - started) * 1e9))
    last = {"model": name, "created_at": now(), "message": {"role": "assistant", "content": ""}}
    yield line({**last, **done, "bench": bench})


def _tool_call(call: ToolCall, index: int) -> dict[str, Any]:
    return {
        "id": call.id,
        "function": {"index": index, "name": call.name, "arguments": arguments_object(call.arguments)},
    }
