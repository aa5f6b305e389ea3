"""Ollama (`/api/chat`, `/api/generate`, `/api/tags`, `/api/show`,
`/api/version`) in and out of a panel.

Ollama clients send the model name as is (`bench/trio`; some add Ollama's
default tag, `bench/trio:latest`, which we read as the same name), stream
by default (`"stream": false` to get one body), and stream NDJSON: one JSON
object per line, the last with `"done": true` and timing counts. Images are
a list of bare base64 strings per message; we tell their type from their
first bytes. Options that only tune a local runtime (`num_ctx`, `num_gpu`,
threads...) are meaningless to a panel and ignored; sampling options we can
pass on are carried; `format` ("json" or a schema) asks every seat for
JSON; any other option is refused, as are tools, `suffix`, raw templates and old-style `context` arrays.

Route mode (`bench/<c>:route` over `/api/chat`) reads `tools`, assistant
`tool_calls` and `tool` messages; `ollama_route` renders the member's reply.

Ollama's client drops keys it does not know, so the `bench` object goes in
the `x-bench` header too; the seat headings in the text carry the call ids.
An empty chat or prompt is Ollama's way to load a model: it is answered at
once with `done_reason: "load"`, asking no one.
"""

from __future__ import annotations

import hashlib
import json
import time
from collections.abc import AsyncIterator, Mapping
from datetime import UTC, datetime
from typing import Any

from benchwarmers import jsontext
from benchwarmers.errors import UserError
from benchwarmers.formats.base import (
    data_url_image,
    logprobs_refused,
    model_name,
    optional_bool,
    optional_float,
    optional_int,
    optional_str,
    pair_tool_ids,
    parse_model_name,
    require_list,
    require_object,
    require_str,
    stop_sequences,
    tools_refused,
    with_bench_options,
)
from benchwarmers.formats.bench_json import panel_json
from benchwarmers.formats.openai_chat import function_tools
from benchwarmers.formats.output import ollama_format
from benchwarmers.formats.panel_text import StreamText, reply_text, total_usage
from benchwarmers.types import (
    Ask,
    AskMode,
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
    ToolCall,
    ToolResult,
    Usage,
)

NAME = "ollama"
MEDIA_TYPE_STREAM = "application/x-ndjson"
# The Ollama version we answer `/api/version` with: recent enough that
# clients checking for features (images, `think`) talk to us normally.
OLLAMA_VERSION = "0.12.0"
ROUTE_ELSEWHERE = "route mode is served over /api/chat, not /api/generate: send the conversation as messages"

_RUNTIME_OPTIONS = {
    "num_ctx",
    "num_batch",
    "num_gpu",
    "main_gpu",
    "low_vram",
    "vocab_only",
    "use_mmap",
    "use_mlock",
    "num_thread",
    "numa",
    "num_keep",
    "f16_kv",
    "logits_all",
}
_CARRIED_OPTIONS = {"temperature", "top_p", "top_k", "num_predict", "stop", "seed"}
# Base64 openings of the image types vision models read.
_IMAGE_MAGIC = (
    ("iVBORw0KGgo", "image/png"),
    ("/9j/", "image/jpeg"),
    ("R0lGOD", "image/gif"),
    ("UklGR", "image/webp"),
)


# ------------------------------------------------------------------ parsing


def ask_model(body: Mapping[str, Any], *, route: bool = False) -> tuple[str, AskMode]:
    """The collection and mode named by `body["model"]`, Ollama's `:latest`
    tag read as no tag. `route`: whether route mode may be named (it is
    served over `/api/chat` only)."""
    name = body.get("model")
    if isinstance(name, str):
        name = name.removesuffix(":latest")
    collection, mode = parse_model_name(name)
    if mode == "route" and not route:
        raise UserError(ROUTE_ELSEWHERE)
    return collection, mode


def is_load(body: object, *, generate: bool = False) -> bool:
    """Whether this is Ollama's "load the model" request: nothing to say."""
    if not isinstance(body, Mapping):
        return False
    if generate:  # only a missing or empty prompt loads: `prompt: {}` is a mistake (400)
        return body.get("prompt") in (None, "") and not body.get("images")
    return isinstance(body.get("messages"), list | type(None)) and not body.get("messages")


def parse_ask(body: object, *, model: str | None = None) -> Ask:
    """An `/api/chat` body. Route mode reads `tools`, assistant
    `tool_calls` (arguments as an object) and `tool` messages (`tool_name`,
    or the older `name`); Ollama sends no call ids, so they are paired by
    place (`pair_tool_ids`)."""
    obj = require_object(body)
    collection, mode = ask_model({"model": model} if model is not None else obj, route=True)
    route = mode == "route"
    _refuse_uncarried(obj, route=route)
    system: list[str] = []
    messages: list[Message] = []
    for i, raw in enumerate(require_list(obj.get("messages"), "messages")):
        where = f"messages[{i}]"
        message = require_object(raw, where)
        role = message.get("role")
        if (role == "tool" or message.get("tool_calls")) and not route:
            raise tools_refused()
        if "content" not in message and not message.get("images") and not message.get("tool_calls"):
            raise UserError(f"{where}.content is missing (a message holds content, images or tool calls)")
        content = optional_str(message, "content", f"{where}.content")
        images = _images(message.get("images"), f"{where}.images")
        if role == "system":
            if images:
                raise UserError(f"{where}: a system message holds text only")
            system.append(content)
        elif role == "tool":
            name = optional_str(message, "tool_name", f"{where}.tool_name") or optional_str(message, "name")
            result = ToolResult(optional_str(message, "tool_call_id", f"{where}.tool_call_id"), content, name)
            if messages and messages[-1].role == "user" and messages[-1].tool_results:
                messages[-1] = Message("user", (*messages[-1].parts, result))
            else:
                messages.append(Message("user", (result,)))
        elif role in ("user", "assistant"):
            parts: tuple[Part, ...] = ((Text(content),) if content else ()) + images
            parts += _tool_calls(message.get("tool_calls"), f"{where}.tool_calls")
            messages.append(Message(role, parts))
        else:
            raise UserError(f"{where}.role must be system, user, assistant or tool, not {role!r}")
    if not messages:
        raise UserError("messages must hold at least one user or assistant message")
    request = Request(
        messages=tuple(pair_tool_ids(messages)),
        system="\n\n".join(system),
        tools=function_tools(obj.get("tools")) if route else (),
        sampling=_sampling(obj),
        output=ollama_format(obj.get("format")),
    )
    ask = Ask(collection=collection, mode=mode, request=request, stream=_stream(obj))
    return with_bench_options(ask, obj.get("bench"))


def _tool_calls(value: object, where: str) -> tuple[ToolCall, ...]:
    calls = []
    for i, raw in enumerate(require_list(value or [], where)):
        call = require_object(raw, f"{where}[{i}]")
        function = require_object(call.get("function"), f"{where}[{i}].function")
        arguments = function.get("arguments")
        text = (
            arguments
            if isinstance(arguments, str)
            else json.dumps(arguments if arguments is not None else {})
        )
        name = require_str(function.get("name"), f"{where}[{i}].function.name")
        calls.append(ToolCall(optional_str(call, "id", f"{where}[{i}].id"), name, text))
    return tuple(calls)


def parse_generate(body: object) -> Ask:
    """An `/api/generate` body: one prompt, its images, an optional system."""
    obj = require_object(body)
    collection, mode = ask_model(obj)
    _refuse_uncarried(obj)
    if optional_str(obj, "suffix"):
        raise UserError("suffix: fill-in-the-middle cannot be asked of a panel")
    if optional_str(obj, "template"):
        raise UserError("template: each member uses its own prompt template")
    if optional_bool(obj, "raw"):
        raise UserError("raw: each member uses its own prompt template; leave raw out")
    if obj.get("context"):
        raise UserError("context: send the conversation to /api/chat instead of context tokens")
    prompt = optional_str(obj, "prompt")
    images = _images(obj.get("images"), "images")
    parts: tuple[Part, ...] = ((Text(prompt),) if prompt else ()) + images
    if not parts:
        raise UserError("prompt is empty")
    request = Request(
        messages=(Message("user", parts),),
        system=optional_str(obj, "system"),
        sampling=_sampling(obj),
        output=ollama_format(obj.get("format")),
    )
    ask = Ask(collection=collection, mode=mode, request=request, stream=_stream(obj))
    return with_bench_options(ask, obj.get("bench"))


def _stream(obj: Mapping[str, Any]) -> bool:
    """Ollama streams unless told not to."""
    return True if obj.get("stream") is None else optional_bool(obj, "stream")


def _refuse_uncarried(obj: Mapping[str, Any], *, route: bool = False) -> None:
    tools = obj.get("tools")
    if tools is not None and require_list(tools, "tools") and not route:
        raise tools_refused()
    if not route and (optional_bool(obj, "logprobs") or optional_int(obj, "top_logprobs")):
        raise logprobs_refused("logprobs")


def _images(value: object, where: str) -> tuple[Image, ...]:
    if value is None:
        return ()
    images = []
    for i, raw in enumerate(require_list(value, where)):
        data = require_str(raw, f"{where}[{i}]")
        inline = data_url_image(data)
        if inline is not None:
            images.append(Image(media_type=inline[0], data=inline[1]))
            continue
        media_type = next((kind for magic, kind in _IMAGE_MAGIC if data.startswith(magic)), "")
        if not media_type:
            raise UserError(f"{where}[{i}] is not a base64 PNG, JPEG, GIF or WebP image")
        images.append(Image(media_type=media_type, data=data))
    return tuple(images)


def _sampling(obj: Mapping[str, Any]) -> Sampling:
    value = obj.get("options")
    if value is None:
        return Sampling()
    options = require_object(value, "options")
    unknown = sorted(set(options) - _CARRIED_OPTIONS - _RUNTIME_OPTIONS)
    if unknown:
        raise UserError(f"options.{unknown[0]} cannot be carried to a panel")
    num_predict = optional_int(options, "num_predict", "options.num_predict", minimum=-2)
    return Sampling(
        temperature=optional_float(options, "temperature", "options.temperature"),
        top_p=optional_float(options, "top_p", "options.top_p"),
        top_k=optional_int(options, "top_k", "options.top_k", minimum=1),
        # -1 (no limit) and -2 (fill the context) leave it to each member.
        max_tokens=num_predict if num_predict is not None and num_predict > 0 else None,
        stop=stop_sequences(options.get("stop"), "options.stop"),
        seed=optional_int(options, "seed", "options.seed", minimum=-(2**63)),
    )


# ---------------------------------------------------------------- rendering


def now() -> str:
    return datetime.now(UTC).isoformat().replace("+00:00", "Z")


def _head(ask_name: str) -> dict[str, Any]:
    return {"model": ask_name, "created_at": now()}


def _text_fields(text: str, *, generate: bool) -> dict[str, Any]:
    return {"response": text} if generate else {"message": {"role": "assistant", "content": text}}


def done_fields(finish: FinishReason, usage: Usage, nanoseconds: int) -> dict[str, Any]:
    """The last line's `done` keys (the counts and durations Ollama reports),
    for panel and route replies alike."""
    return {
        "done": True,
        "done_reason": "length" if finish == "length" else "stop",
        "total_duration": nanoseconds,
        "load_duration": 0,
        "prompt_eval_count": usage.input_tokens,
        "prompt_eval_duration": 0,
        "eval_count": usage.output_tokens,
        "eval_duration": nanoseconds,
    }


def _done_fields(reply: PanelReply, nanoseconds: int) -> dict[str, Any]:
    return {**done_fields(reply.finish, total_usage(reply), nanoseconds), "bench": panel_json(reply)}


def _panel_nanoseconds(reply: PanelReply) -> int:
    """A reply's wall time: its seats ran at once, then the merge, if any."""
    seats = max((s.seconds for s in reply.seats), default=0.0)
    merge = reply.merged.seconds if reply.merged is not None else 0.0
    return int((seats + merge) * 1e9)


def render_reply(reply: PanelReply, ask: Ask, *, generate: bool = False) -> dict[str, Any]:
    name = model_name(ask.collection, ask.mode)
    return {
        **_head(name),
        **_text_fields(reply_text(reply), generate=generate),
        **_done_fields(reply, _panel_nanoseconds(reply)),
    }


def render_load(body: Mapping[str, Any], *, generate: bool = False) -> dict[str, Any]:
    """The answer to a load request: the model is ready (a panel always is)."""
    collection, mode = ask_model(body, route=not generate)
    return {
        **_head(model_name(collection, mode)),
        **_text_fields("", generate=generate),
        "done": True,
        "done_reason": "load",
    }


def line(obj: dict[str, Any]) -> bytes:
    return jsontext.dumps(obj) + b"\n"


async def render_stream(
    events: AsyncIterator[PanelEvent], ask: Ask, *, generate: bool = False
) -> AsyncIterator[bytes]:
    name = model_name(ask.collection, ask.mode)
    stream_text = StreamText(merged=ask.mode == "merged", live=ask.seat_text)
    started = time.monotonic()
    async for event in events:
        piece = stream_text.piece(event)
        if isinstance(event, PanelStarted):
            yield line({**_head(name), **_text_fields("", generate=generate), "done": False})
        if isinstance(event, SeatDone) and stream_text.merged:
            # Held back for the merger; an empty line of text keeps the connection alive.
            yield line({**_head(name), **_text_fields("", generate=generate), "done": False})
        if piece:
            yield line({**_head(name), **_text_fields(piece, generate=generate), "done": False})
        if isinstance(event, PanelDone):
            nanoseconds = int((time.monotonic() - started) * 1e9)
            yield line(
                {
                    **_head(name),
                    **_text_fields("", generate=generate),
                    **_done_fields(event.reply, nanoseconds),
                }
            )


# ------------------------------------------------------------------- models


def _digest(name: str) -> str:
    return hashlib.sha256(name.encode()).hexdigest()


def _details() -> dict[str, Any]:
    return {
        "parent_model": "",
        "format": "benchwarmers",
        "family": "panel",
        "families": ["panel"],
        "parameter_size": "",
        "quantization_level": "",
    }


def tag_object(name: str, modified_at: str = "") -> dict[str, Any]:
    """One entry of `/api/tags` for a model name (`bench/trio`)."""
    return {
        "name": name,
        "model": name,
        "modified_at": modified_at or now(),
        "size": 0,
        "digest": _digest(name),
        "details": _details(),
    }


def show_object(
    name: str, *, description: str = "", modified_at: str = "", mode: AskMode = "panel"
) -> dict[str, Any]:
    """The body of `/api/show` for a collection: no weights, no template,
    a panel that reads text and images. Route mode (`mode="route"`) is one
    member per conversation that may call tools, so it says `tools` too:
    clients that look before they chat (Open WebUI, `ollama.show`) then
    offer tools."""
    kind = "a Benchwarmers panel in route mode" if mode == "route" else "a Benchwarmers panel"
    capabilities = ["completion", "vision", "tools"] if mode == "route" else ["completion", "vision"]
    return {
        "modelfile": f"# {name}: {kind}\n# {description}".rstrip() + "\n",
        "parameters": "",
        "template": "",
        "details": _details(),
        "model_info": {
            "general.architecture": "panel",
            "general.basename": name,
            "general.description": description,
        },
        "capabilities": capabilities,
        "modified_at": modified_at or now(),
    }


def show_model(body: object) -> tuple[str, AskMode]:
    """The collection and mode an `/api/show` body names (`model`, or the
    older `name`). Route mode is shown like any name: it is served over
    `/api/chat`, and clients ask `/api/show` before they chat."""
    obj = require_object(body)
    return ask_model({"model": obj.get("model", obj.get("name"))}, route=True)
