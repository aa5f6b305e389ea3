"""Ollama's native chat API (`/api/chat`), local or behind a hub.

The base URL is the server's root (`http://localhost:11434`). Ollama
streams unless told not to, as NDJSON lines ending with one whose `done` is
true; sampling goes under `options` (`num_predict` is its max tokens);
images are a list of base64 strings on the message; tool calls carry object
arguments and usually no id, so ids are synthesised stably; tool results are
`tool` messages naming the tool. It has no `tool_choice`: "none" leaves the
tools out and a tool's name sends only that tool.
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
    synthetic_call_id,
    text_and_tool_calls,
    tool_names_by_call_id,
)
from benchwarmers.providers.transport import StreamEvent, status_error
from benchwarmers.types import (
    Chunk,
    Finish,
    FinishReason,
    Message,
    Request,
    TextDelta,
    ToolCallDelta,
    Usage,
    UsageReport,
)

FINISH: dict[str, FinishReason] = {"stop": "stop", "length": "length"}


class OllamaAdapter(Adapter):
    api = "ollama"
    framing = "ndjson"

    def prepare(self, target: Target, request: Request, *, stream: bool) -> Outbound:
        names = tool_names_by_call_id(request.messages)
        messages: list[dict[str, Any]] = (
            [{"role": "system", "content": request.system}] if request.system else []
        )
        for message in request.messages:
            messages.extend(_messages(message, names))
        body: dict[str, Any] = {"model": target.served, "messages": messages, "stream": stream}
        tools = [t for t in request.tools if request.tool_choice in ("", "auto", "required", t.name)]
        if tools and request.tool_choice != "none":
            body["tools"] = [
                {
                    "type": "function",
                    "function": {"name": t.name, "description": t.description, "parameters": t.parameters},
                }
                for t in tools
            ]
        options = _options(request)
        if options:
            body["options"] = options
        if request.output is not None:  # "json", or the schema itself
            schema = request.output.schema
            body["format"] = schema if request.output.kind == "json_schema" and schema else "json"
        return Outbound(f"{target.base}/api/chat", _headers(target), body)

    def read_reply(self, body: Any) -> list[Chunk]:
        reader = _Reader()
        chunks = reader.feed(StreamEvent("", body))
        text = "".join(c.text for c in chunks if isinstance(c, TextDelta))
        calls = [(c.id, c.name, c.arguments) for c in chunks if isinstance(c, ToolCallDelta)]
        return text_and_tool_calls(text, calls, reader.finish_reason(), reader.usage)

    def decoder(self) -> StreamDecoder:
        return _Reader()

    def models_call(self, target: Target) -> tuple[str, dict[str, str]]:
        return f"{target.base}/api/tags", _headers(target)

    def read_models(self, body: Any) -> list[str]:
        return [str(m.get("name") or m["model"]) for m in body.get("models") or []]


class _Reader(StreamDecoder):
    def __init__(self) -> None:
        self.usage: Usage | None = None
        self.done_reason = ""
        self.calls = 0

    def is_end(self, event: StreamEvent) -> bool:
        return isinstance(event.data, dict) and event.data.get("done") is True

    def feed(self, event: StreamEvent) -> list[Chunk]:
        data = event.data
        if data.get("error"):
            raise status_error(500, {}, data)
        chunks: list[Chunk] = []
        message = data.get("message") or {}
        if message.get("content"):
            chunks.append(TextDelta(message["content"]))
        for call in message.get("tool_calls") or []:
            function = call["function"]
            raw = function.get("arguments")
            arguments = raw if isinstance(raw, str) else json.dumps(raw or {})
            call_id = call.get("id") or synthetic_call_id(self.calls, function["name"], arguments)
            chunks.append(ToolCallDelta(self.calls, call_id, function["name"], arguments))
            self.calls += 1
        if data.get("done"):
            self.done_reason = data.get("done_reason") or "stop"
            self.usage = Usage(int(data.get("prompt_eval_count") or 0), int(data.get("eval_count") or 0))
        return chunks

    def finish_reason(self) -> FinishReason:
        reason = FINISH.get(self.done_reason, "stop")
        return "tool_calls" if reason == "stop" and self.calls else reason

    def close(self) -> list[Chunk]:
        usage: list[Chunk] = [UsageReport(self.usage)] if self.usage else []
        return [*usage, Finish(self.finish_reason())]


def _headers(target: Target) -> dict[str, str]:
    # Local Ollama needs no key; a hosted or proxied one takes a bearer token.
    return {"authorization": f"Bearer {target.key}"} if target.key else {}


def _options(request: Request) -> dict[str, Any]:
    sampling = request.sampling
    options: dict[str, Any] = {
        name: value
        for name, value in (
            ("temperature", sampling.temperature),
            ("top_p", sampling.top_p),
            ("top_k", sampling.top_k),
            ("num_predict", sampling.max_tokens),
            ("seed", sampling.seed),
        )
        if value is not None
    }
    if sampling.stop:
        options["stop"] = list(sampling.stop)
    return options


def _messages(message: Message, names: dict[str, str]) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = [
        {
            "role": "tool",
            "content": f"Error: {r.content}" if r.is_error else r.content,
            "tool_name": r.name or names.get(r.call_id, ""),
        }
        for r in message.tool_results
    ]
    images = message.images
    for image in images:
        if image.url:
            raise ProviderError(
                "Ollama takes images inline only; this request carries a remote image URL "
                f"({image.url[:80]}), which the gateway does not fetch"
            )
    entry: dict[str, Any] = {"role": message.role, "content": message.text}
    if images:
        entry["images"] = [image.data for image in images]
    if message.tool_calls:
        entry["tool_calls"] = [
            {"function": {"name": c.name, "arguments": parse_arguments(c.arguments)}}
            for c in message.tool_calls
        ]
    if message.text or images or message.tool_calls:
        out.append(entry)
    return out
