"""Anthropic's Messages API.

The base URL is the host without the version (`https://api.anthropic.com`);
we post `/v1/messages`. The API requires `max_tokens`, so a request that
sets none gets `DEFAULT_MAX_TOKENS`. A JSON schema goes as
`output_config.format` (structured outputs); plain JSON, which the API has
no mode for, is asked in the system prompt. Streams are typed SSE events: a
`message_start` (input usage), content blocks that open, grow by deltas and
stop, a `message_delta` (stop reason, output usage) and `message_stop`.
"""

from __future__ import annotations

import json
from typing import Any

from benchwarmers.providers.base import (
    Adapter,
    Outbound,
    StreamDecoder,
    Target,
    parse_arguments,
    text_and_tool_calls,
)
from benchwarmers.providers.structured_output import output_instruction
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

API_VERSION = "2023-06-01"
DEFAULT_MAX_TOKENS = 4096

FINISH: dict[str, FinishReason] = {
    "end_turn": "stop",
    "stop_sequence": "stop",
    "pause_turn": "stop",
    "max_tokens": "length",
    "model_context_window_exceeded": "length",
    "tool_use": "tool_calls",
    "refusal": "content_filter",
}

# In-stream error types and the HTTP status the same error has as a reply.
STREAM_ERROR_STATUS = {
    "rate_limit_error": 429,
    "overloaded_error": 529,
    "api_error": 500,
    "authentication_error": 401,
    "permission_error": 403,
    "invalid_request_error": 400,
}


class AnthropicAdapter(Adapter):
    api = "anthropic"

    def prepare(self, target: Target, request: Request, *, stream: bool) -> Outbound:
        sampling = request.sampling
        body: dict[str, Any] = {
            "model": target.served,
            "max_tokens": sampling.max_tokens or DEFAULT_MAX_TOKENS,
            "messages": [_message(m) for m in request.messages if _blocks(m)],
        }
        system = request.system
        output = request.output
        if output is not None and output.kind == "json_schema" and output.schema is not None:
            body["output_config"] = {"format": {"type": "json_schema", "schema": output.schema}}
        elif output is not None:  # no plain JSON mode in this API: asked in the system prompt
            system = (system + "\n\n" if system else "") + output_instruction(output)
        if system:
            body["system"] = system
        if request.tools:
            body["tools"] = [
                {"name": t.name, "description": t.description, "input_schema": t.parameters}
                for t in request.tools
            ]
            choice = _tool_choice(request.tool_choice)
            if choice:
                body["tool_choice"] = choice
        for name, value in (
            ("temperature", sampling.temperature),
            ("top_p", sampling.top_p),
            ("top_k", sampling.top_k),
        ):
            if value is not None:
                body[name] = value
        if sampling.stop:
            body["stop_sequences"] = list(sampling.stop)
        if stream:
            body["stream"] = True
        return Outbound(f"{target.base}/v1/messages", _headers(target), body)

    def read_reply(self, body: Any) -> list[Chunk]:
        if body.get("type") == "error":
            raise status_error(STREAM_ERROR_STATUS.get(body["error"].get("type"), 500), {}, body)
        text = "".join(b["text"] for b in body["content"] if b["type"] == "text")
        calls = [
            (b["id"], b["name"], json.dumps(b.get("input") or {}))
            for b in body["content"]
            if b["type"] == "tool_use"
        ]
        finish = FINISH.get(body.get("stop_reason") or "", "tool_calls" if calls else "stop")
        return text_and_tool_calls(text, calls, finish, _usage(body.get("usage")))

    def decoder(self) -> StreamDecoder:
        return _Decoder()

    def models_call(self, target: Target) -> tuple[str, dict[str, str]]:
        return f"{target.base}/v1/models?limit=1000", _headers(target)

    def read_models(self, body: Any) -> list[str]:
        return [str(m["id"]) for m in body["data"]]


class _Decoder(StreamDecoder):
    def __init__(self) -> None:
        self.input = Usage()
        self.output_tokens = 0
        self.finish: FinishReason = "stop"
        # Content-block index -> tool-call index, for the blocks that are tool uses.
        self.tool_index: dict[int, int] = {}

    def is_end(self, event: StreamEvent) -> bool:
        """`message_stop`, or the `message_delta` with the stop reason before
        it: a `message_stop` sent without the blank line that ends an SSE
        event is never dispatched, and the reply was whole without it."""
        data = event.data
        if not isinstance(data, dict):
            return False
        kind = data.get("type")
        delta = data.get("delta")
        return kind == "message_stop" or (
            kind == "message_delta" and isinstance(delta, dict) and bool(delta.get("stop_reason"))
        )

    def feed(self, event: StreamEvent) -> list[Chunk]:
        data = event.data
        kind = data.get("type")
        if kind == "error":
            error_type = (data.get("error") or {}).get("type", "")
            raise status_error(STREAM_ERROR_STATUS.get(error_type, 500), {}, data)
        if kind == "message_start":
            usage = _usage(data["message"].get("usage")) or Usage()
            self.input = Usage(usage.input_tokens, 0, usage.cached_input_tokens)
            self.output_tokens = usage.output_tokens
        elif kind == "content_block_start":
            block = data["content_block"]
            if block["type"] == "text" and block.get("text"):
                return [TextDelta(block["text"])]
            if block["type"] == "tool_use":
                index = self.tool_index[data["index"]] = len(self.tool_index)
                start = json.dumps(block["input"]) if block.get("input") else ""
                return [ToolCallDelta(index, block["id"], block["name"], start)]
        elif kind == "content_block_delta":
            delta = data["delta"]
            if delta["type"] == "text_delta":
                return [TextDelta(delta["text"])]
            if delta["type"] == "input_json_delta" and delta.get("partial_json"):
                return [ToolCallDelta(self.tool_index[data["index"]], arguments=delta["partial_json"])]
        elif kind == "message_delta":
            reason = (data.get("delta") or {}).get("stop_reason")
            if reason:
                self.finish = FINISH.get(reason, "stop")
            if data.get("usage", {}).get("output_tokens") is not None:
                self.output_tokens = int(data["usage"]["output_tokens"])
        return []

    def close(self) -> list[Chunk]:
        usage = Usage(self.input.input_tokens, self.output_tokens, self.input.cached_input_tokens)
        return [UsageReport(usage), Finish(self.finish)]


def _headers(target: Target) -> dict[str, str]:
    headers = {"anthropic-version": API_VERSION}
    if target.key:
        headers["x-api-key"] = target.key
    return headers


def _usage(usage: dict[str, Any] | None) -> Usage | None:
    """Input counts cached tokens too: they were read, and billed (the cache's
    reads at the cached price: `cached_input_tokens`)."""
    if not usage:
        return None
    read = sum(
        int(usage.get(key) or 0)
        for key in ("input_tokens", "cache_creation_input_tokens", "cache_read_input_tokens")
    )
    return Usage(read, int(usage.get("output_tokens") or 0), int(usage.get("cache_read_input_tokens") or 0))


def _tool_choice(choice: str) -> dict[str, str] | None:
    if not choice:
        return None
    if choice in ("auto", "none"):
        return {"type": choice}
    if choice == "required":
        return {"type": "any"}
    return {"type": "tool", "name": choice}


def _message(message: Message) -> dict[str, Any]:
    return {"role": message.role, "content": _blocks(message)}


def _blocks(message: Message) -> list[dict[str, Any]]:
    # Tool results must open a user turn; empty text blocks are refused.
    results = [_tool_result(p) for p in message.tool_results]
    rest = [_block(p) for p in message.parts if not isinstance(p, ToolResult) and not _empty(p)]
    return results + rest


def _empty(part: Any) -> bool:
    return isinstance(part, Text) and not part.text


def _block(part: Text | Image | ToolCall) -> dict[str, Any]:
    if isinstance(part, Text):
        return {"type": "text", "text": part.text}
    if isinstance(part, Image):
        if part.url:
            return {"type": "image", "source": {"type": "url", "url": part.url}}
        return {
            "type": "image",
            "source": {"type": "base64", "media_type": part.media_type, "data": part.data},
        }
    return {"type": "tool_use", "id": part.id, "name": part.name, "input": parse_arguments(part.arguments)}


def _tool_result(result: ToolResult) -> dict[str, Any]:
    block: dict[str, Any] = {"type": "tool_result", "tool_use_id": result.call_id, "content": result.content}
    if result.is_error:
        block["is_error"] = True
    return block
