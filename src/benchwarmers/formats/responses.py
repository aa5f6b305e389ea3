"""OpenAI Responses (`POST /v1/responses`) in and out of a panel.

The Responses API is OpenAI's newer shape: `input` is a string or a list of
items (messages with typed content parts, function calls, reasoning...),
`instructions` is the system prompt, and a stream is a sequence of named SSE
events (`response.created`, `response.output_text.delta`, ...
`response.completed`) that each carry a `sequence_number`. A panel reply is
one assistant message whose text holds every seat; the `bench` object rides
as an extra key of the response object (the official client keeps unknown
keys), in the body and in `response.completed`.

What a panel cannot honour is refused, not dropped: tools and function-call
items (a panel answers with text), `previous_response_id` and
`conversation` (we keep no responses to continue from), structured output
formats, background mode, and content parts we do not know.
"""

from __future__ import annotations

import json
import time
import uuid
from collections.abc import AsyncIterator, Mapping
from typing import Any

from benchwarmers.errors import UserError
from benchwarmers.formats.base import (
    data_url_image,
    model_name,
    optional_bool,
    optional_float,
    optional_int,
    optional_str,
    parse_model_name,
    require_list,
    require_object,
    require_str,
    tools_refused,
)
from benchwarmers.formats.panel_text import StreamText, bench_object, reply_text, total_usage
from benchwarmers.types import (
    Ask,
    Image,
    Message,
    PanelDone,
    PanelEvent,
    PanelReply,
    PanelStarted,
    Part,
    Request,
    Sampling,
    SeatDone,
    Text,
    Usage,
)

NAME = "responses"
MEDIA_TYPE_STREAM = "text/event-stream"

ROUTE_ELSEWHERE = (
    "route mode is served over OpenAI chat completions (/v1/chat/completions) "
    "and Anthropic Messages (/v1/messages), not the Responses API"
)
_TEXT_PARTS = ("input_text", "output_text", "text")
_REFUSED_KEYS = {
    "previous_response_id": "we keep no responses to continue from; send the whole conversation as input",
    "conversation": "we keep no conversations; send the whole conversation as input",
    "prompt": "stored prompt templates are not kept here; send the text as input",
}


# ------------------------------------------------------------------ parsing


def parse_ask(body: object, *, model: str | None = None) -> Ask:
    obj = require_object(body)
    collection, mode = parse_model_name(obj.get("model") if model is None else model)
    if mode == "route":
        raise UserError(ROUTE_ELSEWHERE)
    _refuse_uncarried(obj)
    messages, system_items = _input_messages(obj.get("input"))
    if not messages:
        raise UserError("input must hold at least one user or assistant message")
    system = "\n\n".join(s for s in (optional_str(obj, "instructions"), *system_items) if s)
    sampling = Sampling(
        temperature=optional_float(obj, "temperature"),
        top_p=optional_float(obj, "top_p"),
        max_tokens=optional_int(obj, "max_output_tokens", minimum=1),
    )
    request = Request(messages=tuple(messages), system=system, sampling=sampling)
    return Ask(collection=collection, mode=mode, request=request, stream=optional_bool(obj, "stream"))


def _refuse_uncarried(obj: Mapping[str, Any]) -> None:
    tools = obj.get("tools")
    if tools is not None and require_list(tools, "tools"):
        raise tools_refused()
    choice = obj.get("tool_choice")
    if choice not in (None, "none", "auto"):
        raise tools_refused()
    for key, why in _REFUSED_KEYS.items():
        if obj.get(key) is not None:
            raise UserError(f"{key}: {why}")
    if optional_bool(obj, "background"):
        raise UserError("background: a panel answers while you wait; set background to false or leave it out")
    text = obj.get("text")
    if text is not None:
        fmt = require_object(text, "text").get("format")
        if fmt is not None:
            kind = require_object(fmt, "text.format").get("type")
            if kind != "text":
                raise UserError(f"text.format {kind!r}: a panel answers with plain text; use type 'text'")


def _input_messages(value: object) -> tuple[list[Message], list[str]]:
    """The conversation, and the text of any system/developer items (which
    join `instructions`, as the API treats them)."""
    if value is None:
        raise UserError("input is required: a string or an array of items")
    if isinstance(value, str):
        return [Message("user", (Text(value),))], []
    items = require_list(value, "input")
    messages: list[Message] = []
    system: list[str] = []
    for i, raw in enumerate(items):
        where = f"input[{i}]"
        item = require_object(raw, where)
        kind = item.get("type", "message")
        if kind in ("function_call", "function_call_output", "custom_tool_call", "custom_tool_call_output"):
            raise tools_refused()
        if kind != "message":
            raise UserError(f"{where}.type {kind!r} cannot be carried to a panel; send message items")
        role = item.get("role")
        parts = _content_parts(item.get("content"), f"{where}.content")
        if role in ("system", "developer"):
            system.append(_only_text(parts, where))
        elif role in ("user", "assistant"):
            messages.append(Message(role, parts))
        else:
            raise UserError(f"{where}.role must be user, assistant, system or developer, not {role!r}")
    return messages, system


def _content_parts(value: object, where: str) -> tuple[Part, ...]:
    if isinstance(value, str):
        return (Text(value),)
    parts: list[Part] = []
    for i, raw in enumerate(require_list(value, where)):
        here = f"{where}[{i}]"
        part = require_object(raw, here)
        kind = part.get("type")
        if kind in _TEXT_PARTS:
            parts.append(Text(require_str(part.get("text"), f"{here}.text")))
        elif kind == "input_image":
            parts.append(_image(part, here))
        else:
            raise UserError(
                f"{here}.type {kind!r} cannot be carried to a panel; send input_text or input_image"
            )
    return tuple(parts)


def _image(part: Mapping[str, Any], where: str) -> Image:
    if part.get("file_id") is not None:
        raise UserError(f"{where}.file_id: no files are kept here; send the image as a data URL")
    url = require_str(part.get("image_url"), f"{where}.image_url")
    inline = data_url_image(url)
    if inline is not None:
        return Image(media_type=inline[0], data=inline[1])
    if not url.startswith(("http://", "https://")):
        raise UserError(f"{where}.image_url must be a data: URL or an http(s) URL")
    return Image(media_type="", url=url)


def _only_text(parts: tuple[Part, ...], where: str) -> str:
    if any(not isinstance(p, Text) for p in parts):
        raise UserError(f"{where}: a system or developer message holds text only")
    return "".join(p.text for p in parts if isinstance(p, Text))


# ---------------------------------------------------------------- rendering


class _Ids:
    """One response's ids and clock, shared by its events."""

    def __init__(self) -> None:
        self.response = "resp_" + uuid.uuid4().hex
        self.message = "msg_" + uuid.uuid4().hex
        self.created_at = int(time.time())


def _response(
    ask: Ask, ids: _Ids, *, status: str, text: str | None, usage: Usage | None, bench: dict[str, Any] | None
) -> dict[str, Any]:
    sampling = ask.request.sampling
    out: dict[str, Any] = {
        "id": ids.response,
        "object": "response",
        "created_at": ids.created_at,
        "status": status,
        "model": model_name(ask.collection, ask.mode),
        "output": [] if text is None else [_message_item(ids, text, "completed")],
        "instructions": ask.request.system or None,
        "temperature": sampling.temperature,
        "top_p": sampling.top_p,
        "max_output_tokens": sampling.max_tokens,
        "parallel_tool_calls": False,
        "tool_choice": "none",
        "tools": [],
        "text": {"format": {"type": "text"}},
        "error": None,
        "incomplete_details": None,
        "metadata": {},
        "usage": None if usage is None else _usage(usage),
    }
    if bench is not None:
        out["bench"] = bench
    return out


def _message_item(ids: _Ids, text: str | None, status: str) -> dict[str, Any]:
    content = [] if text is None else [{"type": "output_text", "text": text, "annotations": []}]
    return {"type": "message", "id": ids.message, "status": status, "role": "assistant", "content": content}


def _usage(usage: Usage) -> dict[str, Any]:
    return {
        "input_tokens": usage.input_tokens,
        "input_tokens_details": {"cached_tokens": 0, "cache_write_tokens": 0},
        "output_tokens": usage.output_tokens,
        "output_tokens_details": {"reasoning_tokens": 0},
        "total_tokens": usage.input_tokens + usage.output_tokens,
    }


def render_reply(reply: PanelReply, ask: Ask) -> dict[str, Any]:
    return _response(
        ask,
        _Ids(),
        status="completed",
        text=reply_text(reply),
        usage=total_usage(reply),
        bench=bench_object(reply),
    )


async def render_stream(events: AsyncIterator[PanelEvent], ask: Ask) -> AsyncIterator[bytes]:
    ids = _Ids()
    stream_text = StreamText(merged=ask.mode == "merged")
    sequence = 0
    text = ""

    def event(kind: str, **fields: Any) -> bytes:
        nonlocal sequence
        data = {"type": kind, "sequence_number": sequence, **fields}
        sequence += 1
        return f"event: {kind}\ndata: {json.dumps(data, ensure_ascii=False)}\n\n".encode()

    where = {"item_id": ids.message, "output_index": 0, "content_index": 0}
    async for panel_event in events:
        piece = stream_text.piece(panel_event)
        if isinstance(panel_event, PanelStarted):
            opening = _response(ask, ids, status="in_progress", text=None, usage=None, bench=None)
            yield event("response.created", response=opening)
            yield event("response.in_progress", response=opening)
            yield event(
                "response.output_item.added", output_index=0, item=_message_item(ids, None, "in_progress")
            )
            empty_part = {"type": "output_text", "text": "", "annotations": []}
            yield event("response.content_part.added", **where, part=empty_part)
        if isinstance(panel_event, SeatDone) and stream_text.merged:
            # Held back for the merger; a comment keeps the connection alive.
            yield f": {panel_event.seat.seat} {panel_event.seat.status}\n\n".encode()
        if piece:
            text += piece
            yield event("response.output_text.delta", **where, delta=piece, logprobs=[])
        if isinstance(panel_event, PanelDone):
            reply = panel_event.reply
            done_part = {"type": "output_text", "text": text, "annotations": []}
            yield event("response.output_text.done", **where, text=text, logprobs=[])
            yield event("response.content_part.done", **where, part=done_part)
            yield event(
                "response.output_item.done", output_index=0, item=_message_item(ids, text, "completed")
            )
            final = _response(
                ask, ids, status="completed", text=text, usage=total_usage(reply), bench=bench_object(reply)
            )
            yield event("response.completed", response=final)
