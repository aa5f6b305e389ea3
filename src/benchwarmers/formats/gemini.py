"""Gemini (`/v1beta/models/{model}:generateContent`, `:streamGenerateContent`,
`:countTokens`, and the model list) in and out of a panel.

The model travels in the URL, not the body (`parse_ask(..., model=...)`),
and the official client sends `bench/trio` as the path
`models/bench/trio:generateContent`, so the route reads the model as a path
with slashes. The body is `contents` (roles `user` and `model`, typed
parts), `systemInstruction`, `generationConfig`; Google's JSON accepts both
camelCase and snake_case field names, and so do we.

google-genai drops keys it does not know, so the `bench` object goes in
the `x-bench` response header as well as in the body (and in the last
chunk of a stream, where raw REST readers find it); the seat headings in
the text carry the call ids either way.

Route mode (`bench/<c>:route`) reads function calling as google-genai
sends it: `tools[].functionDeclarations` (OpenAPI-style schemas with
upper-case types, or `parametersJsonSchema`), `toolConfig`'s function
calling mode, and `functionCall`/`functionResponse` parts (paired by id, or
by place when they carry none); `gemini_route` renders the member's reply.
Tools Google runs itself (`googleSearch`, `codeExecution`, `urlContext`)
are refused: no member can run them.

`responseMimeType` `application/json` with `responseSchema` (read into
JSON Schema) or `responseJsonSchema` asks every seat for JSON.

What a panel cannot honour is refused: tools and function parts, cached
content, a response mime type other than text or JSON, more than one
candidate, non-image inline data, and any generation setting we cannot pass
on.
"""

from __future__ import annotations

import json
import re
from collections.abc import AsyncIterator, Mapping
from typing import Any

from benchwarmers import ids, jsontext
from benchwarmers.errors import UserError
from benchwarmers.formats.base import (
    model_name,
    optional_str,
    pair_tool_ids,
    parse_model_name,
    require_list,
    require_object,
    require_str,
    tools_refused,
    with_bench_options,
)
from benchwarmers.formats.base import optional_float as _float
from benchwarmers.formats.base import optional_int as _int
from benchwarmers.formats.bench_json import panel_json
from benchwarmers.formats.output import gemini_output
from benchwarmers.formats.panel_text import StreamText, reply_text, total_usage
from benchwarmers.types import (
    Ask,
    AskMode,
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

NAME = "gemini"
MEDIA_TYPE_STREAM = "text/event-stream"
MEDIA_TYPE_ARRAY_STREAM = "application/json"

GENERATION_METHODS = ("generateContent", "streamGenerateContent", "countTokens")
_TOOL_MODES = {"AUTO": "auto", "VALIDATED": "auto", "ANY": "required", "NONE": "none"}
# generationConfig keys we cannot pass on but that do not change what is
# asked: a thinking budget is a hint each member reads its own way.
_HARMLESS_CONFIG = {"thinkingConfig"}
_CARRIED_CONFIG = {
    "temperature",
    "topP",
    "topK",
    "maxOutputTokens",
    "stopSequences",
    "seed",
    "candidateCount",
    "responseMimeType",
    "responseSchema",
    "responseJsonSchema",
    "responseModalities",
}
# Top-level keys read elsewhere or harmless to leave out (safety settings
# only loosen or tighten a provider's own filter; labels are billing tags).
_KNOWN_TOP = {
    "contents",
    "systemInstruction",
    "generationConfig",
    "tools",
    "toolConfig",
    "safetySettings",
    "labels",
}
_REFUSED_TOP = {"cachedContent": "cached content is not kept here; send the whole conversation"}


_MODEL_PATH = re.compile(r"(.*?)(?::(generateContent|streamGenerateContent|countTokens))?", re.DOTALL)


def _camel(key: str) -> str:
    head, *rest = key.split("_")
    return head + "".join(word.title() for word in rest)


def _camel_keys(value: object, where: str) -> dict[str, Any]:
    """An object with its keys in camelCase (Google's JSON takes either)."""
    return {_camel(k): v for k, v in require_object(value, where).items()}


# ------------------------------------------------------------------ parsing


def split_model_path(path: str) -> tuple[str, str]:
    """`models/bench/trio:generateContent` (or `bench/trio:generateContent`)
    -> (`bench/trio`, `generateContent`); the method is "" when the path
    names only a model (`GET /v1beta/models/bench/trio`)."""
    path = path.removeprefix("models/")
    match = _MODEL_PATH.fullmatch(path)
    assert match is not None  # the pattern matches every string
    return match.group(1), match.group(2) or ""


def parse_ask(body: object, *, model: str | None = None) -> Ask:
    """`model` comes from the URL path; `Ask.stream` is the route's to set
    (`:streamGenerateContent`), since Gemini says so in the path."""
    obj = _camel_keys(body, "body")
    collection, mode = parse_model_name(model)
    ask = Ask(collection=collection, mode=mode, request=_request(obj, route=mode == "route"))
    return with_bench_options(ask, obj.get("bench"))


def parse_count(body: object, *, model: str) -> Request:
    """The body of `:countTokens`: `contents`, or a whole
    `generateContentRequest`."""
    route = parse_model_name(model)[1] == "route"
    obj = _camel_keys(body, "body")
    inner = obj.get("generateContentRequest")
    return _request(_camel_keys(inner, "generateContentRequest") if inner is not None else obj, route=route)


def render_count(tokens: int) -> dict[str, Any]:
    return {"totalTokens": tokens}


def _request(obj: Mapping[str, Any], *, route: bool = False) -> Request:
    for key, why in _REFUSED_TOP.items():
        if obj.get(key) is not None:
            raise UserError(f"{key}: {why}")
    # `bench`: our own per-ask options (`base.with_bench_options`).
    unknown = sorted(set(obj) - _KNOWN_TOP - set(_REFUSED_TOP) - {"model", "generateContentRequest", "bench"})
    if unknown:
        raise UserError(
            f"unknown field {unknown[0]!r}; a request holds contents, systemInstruction, generationConfig"
        )
    tools = obj.get("tools")
    if not route and (
        (tools is not None and require_list(tools, "tools")) or obj.get("toolConfig") is not None
    ):
        raise tools_refused()
    contents = require_list(obj.get("contents"), "contents")
    messages = [
        m for i, raw in enumerate(contents) if (m := _content(raw, f"contents[{i}]", route)) is not None
    ]
    if not messages:
        raise UserError("contents must hold at least one content with parts")
    return Request(
        messages=tuple(pair_tool_ids(messages)),
        system=_system(obj.get("systemInstruction")),
        tools=_tools(tools) if route else (),
        tool_choice=_tool_choice(obj.get("toolConfig")) if route else "",
        sampling=_sampling(obj.get("generationConfig")),
        output=_output(obj.get("generationConfig")),
    )


def _output(value: object) -> OutputFormat | None:
    """`responseMimeType` `application/json`, with `responseSchema` or `responseJsonSchema`."""
    if value is None:
        return None
    config = _camel_keys(value, "generationConfig")
    return gemini_output(
        config.get("responseMimeType"), config.get("responseSchema"), config.get("responseJsonSchema")
    )


def _tools(value: object) -> tuple[Tool, ...]:
    found: list[Tool] = []
    for i, raw in enumerate(require_list(value or [], "tools")):
        tool = _camel_keys(raw, f"tools[{i}]")
        hosted = sorted(k for k in tool if k != "functionDeclarations")
        if hosted:
            raise UserError(f"tools[{i}].{hosted[0]}: Google runs that tool itself; no member can")
        declarations = require_list(
            tool.get("functionDeclarations") or [], f"tools[{i}].functionDeclarations"
        )
        for j, declared in enumerate(declarations):
            where = f"tools[{i}].functionDeclarations[{j}]"
            function = _camel_keys(declared, where)
            schema = function.get("parametersJsonSchema") or _json_schema(function.get("parameters"))
            found.append(
                Tool(
                    name=require_str(function.get("name"), f"{where}.name"),
                    description=optional_str(function, "description", f"{where}.description"),
                    parameters=dict(require_object(schema or {"type": "object", "properties": {}}, where)),
                )
            )
    return tuple(found)


def _json_schema(value: object) -> object:
    """Gemini's OpenAPI-style schema (`"type": "OBJECT"`) as JSON Schema
    (`"object"`), which every other API takes."""
    if isinstance(value, Mapping):
        out = {_camel(k): _json_schema(v) for k, v in value.items()}
        if isinstance(out.get("type"), str):
            out["type"] = str(out["type"]).lower()
        return out
    if isinstance(value, list):
        return [_json_schema(v) for v in value]
    return value


def _tool_choice(value: object) -> str:
    if value is None:
        return ""
    config = _camel_keys(_camel_keys(value, "toolConfig").get("functionCallingConfig") or {}, "toolConfig")
    mode = str(config.get("mode") or "AUTO").upper()
    if mode not in _TOOL_MODES:
        raise UserError(f"toolConfig.functionCallingConfig.mode must be AUTO, ANY or NONE, not {mode!r}")
    names = require_list(config.get("allowedFunctionNames") or [], "allowedFunctionNames")
    if mode == "ANY" and len(names) == 1:
        return require_str(names[0], "allowedFunctionNames[0]")
    return _TOOL_MODES[mode]


def _system(value: object) -> str:
    if value is None or isinstance(value, str):
        return value or ""
    content = _camel_keys(value, "systemInstruction")
    parts = _parts(content.get("parts"), "systemInstruction.parts", "user")
    if any(not isinstance(p, Text) for p in parts):
        raise UserError("systemInstruction holds text parts only")
    return "\n\n".join(p.text for p in parts if isinstance(p, Text))


def _content(raw: object, where: str, route: bool) -> Message | None:
    content = _camel_keys(raw, where)
    role = content.get("role")
    if role is None or role == "":
        role = "user"  # Gemini's default for a content without one
    if role not in ("user", "model", "function", "tool"):
        raise UserError(f"{where}.role must be 'user' or 'model', not {role!r}")
    parts = _parts(content.get("parts"), f"{where}.parts", role, route)
    if not parts:
        return None
    return Message("assistant" if role == "model" else "user", parts)


def _parts(value: object, where: str, role: str, route: bool = False) -> tuple[Part, ...]:
    parts: list[Part] = []
    for i, raw in enumerate(require_list(value, where)):
        here = f"{where}[{i}]"
        part = _camel_keys(raw, here)
        if part.get("functionCall") is not None or part.get("functionResponse") is not None:
            if not route:
                raise tools_refused()
            parts.append(_function_part(part, here))
            continue
        if part.get("thought") is True and role == "model":
            continue  # a model's own reasoning: no other model could read it
        if "text" in part:
            parts.append(Text(require_str(part["text"], f"{here}.text")))
        elif part.get("inlineData") is not None:
            parts.append(_inline_image(part["inlineData"], f"{here}.inlineData"))
        elif part.get("fileData") is not None:
            parts.append(_file_image(part["fileData"], f"{here}.fileData"))
        else:
            known = ", ".join(sorted(k for k in part if k != "thoughtSignature")) or "nothing"
            raise UserError(
                f"{here} holds {known}, which cannot be carried; send text, inlineData or fileData"
            )
    return tuple(parts)


def _function_part(part: Mapping[str, Any], where: str) -> Part:
    if part.get("functionCall") is not None:
        call = _camel_keys(part["functionCall"], f"{where}.functionCall")
        arguments = json.dumps(require_object(call.get("args") or {}, f"{where}.functionCall.args"))
        name = require_str(call.get("name"), f"{where}.functionCall.name")
        return ToolCall(optional_str(call, "id", f"{where}.functionCall.id"), name, arguments)
    result = _camel_keys(part["functionResponse"], f"{where}.functionResponse")
    response = require_object(result.get("response") or {}, f"{where}.functionResponse.response")
    values = list(response.values())
    # {"result": "..."} (or "output") is how most code answers: its text;
    # anything else travels as JSON.
    text = values[0] if len(values) == 1 and isinstance(values[0], str) else json.dumps(response)
    name = require_str(result.get("name"), f"{where}.functionResponse.name")
    return ToolResult(optional_str(result, "id", f"{where}.functionResponse.id"), text, name)


def _image_type(value: object, where: str) -> str:
    mime = require_str(value, where)
    if not mime.startswith("image/"):
        raise UserError(f"{where} {mime!r}: only images can be carried to a panel")
    return mime


def _inline_image(raw: object, where: str) -> Image:
    data = _camel_keys(raw, where)
    mime = _image_type(data.get("mimeType"), f"{where}.mimeType")
    return Image(media_type=mime, data=require_str(data.get("data"), f"{where}.data"))


def _file_image(raw: object, where: str) -> Image:
    data = _camel_keys(raw, where)
    mime = _image_type(data.get("mimeType"), f"{where}.mimeType")
    uri = require_str(data.get("fileUri"), f"{where}.fileUri")
    if not uri.startswith(("http://", "https://")):
        raise UserError(f"{where}.fileUri must be an http(s) URL; uploaded files are not kept here")
    return Image(media_type=mime, url=uri)


def _sampling(value: object) -> Sampling:
    if value is None:
        return Sampling()
    config = _camel_keys(value, "generationConfig")
    unknown = sorted(set(config) - _CARRIED_CONFIG - _HARMLESS_CONFIG)
    if unknown:
        raise UserError(f"generationConfig.{unknown[0]} cannot be carried to a panel")
    where = "generationConfig."
    candidates = _int(config, "candidateCount", where + "candidateCount", minimum=1)
    if candidates not in (None, 1):
        raise UserError(
            "generationConfig.candidateCount: a panel gives one candidate; its seats are in the text"
        )
    modalities = config.get("responseModalities")
    if modalities is not None and [
        str(m).upper() for m in require_list(modalities, "responseModalities")
    ] != ["TEXT"]:
        raise UserError("generationConfig.responseModalities: a panel answers with TEXT only")
    stops = require_list(config.get("stopSequences") or [], where + "stopSequences")
    return Sampling(
        temperature=_float(config, "temperature", where + "temperature"),
        top_p=_float(config, "topP", where + "topP"),
        top_k=_int(config, "topK", where + "topK", minimum=1),
        max_tokens=_int(config, "maxOutputTokens", where + "maxOutputTokens", minimum=1),
        stop=tuple(require_str(s, f"{where}stopSequences[{i}]") for i, s in enumerate(stops)),
        seed=_int(config, "seed", where + "seed", minimum=-(2**31)),
    )


# ---------------------------------------------------------------- rendering


def model_object(collection: str, mode: AskMode = "panel", *, description: str = "") -> dict[str, Any]:
    """One entry of `GET /v1beta/models`, and the body of a model get."""
    name = model_name(collection, mode)
    return {
        "name": "models/" + name,
        "baseModelId": name,
        "version": "1",
        "displayName": name,
        "description": description,
        "supportedGenerationMethods": list(GENERATION_METHODS),
    }


def usage_metadata(usage: Usage) -> dict[str, int]:
    """Gemini's `usageMetadata`, for panel and route replies alike."""
    return {
        "promptTokenCount": usage.input_tokens,
        "candidatesTokenCount": usage.output_tokens,
        "totalTokenCount": usage.input_tokens + usage.output_tokens,
    }


def finish_reason(finish: FinishReason) -> str:
    """A candidate's `finishReason`, panel and route alike: `MAX_TOKENS` when
    cut at its output limit, else `STOP` (which Gemini says after function
    calls too)."""
    return "MAX_TOKENS" if finish == "length" else "STOP"


def _chunk(
    ask: Ask, response_id: str, text: str, *, finish: FinishReason | None = None, usage: Usage | None = None
) -> dict[str, Any]:
    candidate: dict[str, Any] = {"content": {"role": "model", "parts": [{"text": text}]}, "index": 0}
    if finish is not None:
        candidate["finishReason"] = finish_reason(finish)
    out: dict[str, Any] = {"candidates": [candidate]}
    if usage is not None:
        out["usageMetadata"] = usage_metadata(usage)
    out["modelVersion"] = model_name(ask.collection, ask.mode)
    out["responseId"] = response_id
    return out


def render_reply(reply: PanelReply, ask: Ask) -> dict[str, Any]:
    body = _chunk(ask, _response_id(), reply_text(reply), finish=reply.finish, usage=total_usage(reply))
    body["bench"] = panel_json(reply)
    return body


def _response_id() -> str:
    return ids.token_hex(16)


async def render_stream(
    events: AsyncIterator[PanelEvent], ask: Ask, *, sse: bool = True
) -> AsyncIterator[bytes]:
    """`sse` is `?alt=sse` (what the official client asks for): one `data:`
    line per chunk. Without it Gemini streams one JSON array, element by
    element, and so do we."""
    response_id = _response_id()
    stream_text = StreamText(merged=ask.mode == "merged", live=ask.seat_text)
    first = True

    def frame(chunk: dict[str, Any]) -> bytes:
        nonlocal first
        data = jsontext.dumps(chunk)
        if sse:
            return b"data: " + data + b"\r\n\r\n"
        lead = b"[" if first else b",\r\n"
        first = False
        return lead + data

    async for event in events:
        piece = stream_text.piece(event)
        if isinstance(event, PanelStarted):
            yield frame(_chunk(ask, response_id, ""))
        if isinstance(event, SeatDone) and stream_text.merged:
            yield frame(_chunk(ask, response_id, ""))  # held back for the merger
        if piece:
            yield frame(_chunk(ask, response_id, piece))
        if isinstance(event, PanelDone):
            reply = event.reply
            last = _chunk(ask, response_id, "", finish=reply.finish, usage=total_usage(reply))
            last["bench"] = panel_json(reply)
            yield frame(last)
            if not sse:
                yield b"]"
