"""Route mode in Anthropic Messages: one member's reply as Claude Code
expects it, whatever API the member spoke upstream.

Parsing is `anthropic.parse_ask` (system blocks, `tool_use` and
`tool_result` blocks, `tools`, `tool_choice`, `metadata.user_id` for route
asks). The reply is one assistant message: a text block for the member's
text, a `tool_use` block per tool call with the member's call id (an
OpenAI `call_...`, or an adapter's stable made-up id for Gemini and
Ollama) and its arguments as `input`, and `stop_reason` `tool_use`
whenever it called a tool, so the agent runs them and comes back.

Streamed, the events follow Anthropic's order: `message_start` (its message
already carries the `bench` object, so the call id is known from the first
event), then per block `content_block_start`, deltas (`text_delta`, or
`input_json_delta` pieces of the tool's arguments as they arrive) and
`content_block_stop`, then `message_delta` (stop reason, usage, `bench`) and
`message_stop`. Anthropic cannot reopen a closed block, so a member whose
pieces of two tool calls interleave is a bad reply. A failure after the
first byte ends the stream with Anthropic's `error` event, which the
official client raises.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

from benchwarmers import ids
from benchwarmers.errors import ProviderBadReply, ProviderError, ProviderRateLimited
from benchwarmers.formats.anthropic import new_message_id, sse_event, stop_reason
from benchwarmers.formats.base import arguments_object, model_name
from benchwarmers.types import (
    Ask,
    Chunk,
    Reply,
    ReplyBuilder,
    TextDelta,
    ToolCallDelta,
)

MEDIA_TYPE_STREAM = "text/event-stream"


def render_route_reply(reply: Reply, ask: Ask, bench: dict[str, Any]) -> dict[str, Any]:
    content: list[dict[str, Any]] = [{"type": "text", "text": reply.text}] if reply.text else []
    content += [_tool_use(call.id, call.name, arguments_object(call.arguments)) for call in reply.tool_calls]
    return {
        "id": new_message_id(),
        "type": "message",
        "role": "assistant",
        "model": model_name(ask.collection, ask.mode),
        "content": content,
        "stop_reason": stop_reason(reply.finish, bool(reply.tool_calls)),
        "stop_sequence": None,
        "usage": {"input_tokens": reply.usage.input_tokens, "output_tokens": reply.usage.output_tokens},
        "bench": bench,
    }


async def render_route_stream(
    chunks: AsyncIterator[Chunk], ask: Ask, bench: dict[str, Any]
) -> AsyncIterator[bytes]:
    yield sse_event(
        "message_start",
        message={
            "id": new_message_id(),
            "type": "message",
            "role": "assistant",
            "model": model_name(ask.collection, ask.mode),
            "content": [],
            "stop_reason": None,
            "stop_sequence": None,
            "usage": {"input_tokens": 0, "output_tokens": 0},
            "bench": bench,
        },
    )
    blocks = _Blocks()
    so_far = ReplyBuilder()  # usage and the finish, as they come
    try:
        async for piece in chunks:
            so_far.add(piece)
            if isinstance(piece, TextDelta | ToolCallDelta):
                for event in blocks.feed(piece):
                    yield event
    except ProviderError as exc:
        kind = "rate_limit_error" if isinstance(exc, ProviderRateLimited) else "api_error"
        message = f"the model's provider failed mid-reply: {exc}"
        yield sse_event("error", error={"type": kind, "message": message})
        return
    for event in blocks.close():
        yield event
    reply = so_far.reply()
    yield sse_event(
        "message_delta",
        delta={"stop_reason": stop_reason(reply.finish, blocks.called_tools), "stop_sequence": None},
        usage={"input_tokens": reply.usage.input_tokens, "output_tokens": reply.usage.output_tokens},
        bench=bench,
    )
    yield sse_event("message_stop")


class _Blocks:
    """Turns text and tool-call pieces into content-block events: one block
    open at a time, a new one whenever the kind or the tool call changes."""

    def __init__(self) -> None:
        self.index = -1
        self.open: tuple[str, int] | None = None  # ("text", 0) or ("tool", call index)
        self.tools_seen: set[int] = set()

    @property
    def called_tools(self) -> bool:
        return bool(self.tools_seen)

    def feed(self, piece: TextDelta | ToolCallDelta) -> list[bytes]:
        if isinstance(piece, TextDelta):
            if not piece.text:
                return []
            events = self._switch(("text", 0), {"type": "text", "text": ""})
            return [*events, self._delta({"type": "text_delta", "text": piece.text})]
        if ("tool", piece.index) != self.open and piece.index in self.tools_seen:
            raise ProviderBadReply("the member interleaved the pieces of two tool calls")
        events = []
        if ("tool", piece.index) != self.open:
            self.tools_seen.add(piece.index)
            call_id = piece.id or "toolu_" + ids.token_hex(12)
            events = self._switch(("tool", piece.index), _tool_use(call_id, piece.name, {}))
        if piece.arguments:
            events.append(self._delta({"type": "input_json_delta", "partial_json": piece.arguments}))
        return events

    def close(self) -> list[bytes]:
        if self.open is None:
            return []
        self.open = None
        return [sse_event("content_block_stop", index=self.index)]

    def _switch(self, block: tuple[str, int], start: dict[str, Any]) -> list[bytes]:
        if self.open == block:
            return []
        events = self.close()
        self.index += 1
        self.open = block
        return [*events, sse_event("content_block_start", index=self.index, content_block=start)]

    def _delta(self, delta: dict[str, Any]) -> bytes:
        return sse_event("content_block_delta", index=self.index, delta=delta)


def _tool_use(call_id: str, name: str, arguments: dict[str, Any]) -> dict[str, Any]:
    return {"type": "tool_use", "id": call_id, "name": name, "input": arguments}
