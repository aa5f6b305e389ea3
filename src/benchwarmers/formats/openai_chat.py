"""OpenAI chat completions, in and out: the format most clients speak, and
the worked example of the contract in `formats/base.py`.

In: `model`, `messages` (system/developer, user with text and image
parts, assistant with `tool_calls`, tool), sampling fields, `stream`, and
for route mode `tools`/`tool_choice`. An extension key, `bench`, lets a
client seat extra models: `{"bench": {"with": ["alias", ...]}}` (the CLI's
`--with` over HTTP). `response_format` (`json_object`, `json_schema`) asks
every seat for JSON (`formats/output.py`). Out: one `chat.completion` whose message holds the
panel text and whose extra `bench` key holds the seats; streamed, a role
chunk at once (the seats as planned in an extra `bench_started` key),
each seat's text as it is written (or its section whole as
it finishes, `x-bench-stream: sections`), each seat done as data in an
extra `bench_seat` key, `bench` (and usage) in the last chunk, then
`[DONE]`. What a panel cannot honour (`n` above 1, tools by any name, log
probabilities, audio) is refused, not dropped. `stream_options` without
`stream: true` is refused as OpenAI refuses it, panel and route mode alike;
`prediction` (predicted outputs: speed, never content) is accepted and not
passed on (docs/formats.md says why).
"""

from __future__ import annotations

import time
from collections.abc import AsyncIterator, Callable, Mapping
from typing import Any

from benchwarmers import ids, jsontext
from benchwarmers.errors import UserError
from benchwarmers.formats.base import (
    bench_with,
    data_url_image,
    logprobs_refused,
    model_name,
    optional_bool,
    optional_float,
    optional_int,
    optional_str,
    parse_model_name,
    require_list,
    require_object,
    require_str,
    stop_sequences,
    tools_refused,
    with_bench_options,
)
from benchwarmers.formats.bench_json import panel_json, seat_json, started_json
from benchwarmers.formats.output import chat_response_format
from benchwarmers.formats.panel_text import StreamText, reply_text, total_usage
from benchwarmers.types import (
    NO_SAMPLING,
    Ask,
    FinishReason,
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
    Tool,
    ToolCall,
    ToolResult,
    Usage,
)

NAME = "openai_chat"
MEDIA_TYPE_STREAM = "text/event-stream"


# ------------------------------------------------------------------ parsing


def parse_ask(body: object, *, model: str | None = None) -> Ask:
    obj = require_object(body)
    collection, mode = parse_model_name(obj.get("model") if model is None else model)
    n = optional_int(obj, "n", minimum=1)
    if n not in (None, 1):
        raise UserError('"n" must be 1: a panel already answers with every seat')
    stream = optional_bool(obj, "stream")
    if not stream and obj.get("stream_options") is not None:
        raise UserError(STREAM_OPTIONS_ALONE, field="stream_options")
    request = _request(obj)
    if mode != "route" and (request.tools or _has_tool_parts(request) or _asks_for_tools(obj)):
        raise tools_refused()
    if mode != "route":
        _refuse_uncarried(obj)
    ask = Ask(
        collection=collection,
        mode=mode,
        request=request,
        stream=stream,
        extra_aliases=_extras(obj.get("bench")),
        conversation=_conversation(obj),
    )
    return with_bench_options(ask, obj.get("bench"))


# OpenAI's own words (a 400, `param` "stream_options"), so a client sees what OpenAI would say.
STREAM_OPTIONS_ALONE = "The 'stream_options' parameter is only allowed when 'stream' is enabled."


def _request(obj: Mapping[str, Any]) -> Request:
    raw_messages = require_list(obj.get("messages"), "messages")
    system: list[str] = []
    messages: list[Message] = []
    for i, raw in enumerate(raw_messages):
        where = f"messages[{i}]"
        message = require_object(raw, where)
        role = require_str(message.get("role"), f"{where}.role")
        if role in ("system", "developer"):
            system.append(_text_only(message.get("content"), f"{where}.content"))
        elif role == "user":
            messages.append(Message("user", _user_parts(message.get("content"), f"{where}.content")))
        elif role == "assistant":
            messages.append(Message("assistant", _assistant_parts(message, where)))
        elif role in ("tool", "function"):
            call_id = optional_str(message, "tool_call_id", f"{where}.tool_call_id")
            result = ToolResult(
                call_id, _text_only(message.get("content"), f"{where}.content"), optional_str(message, "name")
            )
            _append_user_part(messages, result)
        else:
            raise UserError(f"{where}.role must be system, developer, user, assistant or tool, not {role!r}")
    if not any(m.role == "user" for m in messages):
        raise UserError("messages must hold at least one user message")
    return Request(
        messages=tuple(messages),
        system="\n\n".join(s for s in system if s),
        tools=function_tools(obj.get("tools")),
        tool_choice=_tool_choice(obj.get("tool_choice")),
        sampling=_sampling(obj),
        output=chat_response_format(obj.get("response_format")),
    )


def _sampling(obj: Mapping[str, Any]) -> Sampling:
    """The sampling fields; a body with none of them (most) skips their six checks."""
    if obj.keys().isdisjoint(_SAMPLING_KEYS):
        return NO_SAMPLING
    max_tokens = optional_int(obj, "max_completion_tokens", minimum=1) or optional_int(
        obj, "max_tokens", minimum=1
    )
    return Sampling(
        temperature=optional_float(obj, "temperature"),
        top_p=optional_float(obj, "top_p"),
        max_tokens=max_tokens,
        stop=stop_sequences(obj.get("stop")),
        seed=optional_int(obj, "seed", minimum=-(2**63)),
    )


_SAMPLING_KEYS = frozenset({"max_completion_tokens", "max_tokens", "temperature", "top_p", "stop", "seed"})


def _text_only(content: object, where: str) -> str:
    """System and tool content: a string or an array of text parts."""
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    texts = []
    for i, part in enumerate(require_list(content, where)):
        part = require_object(part, f"{where}[{i}]")
        texts.append(require_str(part.get("text"), f"{where}[{i}].text"))
    return "\n".join(texts)


def _user_parts(content: object, where: str) -> tuple[Part, ...]:
    if isinstance(content, str):
        return (Text(content),)
    parts: list[Part] = []
    for i, raw in enumerate(require_list(content, where)):
        part = require_object(raw, f"{where}[{i}]")
        kind = part.get("type")
        if kind == "text":
            parts.append(Text(require_str(part.get("text"), f"{where}[{i}].text")))
        elif kind == "image_url":
            image = require_object(part.get("image_url"), f"{where}[{i}].image_url")
            url = require_str(image.get("url"), f"{where}[{i}].image_url.url")
            inline = data_url_image(url)
            parts.append(Image(inline[0], data=inline[1]) if inline else Image("", url=url))
        else:
            raise UserError(f"{where}[{i}].type must be text or image_url, not {kind!r}")
    return tuple(parts)


def _assistant_parts(message: Mapping[str, Any], where: str) -> tuple[Part, ...]:
    parts: list[Part] = []
    text = _text_only(message.get("content"), f"{where}.content")
    if text:
        parts.append(Text(text))
    for i, raw in enumerate(require_list(message.get("tool_calls") or [], f"{where}.tool_calls")):
        call = require_object(raw, f"{where}.tool_calls[{i}]")
        function = require_object(call.get("function"), f"{where}.tool_calls[{i}].function")
        parts.append(
            ToolCall(
                id=optional_str(call, "id", f"{where}.tool_calls[{i}].id"),
                name=require_str(function.get("name"), f"{where}.tool_calls[{i}].function.name"),
                arguments=optional_str(function, "arguments", f"{where}.tool_calls[{i}].function.arguments"),
            )
        )
    return tuple(parts)


def _append_user_part(messages: list[Message], part: Part) -> None:
    """Tool results are parts of a user message; consecutive ones share it."""
    if messages and messages[-1].role == "user" and messages[-1].tool_results:
        messages[-1] = Message("user", (*messages[-1].parts, part))
    else:
        messages.append(Message("user", (part,)))


def function_tools(value: object) -> tuple[Tool, ...]:
    """`tools` as OpenAI chat completions (and Ollama) declare them:
    `{"type": "function", "function": {name, description, parameters}}`."""
    tools: list[Tool] = []
    for i, raw in enumerate(require_list(value or [], "tools")):
        tool = require_object(raw, f"tools[{i}]")
        function = require_object(tool.get("function"), f"tools[{i}].function")
        parameters = function.get("parameters") or {"type": "object", "properties": {}}
        tools.append(
            Tool(
                name=require_str(function.get("name"), f"tools[{i}].function.name"),
                description=optional_str(function, "description", f"tools[{i}].function.description"),
                parameters=dict(require_object(parameters, f"tools[{i}].function.parameters")),
            )
        )
    return tuple(tools)


def _tool_choice(value: object) -> str:
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    choice = require_object(value, "tool_choice")
    function = require_object(choice.get("function"), "tool_choice.function")
    return require_str(function.get("name"), "tool_choice.function.name")


def _has_tool_parts(request: Request) -> bool:
    return any(m.tool_calls or m.tool_results for m in request.messages)


def _asks_for_tools(obj: Mapping[str, Any]) -> bool:
    """Tools by their older names (`functions`, `function_call`), or a
    `tool_choice` that insists on a call: a panel would silently answer in
    text where the client waits for a call. `none` and `auto` (what many
    clients always send) ask nothing."""
    if obj.get("functions"):
        return True
    return any(obj.get(key) not in (None, "none", "auto") for key in ("function_call", "tool_choice"))


def _refuse_uncarried(obj: Mapping[str, Any]) -> None:
    """What a panel's reply cannot hold is refused, not silently dropped:
    token log probabilities (a panel's text is no one model's tokens) and
    audio output. Their off values (`logprobs: false`, `modalities:
    ["text"]`) pass, as some clients always send them."""
    if optional_bool(obj, "logprobs") or optional_int(obj, "top_logprobs"):
        raise logprobs_refused("logprobs")
    modalities = [m for m in require_list(obj.get("modalities") or [], "modalities") if m != "text"]
    if modalities or obj.get("audio") is not None:
        raise UserError("modalities: a panel answers in text only; leave audio out")


def _extras(value: object) -> tuple[str, ...]:
    """`bench.with` read here too, as route mode's ask is not given the
    body's other bench options (`with_bench_options`) but refuses a bad one."""
    return () if value is None else bench_with(require_object(value, "bench"))


def _conversation(obj: Mapping[str, Any]) -> str:
    """A conversation key the client gave, for route mode's stickiness:
    `metadata.conversation_id`/`session_id`, else `user`. Whole: route mode
    stores only its digest, so two ids that differ anywhere stay apart."""
    metadata = obj.get("metadata")
    if isinstance(metadata, Mapping):
        for key in ("conversation_id", "session_id"):
            if isinstance(metadata.get(key), str) and metadata[key]:
                return str(metadata[key])
    user = obj.get("user")
    return user if isinstance(user, str) else ""


# ---------------------------------------------------------------- rendering


def chat_usage(usage: Usage) -> dict[str, int]:
    return {
        "prompt_tokens": usage.input_tokens,
        "completion_tokens": usage.output_tokens,
        "total_tokens": usage.input_tokens + usage.output_tokens,
    }


def finish_reason(finish: FinishReason, called_tools: bool = False) -> str:
    """A reply's `finish_reason`, panel and route alike: `tool_calls` whenever
    it called a tool (some APIs say "stop" then, which would end an agent's
    loop), `length` when cut at its output limit."""
    if called_tools:
        return "tool_calls"
    return _FINISH_REASONS.get(finish, "stop")


# Our finish reasons OpenAI's `finish_reason` names alike; any other is "stop".
_FINISH_REASONS: dict[FinishReason, str] = {"length": "length", "content_filter": "content_filter"}


def new_chat_id() -> str:
    return "chatcmpl-" + ids.token_urlsafe(18)


def render_reply(reply: PanelReply, ask: Ask) -> dict[str, Any]:
    return {
        "id": new_chat_id(),
        "object": "chat.completion",
        "created": int(time.time()),
        "model": model_name(ask.collection, ask.mode),
        "choices": [
            {
                "index": 0,
                "message": {"role": "assistant", "content": reply_text(reply)},
                "finish_reason": finish_reason(reply.finish),
                "logprobs": None,
            }
        ],
        "usage": chat_usage(total_usage(reply)),
        "bench": panel_json(reply),
    }


def chunk_writer(ask: Ask) -> Callable[..., bytes]:
    """The `data:` line of each chunk of one streamed completion (its id,
    time and model fixed), for panel and route streams alike:
    `chunk(delta, finish=None, **extra)`, `extra` being top-level keys
    (`usage`, `bench`, `bench_seat`, `bench_started`)."""
    completion_id, created, model = new_chat_id(), int(time.time()), model_name(ask.collection, ask.mode)

    def chunk(delta: dict[str, Any], finish: str | None = None, **extra: Any) -> bytes:
        body = {
            "id": completion_id,
            "object": "chat.completion.chunk",
            "created": created,
            "model": model,
            "choices": [{"index": 0, "delta": delta, "finish_reason": finish, "logprobs": None}],
            **extra,
        }
        return b"data: " + jsontext.dumps(body) + b"\n\n"

    return chunk


async def render_stream(events: AsyncIterator[PanelEvent], ask: Ask) -> AsyncIterator[bytes]:
    chunk = chunk_writer(ask)
    text = StreamText(live=ask.seat_text)
    async for event in events:
        piece = text.piece(event)
        if isinstance(event, PanelStarted):
            # The seats as planned beside the role (clients ignore the extra key; the
            # CLI letters a blind panel's seats from it before any has answered).
            yield chunk({"role": "assistant", "content": ""}, bench_started=started_json(event))
        elif isinstance(event, SeatDone):
            # The seat as data beside its text (clients ignore the extra key;
            # the CLI prints from it). When merging, its text is held back.
            yield chunk({"content": piece} if piece else {}, bench_seat=seat_json(event.seat))
            continue
        if piece:
            yield chunk({"content": piece})
        if isinstance(event, PanelDone):
            reply = event.reply
            yield chunk(
                {}, finish_reason(reply.finish), usage=chat_usage(total_usage(reply)), bench=panel_json(reply)
            )
            yield b"data: [DONE]\n\n"
