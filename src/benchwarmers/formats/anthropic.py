"""Anthropic Messages (`POST /v1/messages`, `/v1/messages/count_tokens`) in
and out of a panel.

Our internal messages are Anthropic-shaped, so reading this format is
nearly one-to-one: `system` (a string or text blocks), alternating
user/assistant messages whose content is a string or typed blocks (text,
images as base64 or URL, `tool_use`, `tool_result`), sampling options and
`stop_sequences`. Tool definitions and tool blocks are read faithfully so
that route mode (`bench/<c>:route`, which Claude Code drives) gets them; a
panel refuses them, since it answers with text.

A reply is one assistant message whose single text block holds every seat;
the `bench` object is an extra key of the message (the official client
keeps unknown keys) and, for streams, of the closing `message_delta` (which
the SDK's stream helper hands on as sent) and `message_stop` events.
A stream follows Anthropic's event order: `message_start`,
`content_block_start`, `ping`, a `content_block_delta` per piece,
`content_block_stop`, `message_delta` (stop reason, usage) and
`message_stop`.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Mapping
from typing import Any

from benchwarmers import ids, jsontext
from benchwarmers.errors import UserError
from benchwarmers.formats.base import (
    model_name,
    optional_bool,
    optional_float,
    optional_int,
    parse_model_name,
    require_list,
    require_object,
    require_str,
    stop_sequences,
    tools_refused,
    with_bench_options,
)
from benchwarmers.formats.bench_json import panel_json
from benchwarmers.formats.output import anthropic_output_format
from benchwarmers.formats.panel_text import StreamText, reply_text, total_usage
from benchwarmers.types import (
    Ask,
    FinishReason,
    Image,
    Message,
    OutputFormat,
    PanelDone,
    PanelEvent,
    PanelReply,
    PanelStarted,
    Part,
    Request,
    Sampling,
    SeatDone,
    Text,
    Tool,
    ToolCall,
    ToolResult,
    Usage,
)

NAME = "anthropic"
MEDIA_TYPE_STREAM = "text/event-stream"

# Blocks that only make sense to the model that wrote them (extended
# thinking carries a signature only Anthropic can verify): skipped in
# assistant history, where no other model could read them anyway.
_MODEL_PRIVATE_BLOCKS = ("thinking", "redacted_thinking")


# ------------------------------------------------------------------ parsing


def parse_ask(body: object, *, model: str | None = None) -> Ask:
    obj = require_object(body)
    collection, mode = parse_model_name(obj.get("model") if model is None else model)
    request = _request(obj)
    # `tool_choice` `none` or `auto` with no tools asks for no call: a panel can honour it.
    insists = request.tool_choice not in ("", "auto", "none")
    if mode != "route" and (request.tools or insists or _has_tool_parts(request)):
        raise tools_refused()
    conversation = _conversation(obj)
    stream = optional_bool(obj, "stream")
    ask = Ask(collection=collection, mode=mode, request=request, stream=stream, conversation=conversation)
    return with_bench_options(ask, obj.get("bench"))


def parse_count(body: object) -> Request:
    """The body of `/v1/messages/count_tokens`: a messages request without
    `max_tokens`; its tools count too, whatever the model."""
    obj = require_object(body)
    parse_model_name(obj.get("model"))
    return _request(obj)


def render_count(tokens: int) -> dict[str, Any]:
    return {"input_tokens": tokens}


def _request(obj: Mapping[str, Any]) -> Request:
    system = [_system(obj.get("system"), "system")]
    messages: list[Message] = []
    for i, raw in enumerate(require_list(obj.get("messages"), "messages")):
        where = f"messages[{i}]"
        if require_object(raw, where).get("role") == "system":
            system.append(_system(raw.get("content"), f"{where}.content"))
        else:
            messages.append(_message(raw, where))
    if not messages:
        raise UserError("messages must hold at least one user or assistant message")
    sampling = Sampling(
        temperature=optional_float(obj, "temperature"),
        top_p=optional_float(obj, "top_p"),
        top_k=optional_int(obj, "top_k", minimum=1),
        max_tokens=optional_int(obj, "max_tokens", minimum=1),
        stop=stop_sequences(obj.get("stop_sequences"), "stop_sequences"),
    )
    tools = tuple(
        _tool(raw, f"tools[{i}]") for i, raw in enumerate(require_list(obj.get("tools") or [], "tools"))
    )
    _refuse_uncarried(obj)
    return Request(
        messages=tuple(messages),
        system="\n\n".join(s for s in system if s),
        tools=tools,
        tool_choice=_tool_choice(obj.get("tool_choice")),
        sampling=sampling,
        output=_output(obj),
    )


def _output(obj: Mapping[str, Any]) -> OutputFormat | None:
    """`output_config.format` (the SDK's `messages.parse` sends it there; the
    rest of `output_config`, `effort`, is a hint for Anthropic's serving) or
    the structured-outputs beta's top-level `output_format`."""
    config = obj.get("output_config")
    in_config = require_object(config, "output_config").get("format") if config is not None else None
    beta = obj.get("output_format")
    if in_config is not None and beta is not None:
        raise UserError("output_format and output_config.format: send one of them")
    if beta is not None:
        return anthropic_output_format(beta, "output_format")
    return anthropic_output_format(in_config, "output_config.format")


def _system(value: object, where: str) -> str:
    """System text: the top-level `system`, or the content of a `role:
    "system"` entry inside `messages` (Claude Code 2.1 sends its
    environment, agent and skill lists and every MCP server's instructions
    so; the anthropic SDK 2.x types them `SystemMessageParam`). Each joins
    the system prompt in the order it stands: no API we call takes a system
    turn mid-conversation, and dropping it would lose the agent's
    instructions."""
    if value is None or isinstance(value, str):
        return value or ""
    texts = []
    for i, raw in enumerate(require_list(value, where)):
        block = require_object(raw, f"{where}[{i}]")
        if block.get("type") != "text":
            raise UserError(f"{where}[{i}].type must be 'text', not {block.get('type')!r}")
        texts.append(require_str(block.get("text"), f"{where}[{i}].text"))
    return "\n\n".join(texts)


# Request fields whose work happens on Anthropic's servers, which no other
# model can do for us: refused with the reason rather than silently dropped.
# Everything else a current client sends (`thinking`, `context_management`,
# `output_config` but its `format`, `service_tier`, `cache_control` on any block) is a hint
# for Anthropic's own serving and is ignored (docs/formats.md lists them).
_SERVER_SIDE = {
    "mcp_servers": "the MCP connector runs on Anthropic's servers; add the MCP server to your client",
    "container": "code-execution containers live on Anthropic's servers; no other model can reach them",
}


def _refuse_uncarried(obj: Mapping[str, Any]) -> None:
    for key, why in _SERVER_SIDE.items():
        if obj.get(key) is not None:
            raise UserError(f"{key}: {why}")


def _message(raw: object, where: str) -> Message:
    obj = require_object(raw, where)
    role = obj.get("role")
    if role not in ("user", "assistant"):
        raise UserError(f"{where}.role must be 'user', 'assistant' or 'system', not {role!r}")
    content = obj.get("content")
    if isinstance(content, str):
        return Message(role, (Text(content),))
    parts: list[Part] = []
    for i, block in enumerate(require_list(content, f"{where}.content")):
        part = _block(block, f"{where}.content[{i}]", role)
        if part is not None:
            parts.append(part)
    return Message(role, tuple(parts))


def _block(raw: object, where: str, role: str) -> Part | None:
    block = require_object(raw, where)
    kind = block.get("type")
    if kind == "text":
        return Text(require_str(block.get("text"), f"{where}.text"))
    if kind == "image":
        return _image(block.get("source"), f"{where}.source")
    if kind == "tool_use":
        arguments = json.dumps(require_object(block.get("input", {}), f"{where}.input"))
        return ToolCall(
            id=require_str(block.get("id"), f"{where}.id"),
            name=require_str(block.get("name"), f"{where}.name"),
            arguments=arguments,
        )
    if kind == "tool_result":
        is_error = optional_bool(block, "is_error", f"{where}.is_error")
        return ToolResult(
            call_id=require_str(block.get("tool_use_id"), f"{where}.tool_use_id"),
            content=_tool_result_text(block.get("content"), f"{where}.content"),
            is_error=is_error,
        )
    if kind in _MODEL_PRIVATE_BLOCKS and role == "assistant":
        return None
    raise UserError(
        f"{where}.type {kind!r} cannot be carried; send text, image, tool_use or tool_result blocks"
    )


def _image(raw: object, where: str) -> Image:
    source = require_object(raw, where)
    kind = source.get("type")
    if kind == "base64":
        media_type = require_str(source.get("media_type"), f"{where}.media_type")
        if not media_type.startswith("image/"):
            raise UserError(f"{where}.media_type must be an image type, not {media_type!r}")
        return Image(media_type=media_type, data=require_str(source.get("data"), f"{where}.data"))
    if kind == "url":
        url = require_str(source.get("url"), f"{where}.url")
        if not url.startswith(("http://", "https://")):
            raise UserError(f"{where}.url must be an http(s) URL")
        return Image(media_type="", url=url)
    raise UserError(f"{where}.type must be 'base64' or 'url', not {kind!r}")


def _tool_result_text(value: object, where: str) -> str:
    """A tool result as text. Blocks other than text become a short note
    (an image from Claude Code's Read of a screenshot, a `tool_reference`
    from its ToolSearch): tool results travel as text to every API, and
    refusing one would refuse every later turn of the conversation, which
    resends it."""
    if value is None or isinstance(value, str):
        return value or ""
    texts = []
    for i, raw in enumerate(require_list(value, where)):
        block = require_object(raw, f"{where}[{i}]")
        kind = block.get("type")
        if kind == "text":
            texts.append(require_str(block.get("text"), f"{where}[{i}].text"))
        elif kind == "image":
            texts.append("[the tool returned an image, which is not carried to this model]")
        elif kind == "tool_reference":
            texts.append(f"[tool {block.get('tool_name')!s} is now available]")
        else:
            texts.append(f"[the tool returned a {kind!s} block, which is not carried to this model]")
    return "\n".join(texts)


def _tool(raw: object, where: str) -> Tool:
    obj = require_object(raw, where)
    if obj.get("type") not in (None, "custom"):
        raise UserError(
            f"{where}.type {obj.get('type')!r}: Anthropic runs this tool on its own servers, "
            "so it cannot be carried to other models; define it as a client tool (name, input_schema)"
        )
    schema = obj.get("input_schema", {"type": "object", "properties": {}})
    description = obj.get("description")
    return Tool(
        name=require_str(obj.get("name"), f"{where}.name"),
        description="" if description is None else require_str(description, f"{where}.description"),
        parameters=dict(require_object(schema, f"{where}.input_schema")),
    )


def _tool_choice(value: object) -> str:
    if value is None:
        return ""
    choice = require_object(value, "tool_choice")
    kind = choice.get("type")
    if kind == "tool":
        return require_str(choice.get("name"), "tool_choice.name")
    if kind in ("auto", "none"):
        return str(kind)
    if kind == "any":
        return "required"
    raise UserError(f"tool_choice.type must be auto, any, tool or none, not {kind!r}")


def _has_tool_parts(request: Request) -> bool:
    return any(m.tool_calls or m.tool_results for m in request.messages)


def _conversation(obj: Mapping[str, Any]) -> str:
    """Route mode sticks a conversation to a member; Claude Code names its
    session in `metadata.user_id`."""
    metadata = obj.get("metadata")
    if metadata is None:
        return ""
    user_id = require_object(metadata, "metadata").get("user_id")
    return user_id if isinstance(user_id, str) else ""


# ---------------------------------------------------------------- rendering


def stop_reason(finish: FinishReason, called_tools: bool = False) -> str:
    """A reply's `stop_reason`, panel and route alike: `tool_use` whenever it
    called a tool (so the agent runs them and comes back), `max_tokens` when
    cut at its output limit."""
    if called_tools:
        return "tool_use"
    return "max_tokens" if finish == "length" else "end_turn"


def _message_body(
    ask: Ask, message_id: str, text: str | None, usage: Usage, finish: FinishReason = "stop"
) -> dict[str, Any]:
    return {
        "id": message_id,
        "type": "message",
        "role": "assistant",
        "model": model_name(ask.collection, ask.mode),
        "content": [] if text is None else [{"type": "text", "text": text}],
        "stop_reason": None if text is None else stop_reason(finish),
        "stop_sequence": None,
        "usage": {"input_tokens": usage.input_tokens, "output_tokens": usage.output_tokens},
    }


def render_reply(reply: PanelReply, ask: Ask) -> dict[str, Any]:
    body = _message_body(ask, new_message_id(), reply_text(reply), total_usage(reply), reply.finish)
    body["bench"] = panel_json(reply)
    return body


def new_message_id() -> str:
    return "msg_" + ids.token_hex(16)


def sse_event(kind: str, **fields: Any) -> bytes:
    return b"event: " + kind.encode() + b"\ndata: " + jsontext.dumps({"type": kind, **fields}) + b"\n\n"


async def render_stream(events: AsyncIterator[PanelEvent], ask: Ask) -> AsyncIterator[bytes]:
    stream_text = StreamText(merged=ask.mode == "merged", live=ask.seat_text)
    async for event in events:
        piece = stream_text.piece(event)
        if isinstance(event, PanelStarted):
            yield sse_event("message_start", message=_message_body(ask, new_message_id(), None, Usage()))
            yield sse_event("content_block_start", index=0, content_block={"type": "text", "text": ""})
            yield sse_event("ping")
        if isinstance(event, SeatDone) and stream_text.merged:
            yield sse_event("ping")  # seats are held back for the merger; keep the connection alive
        if piece:
            yield sse_event("content_block_delta", index=0, delta={"type": "text_delta", "text": piece})
        if isinstance(event, PanelDone):
            usage = total_usage(event.reply)
            bench = panel_json(event.reply)
            yield sse_event("content_block_stop", index=0)
            yield sse_event(
                "message_delta",
                delta={"stop_reason": stop_reason(event.reply.finish), "stop_sequence": None},
                usage={"input_tokens": usage.input_tokens, "output_tokens": usage.output_tokens},
                bench=bench,
            )
            yield sse_event("message_stop", bench=bench)
