"""OpenAI Responses (`POST /v1/responses`) in and out of a panel.

The Responses API is OpenAI's newer shape: `input` is a string or a list of
items (messages with typed content parts, function calls, reasoning...),
`instructions` is the system prompt, and a stream is a sequence of named SSE
events (`response.created`, `response.output_text.delta`, ...
`response.completed`) that each carry a `sequence_number`. A panel reply is
one assistant message whose text holds every seat; the `bench` object rides
as an extra key of the response object (the official client keeps unknown
keys), in the body and in `response.completed` (or `response.incomplete`,
when every seat that answered was cut at its output limit).

What a panel cannot honour is refused, not dropped: tools and function-call
items (a panel answers with text), `previous_response_id` and
`conversation` (we keep no responses to continue from), background mode, and content parts we do not know.

Route mode (`bench/<c>:route`, what Codex CLI drives) reads the rest of
what an agent sends: `tools` (function tools; custom tools, which take one
free-form string, become a function of one string `input`; a namespace's
functions become `<namespace>__<name>`), `function_call`,
`function_call_output`, `custom_tool_call` and `custom_tool_call_output`
items, `tool_choice`, and the conversation key (`prompt_cache_key`, else
`client_metadata.session_id`, else `metadata`/`user`). `ToolNames` keeps
how each tool was declared, so `responses_route` answers a call in the
kind the client declared. Tools OpenAI runs on its own servers
(`web_search`, `file_search`, `code_interpreter`, ...) are left out: no
member can run them. `reasoning` items (encrypted, readable only by the
model that wrote them), `reasoning`, `store`, `include`,
`parallel_tool_calls` and `prompt_cache_key`'s caching intent are accepted
and change nothing.
"""

from __future__ import annotations

import json
import time
from collections.abc import AsyncIterator, Mapping
from dataclasses import dataclass
from typing import Any, Literal

from benchwarmers import ids, jsontext
from benchwarmers.errors import UserError
from benchwarmers.formats.base import (
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
    tools_refused,
    with_bench_options,
)
from benchwarmers.formats.bench_json import panel_json
from benchwarmers.formats.output import responses_text_format
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

NAME = "responses"
MEDIA_TYPE_STREAM = "text/event-stream"

_TEXT_PARTS = ("input_text", "output_text", "text")
_LOGPROBS = "message.output_text.logprobs"  # an `include` a panel cannot fill
_REFUSED_KEYS = {
    "previous_response_id": "we keep no responses to continue from; send the whole conversation as input "
    "(store: false, as Codex does)",
    "conversation": "we keep no conversations; send the whole conversation as input",
    "prompt": "stored prompt templates are not kept here; send the text as input",
}


# ------------------------------------------------------------------ parsing


def parse_ask(body: object, *, model: str | None = None) -> Ask:
    obj = require_object(body)
    collection, mode = parse_model_name(obj.get("model") if model is None else model)
    route = mode == "route"
    _refuse_uncarried(obj, route=route)
    names = tool_names(obj) if route else {}
    messages, system_items = _input_messages(obj.get("input"), names if route else None)
    if not any(m.role == "user" for m in messages):
        raise UserError("input must hold at least one user message")
    system = "\n\n".join(s for s in (optional_str(obj, "instructions"), *system_items) if s)
    sampling = Sampling(
        temperature=optional_float(obj, "temperature"),
        top_p=optional_float(obj, "top_p"),
        max_tokens=optional_int(obj, "max_output_tokens", minimum=1),
    )
    request = Request(
        messages=tuple(messages),
        system=system,
        tools=tuple(n.tool for n in names.values()),
        tool_choice=_tool_choice(obj.get("tool_choice"), names) if route else "",
        sampling=sampling,
        output=_text_format(obj.get("text")),
    )
    ask = Ask(
        collection=collection,
        mode=mode,
        request=request,
        stream=optional_bool(obj, "stream"),
        conversation=_conversation(obj),
    )
    return with_bench_options(ask, obj.get("bench"))


def _refuse_uncarried(obj: Mapping[str, Any], *, route: bool) -> None:
    if not route:
        tools = obj.get("tools")
        if tools is not None and require_list(tools, "tools"):
            raise tools_refused()
        if obj.get("tool_choice") not in (None, "none", "auto"):
            raise tools_refused()
        include = require_list(obj.get("include") or [], "include")
        if optional_int(obj, "top_logprobs") or _LOGPROBS in include:
            raise logprobs_refused("top_logprobs")
    for key, why in _REFUSED_KEYS.items():
        if obj.get(key) is not None:
            raise UserError(f"{key}: {why}")
    if optional_bool(obj, "background"):
        raise UserError("background: a panel answers while you wait; set background to false or leave it out")


def _text_format(text: object) -> OutputFormat | None:
    """`text.format`: plain text, or JSON (against a schema) from every seat."""
    if text is None:
        return None
    return responses_text_format(require_object(text, "text").get("format"))


_TOOL_ITEMS = ("function_call", "function_call_output", "custom_tool_call", "custom_tool_call_output")


def _input_messages(value: object, names: ToolNames | None) -> tuple[list[Message], list[str]]:
    """The conversation, and the text of any system/developer items (which
    join `instructions`, as the API treats them). `names` is None for a
    panel, which refuses tool items; in route mode they fold into assistant
    tool calls and user tool results."""
    if value is None:
        raise UserError("input is required: a string or an array of items")
    if isinstance(value, str):
        return [Message("user", (Text(value),))], []
    items = require_list(value, "input")
    messages: list[Message] = []
    system: list[str] = []
    called: dict[str, str] = {}  # call id -> tool name, for results (Gemini and Ollama want it)
    for i, raw in enumerate(items):
        where = f"input[{i}]"
        item = require_object(raw, where)
        kind = item.get("type", "message")
        if kind in _TOOL_ITEMS and names is None:
            raise tools_refused()
        if kind in _TOOL_ITEMS:
            _tool_item(messages, item, kind, where, called)
            continue
        if kind == "reasoning" and names is not None:
            continue  # encrypted, for the model that wrote it only
        if kind != "message":
            carried = "message items" if names is None else "message, function_call and tool output items"
            raise UserError(f"{where}.type {kind!r} cannot be carried; send {carried}")
        role = item.get("role")
        parts = _content_parts(item.get("content"), f"{where}.content")
        if role in ("system", "developer"):
            system.append(_only_text(parts, where))
        elif role == "assistant":
            _append(messages, "assistant", parts)
        elif role == "user":
            messages.append(Message(role, parts))
        else:
            raise UserError(f"{where}.role must be user, assistant, system or developer, not {role!r}")
    return messages, system


def _tool_item(
    messages: list[Message], item: Mapping[str, Any], kind: str, where: str, called: dict[str, str]
) -> None:
    call_id = require_str(item.get("call_id"), f"{where}.call_id")
    if kind in ("function_call", "custom_tool_call"):
        name = require_str(item.get("name"), f"{where}.name")
        namespace = optional_str(item, "namespace", f"{where}.namespace")
        if namespace:
            name = namespaced(namespace, name)
        if kind == "function_call":
            arguments = optional_str(item, "arguments", f"{where}.arguments")
        else:
            arguments = json.dumps({CUSTOM_INPUT: optional_str(item, "input", f"{where}.input")})
        called[call_id] = name
        _append(messages, "assistant", (ToolCall(call_id, name, arguments),))
        return
    result = ToolResult(call_id, _output_text(item.get("output"), f"{where}.output"), called.get(call_id, ""))
    if messages and messages[-1].role == "user" and messages[-1].tool_results:
        _append(messages, "user", (result,))
    else:
        messages.append(Message("user", (result,)))


def _append(messages: list[Message], role: Literal["user", "assistant"], parts: tuple[Part, ...]) -> None:
    """An assistant's text and its tool calls arrive as separate items but
    are one turn (APIs that alternate roles need them so); consecutive tool
    outputs are one user turn likewise."""
    if messages and messages[-1].role == role:
        messages[-1] = Message(messages[-1].role, (*messages[-1].parts, *parts))
    else:
        messages.append(Message(role, parts))


def _output_text(value: object, where: str) -> str:
    """A tool's output: a string, or input parts of which text is carried
    (an image becomes a note: tool results travel as text to every API)."""
    if value is None or isinstance(value, str):
        return value or ""
    texts = []
    for i, raw in enumerate(require_list(value, where)):
        part = require_object(raw, f"{where}[{i}]")
        if part.get("type") in _TEXT_PARTS:
            texts.append(require_str(part.get("text"), f"{where}[{i}].text"))
        else:
            texts.append(
                f"[the tool returned a {part.get('type')!s} part, which is not carried to this model]"
            )
    return "\n".join(texts)


# ------------------------------------------------------------------- tools

# The one argument a custom tool's function takes: its free-form input.
CUSTOM_INPUT = "input"
NAMESPACE_JOIN = "__"
# Tools OpenAI runs on its own servers: no member can run them, so they are
# left out of what the member is offered (Codex offers `web_search` always).
HOSTED_TOOLS: tuple[str, ...] = ("web_search", "file_search", "code_interpreter", "image_generation")
HOSTED_TOOLS += ("computer_use_preview", "computer", "mcp", "tool_search")


@dataclass(frozen=True, slots=True)
class ToolName:
    """How the client declared a tool: `function` or `custom`, its own name
    and namespace; `tool` is what the member is offered."""

    tool: Tool
    kind: Literal["function", "custom"] = "function"
    name: str = ""
    namespace: str = ""


ToolNames = dict[str, ToolName]  # by the name the member sees


def namespaced(namespace: str, name: str) -> str:
    return f"{namespace}{NAMESPACE_JOIN}{name}"


def tool_names(body: Mapping[str, Any]) -> ToolNames:
    """The request's tools as the member is offered them, by that name."""
    names: ToolNames = {}
    for i, raw in enumerate(require_list(body.get("tools") or [], "tools")):
        where = f"tools[{i}]"
        tool = require_object(raw, where)
        kind = tool.get("type")
        if kind == "namespace":
            namespace = require_str(tool.get("name"), f"{where}.name")
            for j, inner in enumerate(require_list(tool.get("tools"), f"{where}.tools")):
                found = _tool(require_object(inner, f"{where}.tools[{j}]"), f"{where}.tools[{j}]", namespace)
                names[found.tool.name] = found
        elif kind in ("function", "custom"):
            found = _tool(tool, where, "")
            names[found.tool.name] = found
        elif not (isinstance(kind, str) and kind.startswith(HOSTED_TOOLS)):
            raise UserError(
                f"{where}.type {kind!r} cannot be carried; send function, custom or namespace tools"
            )
    return names


def _tool(tool: Mapping[str, Any], where: str, namespace: str) -> ToolName:
    kind = tool.get("type")
    name = require_str(tool.get("name"), f"{where}.name")
    description = optional_str(tool, "description", f"{where}.description")
    full = namespaced(namespace, name) if namespace else name
    if kind == "custom":
        return ToolName(_custom_tool(tool, full, description, where), "custom", name, namespace)
    if kind != "function":
        raise UserError(f"{where}.type must be 'function' or 'custom', not {kind!r}")
    parameters = tool.get("parameters") or {"type": "object", "properties": {}}
    schema = dict(require_object(parameters, f"{where}.parameters"))
    return ToolName(Tool(full, description, schema), "function", name, namespace)


def _custom_tool(tool: Mapping[str, Any], name: str, description: str, where: str) -> Tool:
    """A custom tool takes one free-form string; members speak functions,
    so it becomes a function of one string argument, its grammar (if any)
    told in the argument's description."""
    fmt = require_object(tool.get("format") or {"type": "text"}, f"{where}.format")
    about = "The tool's whole input, as free-form text."
    if fmt.get("type") == "grammar":
        syntax = optional_str(fmt, "syntax", f"{where}.format.syntax")
        definition = optional_str(fmt, "definition", f"{where}.format.definition")
        about += f" It must follow this {syntax} grammar:\n{definition}"
    schema = {
        "type": "object",
        "properties": {CUSTOM_INPUT: {"type": "string", "description": about}},
        "required": [CUSTOM_INPUT],
    }
    return Tool(name, description, schema)


def _tool_choice(value: object, names: ToolNames) -> str:
    if value is None:
        return ""
    if value in ("auto", "none", "required"):
        return str(value)
    choice = require_object(value, "tool_choice")
    kind = choice.get("type")
    if kind in ("function", "custom"):
        name = require_str(choice.get("name"), "tool_choice.name")
        namespace = optional_str(choice, "namespace", "tool_choice.namespace")
        return namespaced(namespace, name) if namespace else name
    if kind == "allowed_tools":
        return "required" if choice.get("mode") == "required" else "auto"
    if isinstance(kind, str) and kind.startswith(HOSTED_TOOLS):
        raise UserError(f"tool_choice {kind!r}: OpenAI runs that tool on its own servers; no member can")
    raise UserError("tool_choice must be auto, none, required, or a function or custom tool by name")


def _conversation(obj: Mapping[str, Any]) -> str:
    """Route mode's conversation key, as the client gave it: Codex sends
    its session id as `prompt_cache_key` and in `client_metadata`."""
    key = obj.get("prompt_cache_key")
    if isinstance(key, str) and key:
        return key
    for holder in ("client_metadata", "metadata"):
        found = obj.get(holder)
        if isinstance(found, Mapping):
            for name in ("session_id", "conversation_id", "thread_id"):
                if isinstance(found.get(name), str) and found[name]:
                    return str(found[name])
    user = obj.get("user")
    return user if isinstance(user, str) else ""


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


class ResponseIds:
    """One response's ids, clock and event numbering, shared by its events
    (here and in `responses_route`)."""

    def __init__(self) -> None:
        self.response = "resp_" + ids.token_hex(16)
        self.message = "msg_" + ids.token_hex(16)
        self.created_at = int(time.time())
        self.sequence = 0

    def event(self, kind: str, **fields: Any) -> bytes:
        """One SSE event, numbered as the Responses API numbers them."""
        data = {"type": kind, "sequence_number": self.sequence, **fields}
        self.sequence += 1
        return b"event: " + kind.encode() + b"\ndata: " + jsontext.dumps(data) + b"\n\n"


def response_body(
    ask: Ask,
    ids: ResponseIds,
    *,
    status: str,
    output: list[dict[str, Any]],
    usage: Usage | None,
    bench: dict[str, Any] | None,
    incomplete: str = "",
) -> dict[str, Any]:
    sampling = ask.request.sampling
    route = ask.mode == "route"
    out: dict[str, Any] = {
        "id": ids.response,
        "object": "response",
        "created_at": ids.created_at,
        "status": status,
        "model": model_name(ask.collection, ask.mode),
        "output": output,
        "instructions": ask.request.system or None,
        "temperature": sampling.temperature,
        "top_p": sampling.top_p,
        "max_output_tokens": sampling.max_tokens,
        "parallel_tool_calls": route,
        "tool_choice": (ask.request.tool_choice or "auto") if route else "none",
        "tools": [],
        "text": {"format": {"type": "text"}},
        "error": None,
        "incomplete_details": {"reason": incomplete} if incomplete else None,
        "metadata": {},
        "usage": None if usage is None else _usage(usage),
    }
    if out["tool_choice"] not in ("auto", "none", "required"):
        out["tool_choice"] = {"type": "function", "name": out["tool_choice"]}
    if bench is not None:
        out["bench"] = bench
    return out


def message_item(ids: ResponseIds, text: str | None, status: str) -> dict[str, Any]:
    content = [] if text is None else [output_text_part(text)]
    return {"type": "message", "id": ids.message, "status": status, "role": "assistant", "content": content}


def output_text_part(text: str) -> dict[str, Any]:
    return {"type": "output_text", "text": text, "annotations": [], "logprobs": []}


def _usage(usage: Usage) -> dict[str, Any]:
    return {
        "input_tokens": usage.input_tokens,
        "input_tokens_details": {"cached_tokens": 0, "cache_write_tokens": 0},
        "output_tokens": usage.output_tokens,
        "output_tokens_details": {"reasoning_tokens": 0},
        "total_tokens": usage.input_tokens + usage.output_tokens,
    }


def response_status(finish: FinishReason, called_tools: bool = False) -> tuple[str, str]:
    """A response's `status` and, when `incomplete`, why (its
    `incomplete_details.reason`), panel and route alike."""
    if finish == "length" and not called_tools:
        return "incomplete", "max_output_tokens"
    if finish == "content_filter":
        return "incomplete", "content_filter"
    return "completed", ""


def render_reply(reply: PanelReply, ask: Ask) -> dict[str, Any]:
    ids = ResponseIds()
    status, incomplete = response_status(reply.finish)
    output = [message_item(ids, reply_text(reply), status)]
    usage, bench = total_usage(reply), panel_json(reply)
    return response_body(
        ask, ids, status=status, output=output, usage=usage, bench=bench, incomplete=incomplete
    )


async def render_stream(events: AsyncIterator[PanelEvent], ask: Ask) -> AsyncIterator[bytes]:
    ids = ResponseIds()
    event = ids.event
    stream_text = StreamText(merged=ask.mode == "merged", live=ask.seat_text)
    text = ""
    where = {"item_id": ids.message, "output_index": 0, "content_index": 0}
    async for panel_event in events:
        piece = stream_text.piece(panel_event)
        if isinstance(panel_event, PanelStarted):
            opening = response_body(ask, ids, status="in_progress", output=[], usage=None, bench=None)
            yield event("response.created", response=opening)
            yield event("response.in_progress", response=opening)
            yield event(
                "response.output_item.added", output_index=0, item=message_item(ids, None, "in_progress")
            )
            yield event("response.content_part.added", **where, part=output_text_part(""))
        if isinstance(panel_event, SeatDone) and stream_text.merged:
            # Held back for the merger; a comment keeps the connection alive.
            yield f": {panel_event.seat.seat} {panel_event.seat.status}\n\n".encode()
        if piece:
            text += piece
            yield event("response.output_text.delta", **where, delta=piece, logprobs=[])
        if isinstance(panel_event, PanelDone):
            reply = panel_event.reply
            yield event("response.output_text.done", **where, text=text, logprobs=[])
            yield event("response.content_part.done", **where, part=output_text_part(text))
            status, incomplete = response_status(reply.finish)
            done = message_item(ids, text, status)
            yield event("response.output_item.done", output_index=0, item=done)
            final = response_body(
                ask,
                ids,
                status=status,
                output=[done],
                usage=total_usage(reply),
                bench=panel_json(reply),
                incomplete=incomplete,
            )
            yield event(f"response.{status}", response=final)
