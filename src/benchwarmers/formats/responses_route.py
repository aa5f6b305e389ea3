"""Route mode in the OpenAI Responses API: one member's reply as Codex CLI
expects it, whatever API the member spoke upstream.

Parsing is `responses.parse_ask` (tools, tool-call items, the conversation
key). The reply is a response whose `output` holds a `message` item for the
member's text, then one item per tool call in the kind the client declared
the tool: a `function_call` (with `namespace` for a namespace's function)
or a `custom_tool_call` whose `input` is the member's `input` argument.
A call's `call_id` is the member's own id (Gemini and Ollama members get
their adapter's stable made-up ids).

Streamed, the events are the API's own, numbered by `sequence_number`:
`response.created`, `response.in_progress`, then per item
`response.output_item.added`, its deltas (`response.output_text.delta`
inside a `content_part` for text; `response.function_call_arguments.delta`
as the member's argument pieces arrive; a custom tool's input in one
`response.custom_tool_call_input.delta`, since it is known only once its
JSON argument is whole) and their `.done` events, `response.output_item.done`,
and last `response.completed` with the whole output and usage (or
`response.incomplete` when the member hit its output limit). A failure
after the first byte ends the stream with `response.failed`.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from typing import Any

from benchwarmers import ids
from benchwarmers.errors import ProviderBadReply, ProviderError
from benchwarmers.formats.responses import (
    CUSTOM_INPUT,
    ResponseIds,
    ToolNames,
    message_item,
    output_text_part,
    response_body,
    response_status,
)
from benchwarmers.types import (
    Ask,
    Chunk,
    Reply,
    ReplyBuilder,
    TextDelta,
    ToolCall,
    ToolCallDelta,
)

MEDIA_TYPE_STREAM = "text/event-stream"


class ResponsesRoute:
    """The route renderer for one request: it knows how the client declared
    each tool (`responses.tool_names`), so each call goes back in that kind."""

    MEDIA_TYPE_STREAM = MEDIA_TYPE_STREAM

    def __init__(self, names: ToolNames) -> None:
        self.names = names

    def render_route_reply(self, reply: Reply, ask: Ask, bench: dict[str, Any]) -> dict[str, Any]:
        ids = ResponseIds()
        status, incomplete = response_status(reply.finish, bool(reply.tool_calls))
        output = [message_item(ids, reply.text, status)] if reply.text else []
        output += [self._call_item(_item_id(), call, "completed") for call in reply.tool_calls]
        return response_body(
            ask, ids, status=status, output=output, usage=reply.usage, bench=bench, incomplete=incomplete
        )

    async def render_route_stream(
        self, chunks: AsyncIterator[Chunk], ask: Ask, bench: dict[str, Any]
    ) -> AsyncIterator[bytes]:
        ids = ResponseIds()
        opening = response_body(ask, ids, status="in_progress", output=[], usage=None, bench=bench)
        yield ids.event("response.created", response=opening)
        yield ids.event("response.in_progress", response=opening)
        items = _Items(ids, self)
        so_far = ReplyBuilder()  # usage and the finish, as they come
        try:
            async for piece in chunks:
                so_far.add(piece)
                if isinstance(piece, TextDelta | ToolCallDelta):
                    for event in items.feed(piece):
                        yield event
        except ProviderError as exc:
            usage = so_far.usage
            failed = response_body(ask, ids, status="failed", output=items.done, usage=usage, bench=bench)
            failed["error"] = {
                "code": "server_error",
                "message": f"the model's provider failed mid-reply: {exc}",
            }
            yield ids.event("response.failed", response=failed)
            return
        status, incomplete = response_status(so_far.finish, items.called_tools)
        for event in items.close(status):
            yield event
        final = response_body(
            ask, ids, status=status, output=items.done, usage=so_far.usage, bench=bench, incomplete=incomplete
        )
        yield ids.event("response.incomplete" if incomplete else "response.completed", response=final)

    def _call_item(self, item_id: str, call: ToolCall, status: str) -> dict[str, Any]:
        declared = self.names.get(call.name)
        name = declared.name if declared else call.name
        item: dict[str, Any] = {"id": item_id, "call_id": call.id or _call_id(), "name": name}
        if declared is not None and declared.namespace:
            item["namespace"] = declared.namespace
        if declared is not None and declared.kind == "custom":
            return {"type": "custom_tool_call", **item, "input": _custom_input(call.arguments)}
        return {"type": "function_call", **item, "arguments": call.arguments or "{}", "status": status}


class _Items:
    """Turns text and tool-call pieces into output items and their events:
    one item open at a time, a new one whenever the kind or the call
    changes (a closed item cannot be reopened: interleaved calls are a bad
    reply, as in `anthropic_route`)."""

    def __init__(self, ids: ResponseIds, route: ResponsesRoute) -> None:
        self.ids = ids
        self.route = route
        self.done: list[dict[str, Any]] = []
        self.open: tuple[str, int] | None = None  # ("text", 0) or ("tool", call index)
        self.tools_seen: set[int] = set()
        self.text = ""
        self.call: dict[str, str] = {}

    @property
    def called_tools(self) -> bool:
        return bool(self.tools_seen)

    @property
    def where(self) -> dict[str, Any]:
        return {"output_index": len(self.done)}

    def feed(self, piece: TextDelta | ToolCallDelta) -> list[bytes]:
        event = self.ids.event
        if isinstance(piece, TextDelta):
            if not piece.text:
                return []
            events = self._switch(("text", 0))
            self.text += piece.text
            at = {"item_id": self.ids.message, **self.where, "content_index": 0}
            return [*events, event("response.output_text.delta", **at, delta=piece.text, logprobs=[])]
        if ("tool", piece.index) != self.open and piece.index in self.tools_seen:
            raise ProviderBadReply("the member interleaved the pieces of two tool calls")
        events = []
        if ("tool", piece.index) != self.open:
            events = self.close()  # before `self.call` becomes the next call's
            self.tools_seen.add(piece.index)
            self.call = {
                "item": _item_id(),
                "id": piece.id or _call_id(),
                "name": piece.name,
                "arguments": "",
            }
            events += self._switch(("tool", piece.index))
        self.call["arguments"] += piece.arguments
        if piece.arguments and not self._custom:
            at = {"item_id": self.call["item"], **self.where}
            events.append(event("response.function_call_arguments.delta", **at, delta=piece.arguments))
        return events

    def close(self, status: str = "completed") -> list[bytes]:
        """The open item's done events; `status` the text's (a reply cut at
        its output limit ends its message `incomplete`, as its response)."""
        event, opened, self.open = self.ids.event, self.open, None
        if opened is None:
            return []
        if opened[0] == "text":
            at = {"item_id": self.ids.message, **self.where, "content_index": 0}
            item = message_item(self.ids, self.text, status)
            events = [
                event("response.output_text.done", **at, text=self.text, logprobs=[]),
                event("response.content_part.done", **at, part=output_text_part(self.text)),
            ]
        else:
            call = ToolCall(self.call["id"], self.call["name"], self.call["arguments"])
            item = self.route._call_item(self.call["item"], call, "completed")
            at = {"item_id": self.call["item"], **self.where}
            if item["type"] == "custom_tool_call":
                events = [
                    event("response.custom_tool_call_input.delta", **at, delta=item["input"]),
                    event("response.custom_tool_call_input.done", **at, input=item["input"]),
                ]
            else:
                events = [
                    event(
                        "response.function_call_arguments.done",
                        **at,
                        name=item["name"],
                        arguments=item["arguments"],
                    )
                ]
        events.append(event("response.output_item.done", **self.where, item=item))
        self.done.append(item)
        return events

    @property
    def _custom(self) -> bool:
        declared = self.route.names.get(self.call.get("name", ""))
        return declared is not None and declared.kind == "custom"

    def _switch(self, block: tuple[str, int]) -> list[bytes]:
        if self.open == block:
            return []
        events = self.close()
        self.open = block
        event = self.ids.event
        if block[0] == "text":
            self.ids.message = "msg_" + ids.token_hex(16)
            self.text = ""
            at = {"item_id": self.ids.message, **self.where, "content_index": 0}
            return [
                *events,
                event(
                    "response.output_item.added",
                    **self.where,
                    item=message_item(self.ids, None, "in_progress"),
                ),
                event("response.content_part.added", **at, part=output_text_part("")),
            ]
        call = ToolCall(self.call["id"], self.call["name"], "")
        item = self.route._call_item(self.call["item"], call, "in_progress")
        if item["type"] == "function_call":
            item["arguments"] = ""
        return [*events, event("response.output_item.added", **self.where, item=item)]


def _custom_input(arguments: str) -> str:
    """A custom tool's input from the member's function arguments: the
    `input` string, or the arguments as sent when they are not that shape."""
    try:
        parsed = json.loads(arguments or "{}")
    except ValueError:
        return arguments
    if isinstance(parsed, dict) and isinstance(parsed.get(CUSTOM_INPUT), str):
        return str(parsed[CUSTOM_INPUT])
    return arguments


def _item_id() -> str:
    return "fc_" + ids.token_hex(16)


def _call_id() -> str:
    return "call_" + ids.token_hex(12)
