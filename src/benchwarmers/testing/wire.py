"""The four APIs' wire shapes, from the provider's side: reading a request
into a `FakeRequest`, and writing replies, stream events and error bodies
the way OpenAI, Anthropic, Gemini and Ollama do.

This is deliberately independent of `benchwarmers.providers`: the fake is
the other end of the wire, so it must not share the adapters' translation
or a bug would agree with itself.
"""

from __future__ import annotations

import json
import re
import time
import uuid
from dataclasses import dataclass, field
from typing import Any

from benchwarmers.testing.script import FakeMessage, FakeRequest
from benchwarmers.types import ApiKind


@dataclass
class FakeReply:
    text: str
    # (id, name, arguments as JSON text)
    tool_calls: list[tuple[str, str, str]] = field(default_factory=list)
    finish: str = "stop"  # "stop", "length", "tool_calls"
    input_tokens: int = 0
    output_tokens: int = 0
    thinking: str = ""  # reasoning before the answer, in the API's own shape for it


# ------------------------------------------------------------ reading asks


def read_request(
    api: ApiKind, model: str, stream: bool, body: dict[str, Any], headers: dict[str, str]
) -> FakeRequest:
    request = FakeRequest(api=api, model=model, stream=stream, body=body, headers=headers)
    {"openai": _read_openai, "anthropic": _read_anthropic, "gemini": _read_gemini, "ollama": _read_ollama}[
        api
    ](request, body)
    request.output = _output(api, body)
    request.prompted = None if request.output else _prompted_output(request.system)
    return request


def _output(api: ApiKind, body: dict[str, Any]) -> dict[str, Any] | None:
    """The structured output the request asked in its API's own setting, as
    `{"kind": "json_object" | "json_schema", "schema": {...} | None}` (the
    raw setting stays in `body`); None when it asked none."""
    if api == "openai":
        fmt = body.get("response_format") or {}
        if fmt.get("type") == "json_schema":
            return {"kind": "json_schema", "schema": (fmt.get("json_schema") or {}).get("schema")}
        return {"kind": "json_object", "schema": None} if fmt.get("type") == "json_object" else None
    if api == "anthropic":
        fmt = (body.get("output_config") or {}).get("format") or body.get("output_format")
        return {"kind": "json_schema", "schema": fmt.get("schema")} if fmt else None
    if api == "gemini":
        config = body.get("generationConfig") or body.get("generation_config") or {}
        if config.get("responseMimeType") != "application/json":
            return None
        schema = config.get("responseJsonSchema") or config.get("responseSchema")
        return {"kind": "json_schema" if schema else "json_object", "schema": schema}
    fmt = body.get("format")
    if isinstance(fmt, dict):
        return {"kind": "json_schema", "schema": fmt}
    return {"kind": "json_object", "schema": None} if fmt == "json" else None


# How a gateway asks for JSON in the system prompt when the API has no setting for
# the kind asked (Anthropic has no plain JSON mode) or the model no structured output:
# the words read as a model would read them, the schema (if any) on the line after.
_PROMPTED = re.compile(r"Answer with one JSON (object|value) only")


def _prompted_output(system: str) -> dict[str, Any] | None:
    """The structured output a system prompt asks in words, as `_output`
    says it; None when it asks none. A schema that does not read as JSON
    leaves the ask as plain JSON."""
    found = _PROMPTED.search(system)
    if found is None:
        return None
    after = system[found.end() :].split("\n\n", 1)
    if found.group(1) == "object" or len(after) < 2:
        return {"kind": "json_object", "schema": None}
    try:
        schema = json.loads(after[1].split("\n", 1)[0])
    except ValueError:
        return {"kind": "json_object", "schema": None}
    return (
        {"kind": "json_schema", "schema": schema}
        if isinstance(schema, dict)
        else {"kind": "json_object", "schema": None}
    )


def _read_openai(request: FakeRequest, body: dict[str, Any]) -> None:
    request.tools = [t["function"]["name"] for t in body.get("tools") or []]
    request.max_tokens = body.get("max_completion_tokens") or body.get("max_tokens")
    for message in body["messages"]:
        role, content = message["role"], message.get("content")
        if role in ("system", "developer"):
            request.system += _openai_text(content)
        elif role == "tool":
            result = {"id": message.get("tool_call_id", ""), "name": "", "content": _openai_text(content)}
            _append_result(request, result)
        else:
            calls = [
                {"id": c["id"], "name": c["function"]["name"], "arguments": c["function"]["arguments"]}
                for c in message.get("tool_calls") or []
            ]
            images = (
                sum(1 for p in content if p.get("type") == "image_url") if isinstance(content, list) else 0
            )
            request.messages.append(FakeMessage(role, _openai_text(content), images, calls))


def _openai_text(content: Any) -> str:
    if isinstance(content, list):
        return "".join(p.get("text", "") for p in content if p.get("type") == "text")
    return content or ""


def _append_result(request: FakeRequest, result: dict[str, Any]) -> None:
    """Tool results join one trailing `tool` message, as one turn."""
    if not request.messages or request.messages[-1].role != "tool":
        request.messages.append(FakeMessage("tool"))
    request.messages[-1].tool_results.append(result)


def _read_anthropic(request: FakeRequest, body: dict[str, Any]) -> None:
    system = body.get("system") or ""
    request.system = system if isinstance(system, str) else "".join(b.get("text", "") for b in system)
    request.tools = [t["name"] for t in body.get("tools") or []]
    request.max_tokens = body.get("max_tokens")
    for message in body["messages"]:
        content = message["content"]
        blocks = [{"type": "text", "text": content}] if isinstance(content, str) else content
        request.messages.append(
            FakeMessage(
                message["role"],
                "".join(b["text"] for b in blocks if b["type"] == "text"),
                sum(1 for b in blocks if b["type"] == "image"),
                [
                    {"id": b["id"], "name": b["name"], "arguments": json.dumps(b["input"])}
                    for b in blocks
                    if b["type"] == "tool_use"
                ],
                [
                    {"id": b["tool_use_id"], "name": "", "content": _anthropic_result(b.get("content"))}
                    for b in blocks
                    if b["type"] == "tool_result"
                ],
            )
        )


def _anthropic_result(content: Any) -> str:
    if isinstance(content, list):
        return "".join(b.get("text", "") for b in content)
    return content or ""


def _read_gemini(request: FakeRequest, body: dict[str, Any]) -> None:
    system = body.get("systemInstruction") or body.get("system_instruction") or {}
    request.system = "".join(p.get("text", "") for p in system.get("parts", []))
    request.tools = [
        d["name"]
        for t in body.get("tools") or []
        for d in t.get("functionDeclarations") or t.get("function_declarations") or []
    ]
    config = body.get("generationConfig") or body.get("generation_config") or {}
    request.max_tokens = config.get("maxOutputTokens") or config.get("max_output_tokens")
    for content in body["contents"]:
        parts = content.get("parts", [])
        calls = [p.get("functionCall") or p.get("function_call") for p in parts]
        results = [p.get("functionResponse") or p.get("function_response") for p in parts]
        request.messages.append(
            FakeMessage(
                "assistant" if content.get("role") == "model" else "user",
                "".join(p.get("text", "") for p in parts),
                sum(1 for p in parts if {"inlineData", "inline_data", "fileData", "file_data"} & set(p)),
                [
                    {"id": c.get("id", ""), "name": c["name"], "arguments": json.dumps(c.get("args", {}))}
                    for c in calls
                    if c
                ],
                [
                    {"id": r.get("id", ""), "name": r["name"], "content": json.dumps(r.get("response"))}
                    for r in results
                    if r
                ],
            )
        )


def _read_ollama(request: FakeRequest, body: dict[str, Any]) -> None:
    request.tools = [t["function"]["name"] for t in body.get("tools") or []]
    request.max_tokens = (body.get("options") or {}).get("num_predict")
    for message in body["messages"]:
        role = message["role"]
        if role == "system":
            request.system += message.get("content", "")
        elif role == "tool":
            result = {"id": "", "name": message.get("tool_name", ""), "content": message.get("content", "")}
            _append_result(request, result)
        else:
            calls = [
                {
                    "id": c.get("id", ""),
                    "name": c["function"]["name"],
                    "arguments": json.dumps(c["function"]["arguments"]),
                }
                for c in message.get("tool_calls") or []
            ]
            request.messages.append(
                FakeMessage(role, message.get("content", ""), len(message.get("images") or []), calls)
            )


# ----------------------------------------------------------- whole replies


def reply_body(api: ApiKind, model: str, reply: FakeReply) -> dict[str, Any]:
    return {
        "openai": _openai_body,
        "anthropic": _anthropic_body,
        "gemini": _gemini_body,
        "ollama": _ollama_body,
    }[api](model, reply)


FINISH = {
    "openai": {"stop": "stop", "length": "length", "tool_calls": "tool_calls"},
    "anthropic": {"stop": "end_turn", "length": "max_tokens", "tool_calls": "tool_use"},
    "gemini": {"stop": "STOP", "length": "MAX_TOKENS", "tool_calls": "STOP"},
    "ollama": {"stop": "stop", "length": "length", "tool_calls": "stop"},
}


def _openai_usage(reply: FakeReply) -> dict[str, int]:
    total = reply.input_tokens + reply.output_tokens
    return {
        "prompt_tokens": reply.input_tokens,
        "completion_tokens": reply.output_tokens,
        "total_tokens": total,
    }


def _openai_call(call: tuple[str, str, str]) -> dict[str, Any]:
    return {"id": call[0], "type": "function", "function": {"name": call[1], "arguments": call[2]}}


def _openai_body(model: str, reply: FakeReply) -> dict[str, Any]:
    message: dict[str, Any] = {"role": "assistant", "content": reply.text or None}
    if reply.thinking:
        message["reasoning_content"] = reply.thinking
    if reply.tool_calls:
        message["tool_calls"] = [_openai_call(c) for c in reply.tool_calls]
    return {
        "id": f"chatcmpl-{uuid.uuid4().hex[:12]}",
        "object": "chat.completion",
        "created": int(time.time()),
        "model": model,
        "choices": [{"index": 0, "message": message, "finish_reason": FINISH["openai"][reply.finish]}],
        "usage": _openai_usage(reply),
    }


def _anthropic_body(model: str, reply: FakeReply) -> dict[str, Any]:
    content: list[dict[str, Any]] = (
        [{"type": "thinking", "thinking": reply.thinking, "signature": _SIGNATURE}] if reply.thinking else []
    )
    content += [{"type": "text", "text": reply.text}] if reply.text else []
    content += [
        {"type": "tool_use", "id": i, "name": n, "input": json.loads(a)} for i, n, a in reply.tool_calls
    ]
    return {
        "id": f"msg_{uuid.uuid4().hex[:12]}",
        "type": "message",
        "role": "assistant",
        "model": model,
        "content": content,
        "stop_reason": FINISH["anthropic"][reply.finish],
        "stop_sequence": None,
        "usage": {"input_tokens": reply.input_tokens, "output_tokens": reply.output_tokens},
    }


def _gemini_usage(reply: FakeReply) -> dict[str, int]:
    return {
        "promptTokenCount": reply.input_tokens,
        "candidatesTokenCount": reply.output_tokens,
        "totalTokenCount": reply.input_tokens + reply.output_tokens,
    }


def _gemini_body(model: str, reply: FakeReply) -> dict[str, Any]:
    parts: list[dict[str, Any]] = [{"text": reply.thinking, "thought": True}] if reply.thinking else []
    parts += [{"text": reply.text}] if reply.text else []
    parts += [{"functionCall": {"name": n, "args": json.loads(a)}} for _, n, a in reply.tool_calls]
    return {
        "candidates": [
            {
                "content": {"parts": parts, "role": "model"},
                "finishReason": FINISH["gemini"][reply.finish],
                "index": 0,
            }
        ],
        "usageMetadata": _gemini_usage(reply),
        "modelVersion": model,
    }


def _ollama_message(text: str, calls: list[tuple[str, str, str]]) -> dict[str, Any]:
    message: dict[str, Any] = {"role": "assistant", "content": text}
    if calls:
        message["tool_calls"] = [{"function": {"name": n, "arguments": json.loads(a)}} for _, n, a in calls]
    return message


def _ollama_body(model: str, reply: FakeReply) -> dict[str, Any]:
    return {
        "model": model,
        "created_at": _now(),
        "message": {**_ollama_message(reply.text, reply.tool_calls), **_ollama_thinking(reply.thinking)},
        **_ollama_done(reply),
    }


def _ollama_thinking(thinking: str) -> dict[str, Any]:
    return {"thinking": thinking} if thinking else {}


def _ollama_done(reply: FakeReply) -> dict[str, Any]:
    return {
        "done": True,
        "done_reason": FINISH["ollama"][reply.finish],
        "total_duration": 1000,
        "prompt_eval_count": reply.input_tokens,
        "eval_count": reply.output_tokens,
    }


def _now() -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())


# ----------------------------------------------------------------- streams


@dataclass
class Frame:
    """One written piece of a stream; `content` marks text or tool-argument
    pieces, which the fake paces and counts for `cut_after`."""

    data: bytes
    content: bool = False


def pieces(text: str) -> list[str]:
    """A text split the way the fake streams it: one word (with its
    following space) a piece."""
    return re.findall(r"\S+\s*|\s+", text)


def stream_frames(api: ApiKind, model: str, reply: FakeReply, *, include_usage: bool = True) -> list[Frame]:
    if api == "openai":
        return _openai_frames(model, reply, include_usage)
    if api == "anthropic":
        return _anthropic_frames(model, reply)
    if api == "gemini":
        return _gemini_frames(model, reply)
    return _ollama_frames(model, reply)


def filler_frame(api: ApiKind, model: str) -> Frame:
    """A content piece for a stream that never ends."""
    return {
        "openai": lambda: _sse(None, _openai_chunk(model, {"content": "and "})),
        "anthropic": lambda: _sse(
            "content_block_delta",
            {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": "and "}},
        ),
        "gemini": lambda: _sse(
            None, {"candidates": [{"content": {"parts": [{"text": "and "}], "role": "model"}}]}
        ),
        "ollama": lambda: _line(
            {"model": model, "created_at": _now(), "message": _ollama_message("and ", []), "done": False}
        ),
    }[api]()


def stream_error_frame(api: ApiKind, message: str) -> Frame:
    """An error sent inside a stream that had begun, as each API does it."""
    if api == "anthropic":
        return _sse("error", {"type": "error", "error": {"type": "overloaded_error", "message": message}})
    if api == "ollama":
        return _line({"error": message})
    return _sse(None, error_body(api, 500, message))


def malformed_frame(api: ApiKind) -> Frame:
    if api == "ollama":
        return Frame(b'{"model": "x", "message": {"content": \n')
    return Frame(b'data: {"choices": [{"delta": {"content": \n\n')


def _sse(event: str | None, data: Any) -> Frame:
    head = f"event: {event}\n" if event else ""
    payload = data if isinstance(data, str) else json.dumps(data)
    return Frame(f"{head}data: {payload}\n\n".encode())


def _line(data: Any) -> Frame:
    return Frame((json.dumps(data) + "\n").encode())


def _content(frame: Frame) -> Frame:
    frame.content = True
    return frame


def _halves(arguments: str) -> list[str]:
    middle = len(arguments) // 2
    return [part for part in (arguments[:middle], arguments[middle:]) if part]


def _openai_chunk(model: str, delta: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
    return {
        "id": "chatcmpl-stream",
        "object": "chat.completion.chunk",
        "created": int(time.time()),
        "model": model,
        "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
    }


def _openai_frames(model: str, reply: FakeReply, include_usage: bool) -> list[Frame]:
    frames = [_sse(None, _openai_chunk(model, {"role": "assistant", "content": ""}))]
    frames += [
        _sse(None, _openai_chunk(model, {"content": None, "reasoning_content": p}))
        for p in pieces(reply.thinking)
    ]
    frames += [_content(_sse(None, _openai_chunk(model, {"content": p}))) for p in pieces(reply.text)]
    for index, (call_id, name, arguments) in enumerate(reply.tool_calls):
        start = {
            "index": index,
            "id": call_id,
            "type": "function",
            "function": {"name": name, "arguments": ""},
        }
        frames.append(_sse(None, _openai_chunk(model, {"tool_calls": [start]})))
        for part in _halves(arguments):
            delta = {"tool_calls": [{"index": index, "function": {"arguments": part}}]}
            frames.append(_content(_sse(None, _openai_chunk(model, delta))))
    frames.append(_sse(None, _openai_chunk(model, {}, FINISH["openai"][reply.finish])))
    if include_usage:
        usage_chunk = {**_openai_chunk(model, {}), "choices": [], "usage": _openai_usage(reply)}
        frames.append(_sse(None, usage_chunk))
    frames.append(_sse(None, "[DONE]"))
    return frames


def _anthropic_frames(model: str, reply: FakeReply) -> list[Frame]:
    start = _anthropic_body(model, FakeReply("", input_tokens=reply.input_tokens))
    start.update(content=[], stop_reason=None, usage={"input_tokens": reply.input_tokens, "output_tokens": 1})
    frames = [
        _sse("message_start", {"type": "message_start", "message": start}),
        _sse("ping", {"type": "ping"}),
    ]
    index = 0
    if reply.thinking:
        thought = [{"type": "thinking_delta", "thinking": p} for p in pieces(reply.thinking)]
        frames += _anthropic_block(index, {"type": "thinking", "thinking": ""}, [*thought, _SIGNATURE_DELTA])
        index += 1
    if reply.text:
        text = [{"type": "text_delta", "text": p} for p in pieces(reply.text)]
        frames += _anthropic_block(index, {"type": "text", "text": ""}, text, content=True)
        index += 1
    for call_id, name, arguments in reply.tool_calls:
        use = {"type": "tool_use", "id": call_id, "name": name, "input": {}}
        parts = [{"type": "input_json_delta", "partial_json": part} for part in _halves(arguments)]
        frames += _anthropic_block(index, use, parts, content=True)
        index += 1
    end = {
        "type": "message_delta",
        "delta": {"stop_reason": FINISH["anthropic"][reply.finish], "stop_sequence": None},
        "usage": {"output_tokens": reply.output_tokens},
    }
    frames += [_sse("message_delta", end), _sse("message_stop", {"type": "message_stop"})]
    return frames


_SIGNATURE = "RmFrZSBzaWduYXR1cmU="  # what Anthropic signs a thinking block with, made up
_SIGNATURE_DELTA = {"type": "signature_delta", "signature": _SIGNATURE}


def _anthropic_block(
    index: int, start: dict[str, Any], deltas: list[dict[str, Any]], *, content: bool = False
) -> list[Frame]:
    """One content block's events: its start, its deltas (content pieces
    when `content`), its stop."""
    block = {"type": "content_block_start", "index": index, "content_block": start}
    frames = [_sse("content_block_start", block)]
    for delta in deltas:
        frame = _sse("content_block_delta", {"type": "content_block_delta", "index": index, "delta": delta})
        frames.append(_content(frame) if content else frame)
    frames.append(_sse("content_block_stop", {"type": "content_block_stop", "index": index}))
    return frames


def _gemini_frames(model: str, reply: FakeReply) -> list[Frame]:
    running = {"promptTokenCount": reply.input_tokens, "totalTokenCount": reply.input_tokens}

    def chunk(parts: list[dict[str, Any]]) -> dict[str, Any]:
        candidate = {"content": {"parts": parts, "role": "model"}, "index": 0}
        return {"candidates": [candidate], "usageMetadata": running, "modelVersion": model}

    frames = [_sse(None, chunk([{"text": p, "thought": True}])) for p in pieces(reply.thinking)]
    frames += [_content(_sse(None, chunk([{"text": p}]))) for p in pieces(reply.text)]
    if reply.tool_calls:
        calls = [{"functionCall": {"name": n, "args": json.loads(a)}} for _, n, a in reply.tool_calls]
        frames.append(_content(_sse(None, chunk(calls))))
    last = chunk([{"text": ""}])
    last["candidates"][0]["finishReason"] = FINISH["gemini"][reply.finish]
    last["usageMetadata"] = _gemini_usage(reply)
    frames.append(_sse(None, last))
    return frames


def _ollama_frames(model: str, reply: FakeReply) -> list[Frame]:
    def line(text: str, calls: list[tuple[str, str, str]]) -> Frame:
        return _line(
            {"model": model, "created_at": _now(), "message": _ollama_message(text, calls), "done": False}
        )

    thought = [
        {
            "model": model,
            "created_at": _now(),
            "message": {**_ollama_message("", []), "thinking": p},
            "done": False,
        }
        for p in pieces(reply.thinking)
    ]
    frames = [_line(each) for each in thought]
    frames += [_content(line(p, [])) for p in pieces(reply.text)]
    if reply.tool_calls:
        frames.append(_content(line("", reply.tool_calls)))
    frames.append(
        _line(
            {"model": model, "created_at": _now(), "message": _ollama_message("", []), **_ollama_done(reply)}
        )
    )
    return frames


# ------------------------------------------------------------------ errors

_ANTHROPIC_ERROR_TYPES = {
    400: "invalid_request_error",
    401: "authentication_error",
    403: "permission_error",
    404: "not_found_error",
    413: "request_too_large",
    429: "rate_limit_error",
    529: "overloaded_error",
}
_GEMINI_STATUSES = {
    400: "INVALID_ARGUMENT",
    401: "UNAUTHENTICATED",
    403: "PERMISSION_DENIED",
    404: "NOT_FOUND",
    429: "RESOURCE_EXHAUSTED",
    503: "UNAVAILABLE",
}


def error_body(api: ApiKind, status: int, message: str, *, retry: float | None = None) -> dict[str, Any]:
    """An error reply in the API's own shape; `retry` adds Gemini's RetryInfo."""
    if api == "openai":
        code = "rate_limit_exceeded" if status == 429 else None
        kind = "requests" if status == 429 else "invalid_request_error" if status < 500 else "server_error"
        return {"error": {"message": message, "type": kind, "param": None, "code": code}}
    if api == "anthropic":
        kind = _ANTHROPIC_ERROR_TYPES.get(status, "api_error")
        return {"type": "error", "error": {"type": kind, "message": message}}
    if api == "gemini":
        error: dict[str, Any] = {
            "code": status,
            "message": message,
            "status": _GEMINI_STATUSES.get(status, "INTERNAL"),
        }
        if retry is not None:
            error["details"] = [
                {"@type": "type.googleapis.com/google.rpc.RetryInfo", "retryDelay": f"{retry:g}s"}
            ]
        return {"error": error}
    return {"error": message}
