"""Google's Gemini API (generateContent).

The base URL is the host without the version
(`https://generativelanguage.googleapis.com`); we post
`/v1beta/models/{served}:generateContent`, or `:streamGenerateContent?alt=sse`
to stream. Gemini names roles `user`/`model`, carries tool calls as
`functionCall` parts with object arguments and tool results as
`functionResponse` parts that name the tool, and often sends no call ids,
so ids are synthesised stably (`synthetic_call_id`). Its streams have no end
marker: the chunk with a `finishReason` ends the reply.
"""

from __future__ import annotations

import json
from typing import Any

from benchwarmers.errors import ProviderError
from benchwarmers.providers.base import (
    Adapter,
    Outbound,
    StreamDecoder,
    Target,
    parse_arguments,
    strict_json,
    synthetic_call_id,
    text_and_tool_calls,
    tool_names_by_call_id,
)
from benchwarmers.providers.transport import StreamEvent, status_error
from benchwarmers.types import (
    Chunk,
    Finish,
    FinishReason,
    Image,
    Message,
    Request,
    Text,
    TextDelta,
    ToolCall,
    ToolCallDelta,
    ToolResult,
    Usage,
    UsageReport,
)

FINISH: dict[str, FinishReason] = {
    "STOP": "stop",
    "MAX_TOKENS": "length",
    "SAFETY": "content_filter",
    "RECITATION": "content_filter",
    "BLOCKLIST": "content_filter",
    "PROHIBITED_CONTENT": "content_filter",
    "SPII": "content_filter",
    "IMAGE_SAFETY": "content_filter",
    "IMAGE_PROHIBITED_CONTENT": "content_filter",
    "IMAGE_RECITATION": "content_filter",
    "MODEL_ARMOR": "content_filter",
    "LANGUAGE": "error",
    "MALFORMED_FUNCTION_CALL": "error",
    "UNEXPECTED_TOOL_CALL": "error",
    "TOO_MANY_TOOL_CALLS": "error",
    "MISSING_THOUGHT_SIGNATURE": "error",
    "MALFORMED_RESPONSE": "error",
    "IMAGE_OTHER": "error",
    "NO_IMAGE": "error",
    "OTHER": "error",
}  # as google-genai's FinishReason lists them; one not here ends as `stop`

# Gemini's `responseMimeType` for an answer in JSON (with or without a schema).
JSON_MIME = "application/json"
TOOL_MODES = {"auto": "AUTO", "none": "NONE", "required": "ANY"}


class GeminiAdapter(Adapter):
    api = "gemini"

    def prepare(self, target: Target, request: Request, *, stream: bool) -> Outbound:
        names = tool_names_by_call_id(request.messages)
        body: dict[str, Any] = {"contents": [_content(m, names) for m in request.messages]}
        if request.system:
            body["systemInstruction"] = {"parts": [{"text": request.system}]}
        if request.tools:
            body["tools"] = [
                {
                    "functionDeclarations": [
                        {"name": t.name, "description": t.description, "parameters": t.parameters}
                        for t in request.tools
                    ]
                }
            ]
            if request.tool_choice:
                config: dict[str, Any] = {"mode": TOOL_MODES.get(request.tool_choice, "ANY")}
                if request.tool_choice not in TOOL_MODES:
                    config["allowedFunctionNames"] = [request.tool_choice]
                body["toolConfig"] = {"functionCallingConfig": config}
        generation = _generation_config(request)
        if generation:
            body["generationConfig"] = generation
        model = target.served.removeprefix("models/")
        url = f"{target.base}/v1beta/models/{model}:" + (
            "streamGenerateContent?alt=sse" if stream else "generateContent"
        )
        return Outbound(url, _headers(target), body)

    def read_reply(self, body: Any) -> list[Chunk]:
        """A reply body, or a list of them: what the stream call answers
        without `alt=sse` (a proxy that dropped the query), read as its chunks."""
        reader = _Reader()
        chunks = [
            c
            for one in (body if isinstance(body, list) else [body])
            for c in reader.feed(StreamEvent("", one))
        ]
        text = "".join(c.text for c in chunks if isinstance(c, TextDelta))
        calls = [(c.id, c.name, c.arguments) for c in chunks if isinstance(c, ToolCallDelta)]
        return text_and_tool_calls(text, calls, reader.finish_reason(), reader.usage)

    def decoder(self) -> StreamDecoder:
        return _Reader()

    def models_call(self, target: Target) -> tuple[str, dict[str, str]]:
        return f"{target.base}/v1beta/models?pageSize=1000", _headers(target)

    def read_models(self, body: Any) -> list[str]:
        return [str(m["name"]).removeprefix("models/") for m in body.get("models") or []]


class _Reader(StreamDecoder):
    """Reads reply bodies; a stream is a sequence of them, each with more
    parts, the last with the finish reason (usage is cumulative)."""

    def __init__(self) -> None:
        self.finish: str | None = None
        self.blocked = False
        self.usage: Usage | None = None
        self.calls = 0

    def is_end(self, event: StreamEvent) -> bool:
        data = event.data
        if not isinstance(data, dict):
            return False  # `feed` says what is wrong with it
        candidates = data.get("candidates")
        if type(candidates) is list:  # a loop, not `any` over a generator: this runs on every event
            for candidate in candidates:
                if type(candidate) is dict and candidate.get("finishReason"):
                    return True
        feedback = data.get("promptFeedback")
        return type(feedback) is dict and bool(feedback.get("blockReason"))

    def feed(self, event: StreamEvent) -> list[Chunk]:
        data = event.data
        if isinstance(data, dict) and data.get("error"):
            raise status_error(int(data["error"].get("code") or 500), {}, data)
        return self.read(data)

    def read(self, body: dict[str, Any]) -> list[Chunk]:
        if body.get("usageMetadata"):
            meta = body["usageMetadata"]
            output = int(meta.get("candidatesTokenCount") or 0) + int(meta.get("thoughtsTokenCount") or 0)
            cached = int(meta.get("cachedContentTokenCount") or 0)  # part of the prompt's count
            self.usage = Usage(int(meta.get("promptTokenCount") or 0), output, cached)
        if (body.get("promptFeedback") or {}).get("blockReason"):
            self.blocked = True
        chunks: list[Chunk] = []
        for candidate in (body.get("candidates") or [])[:1]:
            if candidate.get("finishReason"):
                self.finish = candidate["finishReason"]
            for part in (candidate.get("content") or {}).get("parts") or []:
                if "text" in part and part["text"] and not part.get("thought"):
                    chunks.append(TextDelta(part["text"]))
                elif "functionCall" in part:
                    call = part["functionCall"]
                    arguments = json.dumps(call.get("args") or {})
                    call_id = call.get("id") or synthetic_call_id(self.calls, call["name"], arguments)
                    chunks.append(ToolCallDelta(self.calls, call_id, call["name"], arguments))
                    self.calls += 1
        return chunks

    def finish_reason(self) -> FinishReason:
        if self.blocked and self.finish is None:
            return "content_filter"
        reason = FINISH.get(self.finish or "STOP", "stop")
        return "tool_calls" if reason == "stop" and self.calls else reason

    def close(self) -> list[Chunk]:
        usage: list[Chunk] = [UsageReport(self.usage)] if self.usage else []
        return [*usage, Finish(self.finish_reason())]


def _headers(target: Target) -> dict[str, str]:
    return {"x-goog-api-key": target.key} if target.key else {}


def _generation_config(request: Request) -> dict[str, Any]:
    sampling = request.sampling
    config: dict[str, Any] = {
        name: value
        for name, value in (
            ("temperature", sampling.temperature),
            ("topP", sampling.top_p),
            ("topK", sampling.top_k),
            ("maxOutputTokens", sampling.max_tokens),
            ("seed", sampling.seed),
        )
        if value is not None
    }
    if sampling.stop:
        config["stopSequences"] = list(sampling.stop)
    if request.output is not None:  # JSON, against the schema as JSON Schema (not OpenAPI's subset)
        config["responseMimeType"] = JSON_MIME
        if request.output.kind == "json_schema" and request.output.schema is not None:
            config["responseJsonSchema"] = request.output.schema
    return config


def _content(message: Message, names: dict[str, str]) -> dict[str, Any]:
    role = "model" if message.role == "assistant" else "user"
    results = [_function_response(r, names) for r in message.tool_results]
    rest = [_part(p) for p in message.parts if not isinstance(p, ToolResult) and not _empty(p)]
    return {"role": role, "parts": results + rest}


def _empty(part: Any) -> bool:
    return isinstance(part, Text) and not part.text


def _part(part: Text | Image | ToolCall) -> dict[str, Any]:
    if isinstance(part, Text):
        return {"text": part.text}
    if isinstance(part, Image):
        if part.url:
            raise ProviderError(
                "Gemini takes images inline only; this request carries a remote image URL "
                f"({part.url[:80]}), which the gateway does not fetch"
            )
        return {"inlineData": {"mimeType": part.media_type, "data": part.data}}
    return {"functionCall": {"name": part.name, "args": parse_arguments(part.arguments)}}


def _function_response(result: ToolResult, names: dict[str, str]) -> dict[str, Any]:
    name = result.name or names.get(result.call_id, "")
    if not name:
        raise ProviderError(f"Gemini needs the tool's name for the result of call {result.call_id!r}")
    try:
        parsed = strict_json(result.content)
    except ValueError:
        parsed = None
    key = "error" if result.is_error else "result"
    response = parsed if isinstance(parsed, dict) and not result.is_error else {key: result.content}
    return {"functionResponse": {"name": name, "response": response}}
