"""Any OpenAI-compatible chat-completions API (OpenAI, OpenRouter, hubs,
vLLM, llama.cpp, LM Studio...).

The endpoint's base URL includes the version (`https://host/v1`), because
compatible servers put it in different places; we append
`/chat/completions` and `/models`. Streams ask for
`stream_options.include_usage` so the usage ledger gets real token counts
from a streamed call too, except of a server that refused it (Mistral
answers 422 "extra_forbidden" and sends the usage unasked): the first
stream to each base URL is watched for that refusal and asked again
without it, and so are all its streams after. Structured output goes as
`response_format`.
"""

from __future__ import annotations

from collections.abc import AsyncGenerator, AsyncIterator
from typing import Any

from benchwarmers.errors import ProviderError
from benchwarmers.providers.base import (
    Adapter,
    Outbound,
    StreamDecoder,
    Target,
    text_and_tool_calls,
)
from benchwarmers.providers.outbound import OutboundClient
from benchwarmers.providers.structured_output import openai_response_format
from benchwarmers.providers.transport import StreamEvent, status_error
from benchwarmers.types import (
    Chunk,
    Finish,
    FinishReason,
    Image,
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
    "stop": "stop",
    "length": "length",
    "tool_calls": "tool_calls",
    "function_call": "tool_calls",
    "content_filter": "content_filter",
    "error": "error",  # OpenRouter's, with the error object beside it
}


class OpenAIAdapter(Adapter):
    api = "openai"

    def __init__(self, outbound: OutboundClient) -> None:
        super().__init__(outbound)
        # Per base URL (as the endpoint wrote it) whose first stream was read:
        # whether its server took `stream_options`. Only a stream to a base
        # not here yet is watched (a generator more).
        self.takes_options: dict[str, bool] = {}

    def execute(
        self, target: Target, request: Request, *, stream: bool, timeout: float | None = None
    ) -> AsyncIterator[Chunk]:
        chunks = super().execute(target, request, stream=stream, timeout=timeout)
        if not stream or target.base_url in self.takes_options:
            return chunks
        return self._learning(chunks, target, request, timeout)

    async def _learning(
        self, chunks: AsyncIterator[Chunk], target: Target, request: Request, timeout: float | None
    ) -> AsyncIterator[Chunk]:
        """The first stream to a base URL: asked again without
        `stream_options` when the server refused it, else as it came. The
        stream read is closed with this one (its connection given back at
        once, not when the collector finds it)."""
        try:
            first = await anext(chunks)  # the reply's headers: the body was taken
        except ProviderError as error:
            if error.status not in (400, 422) or "stream_options" not in error.message:
                raise
            self.takes_options[target.base_url] = False
            chunks = super().execute(target, request, stream=True, timeout=timeout)
            first = await anext(chunks)
        else:
            self.takes_options[target.base_url] = True
        try:
            yield first
            async for chunk in chunks:
                yield chunk
        finally:
            if isinstance(chunks, AsyncGenerator):
                await chunks.aclose()

    def prepare(self, target: Target, request: Request, *, stream: bool) -> Outbound:
        body: dict[str, Any] = {"model": target.served, "messages": _messages(request)}
        if request.tools:
            body["tools"] = [
                {
                    "type": "function",
                    "function": {"name": t.name, "description": t.description, "parameters": t.parameters},
                }
                for t in request.tools
            ]
            if request.tool_choice in ("auto", "none", "required"):
                body["tool_choice"] = request.tool_choice
            elif request.tool_choice:
                body["tool_choice"] = {"type": "function", "function": {"name": request.tool_choice}}
        sampling = request.sampling
        for name, value in (
            ("temperature", sampling.temperature),
            ("top_p", sampling.top_p),
            ("top_k", sampling.top_k),
            ("max_tokens", sampling.max_tokens),
            ("seed", sampling.seed),
        ):
            if value is not None:
                body[name] = value
        if sampling.stop:
            body["stop"] = list(sampling.stop)
        if request.output is not None:
            body["response_format"] = openai_response_format(request.output)
        if stream:
            body["stream"] = True
            if self.takes_options.get(target.base_url, True):
                body["stream_options"] = {"include_usage": True}
        return Outbound(f"{target.base}/chat/completions", _headers(target), body)

    def read_reply(self, body: Any) -> list[Chunk]:
        if body.get("error"):
            raise _in_reply_error(body)
        choice = body["choices"][0]
        message = choice["message"]
        calls = [
            (c["id"], c["function"]["name"], c["function"].get("arguments") or "{}")
            for c in message.get("tool_calls") or []
        ]
        finish = _finish(choice.get("finish_reason"), calls)
        text = _text(message.get("content"))
        refusal = message.get("refusal")
        if refusal and not text:
            return text_and_tool_calls(refusal, calls, _refused(finish), _usage(body))
        return text_and_tool_calls(text, calls, finish, _usage(body))

    def decoder(self) -> StreamDecoder:
        return _Decoder()

    def models_call(self, target: Target) -> tuple[str, dict[str, str]]:
        return f"{target.base}/models", _headers(target)

    def read_models(self, body: Any) -> list[str]:
        return [str(m["id"]) for m in body["data"]]


class _Decoder(StreamDecoder):
    def __init__(self) -> None:
        self.finish: FinishReason | None = None
        self.usage: Usage | None = None
        self.saw_tool_call = False
        self.refused = False

    def is_end(self, event: StreamEvent) -> bool:
        """`[DONE]`, or a chunk with a finish reason: some compatible servers
        never send `[DONE]`, and one the server sent without the blank line
        that ends an SSE event is never dispatched; the reply is whole once
        its finish reason came (the usage chunk after it is still read)."""
        data = event.data
        if data is None:
            return True
        choices = data.get("choices") if type(data) is dict else None  # any other shape: `feed` says so
        if type(choices) is list:  # a loop, not `any` over a generator: this runs on every event
            for choice in choices:
                if type(choice) is dict and choice.get("finish_reason"):
                    return True
        return False

    def feed(self, event: StreamEvent) -> list[Chunk]:
        data = event.data
        if data is None:
            return []
        if data.get("error"):
            raise _in_reply_error(data)
        if data.get("usage"):
            self.usage = _usage(data)
        chunks: list[Chunk] = []
        for choice in data.get("choices") or []:
            delta = choice.get("delta") or {}
            content = delta.get("content")
            text = content if type(content) is str else _text(content)  # a string: most events
            if text:
                chunks.append(TextDelta(text))
            elif delta.get("refusal"):  # the model declined: its words are the answer
                self.refused = True
                chunks.append(TextDelta(delta["refusal"]))
            for call in delta.get("tool_calls") or []:
                self.saw_tool_call = True
                function = call.get("function") or {}
                chunks.append(
                    ToolCallDelta(
                        int(call.get("index", 0)),
                        call.get("id") or "",
                        function.get("name") or "",
                        function.get("arguments") or "",
                    )
                )
            if choice.get("finish_reason"):
                self.finish = FINISH.get(choice["finish_reason"], "stop")
        return chunks

    def close(self) -> list[Chunk]:
        chunks: list[Chunk] = [UsageReport(self.usage)] if self.usage else []
        finish = self.finish or ("tool_calls" if self.saw_tool_call else "stop")
        return [*chunks, Finish(_refused(finish) if self.refused else finish)]


def _headers(target: Target) -> dict[str, str]:
    return {"authorization": f"Bearer {target.key}"} if target.key else {}


def _finish(reason: str | None, calls: list[Any]) -> FinishReason:
    if reason in FINISH:
        return FINISH[reason]
    return "tool_calls" if calls else "stop"


def _text(content: Any) -> str:
    """A message's or delta's `content` as text: a string, or a list of
    typed parts (Mistral's reasoning models send `[{"type": "thinking", ...},
    {"type": "text", "text": ...}]`), of which only the text parts are the
    answer."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(
            str(part.get("text") or "")
            for part in content
            if isinstance(part, dict) and part.get("type") == "text"
        )
    return ""


def _refused(finish: FinishReason) -> FinishReason:
    """A refusal ends as `content_filter` (as Anthropic's `refusal` does),
    though OpenAI says `stop`: the answer is the model's no."""
    return "content_filter" if finish == "stop" else finish


def _in_reply_error(body: dict[str, Any]) -> ProviderError:
    """An error object in a 200 reply or stream (OpenRouter sends one when
    its provider fails mid-answer): its own HTTP code when it gives one
    (OpenRouter's `code: 502`), else a server error."""
    error = body.get("error")
    code = error.get("code") if isinstance(error, dict) else None
    status = int(code) if isinstance(code, int | str) and str(code).isdigit() else 500
    return status_error(status if 400 <= status < 600 else 500, {}, body)


def _usage(body: dict[str, Any]) -> Usage | None:
    usage = body.get("usage")
    if not usage:
        return None
    details = usage.get("prompt_tokens_details")
    cached = int(details.get("cached_tokens") or 0) if isinstance(details, dict) else 0
    return Usage(int(usage.get("prompt_tokens") or 0), int(usage.get("completion_tokens") or 0), cached)


def _messages(request: Request) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = [{"role": "system", "content": request.system}] if request.system else []
    for message in request.messages:
        if message.role == "assistant":
            entry: dict[str, Any] = {"role": "assistant", "content": message.text or None}
            if message.tool_calls:
                entry["tool_calls"] = [_tool_call(c) for c in message.tool_calls]
            out.append(entry)
            continue
        # Tool results are their own `tool` messages, before the user's words.
        out.extend(_tool_result(r) for r in message.tool_results)
        parts = [p for p in message.parts if isinstance(p, Text | Image)]
        if not parts:
            continue
        if not message.images:
            out.append({"role": "user", "content": message.text})
        else:
            out.append({"role": "user", "content": [_content_part(p) for p in parts]})
    return out


def _content_part(part: Text | Image) -> dict[str, Any]:
    if isinstance(part, Text):
        return {"type": "text", "text": part.text}
    url = part.url or f"data:{part.media_type};base64,{part.data}"
    return {"type": "image_url", "image_url": {"url": url}}


def _tool_call(call: ToolCall) -> dict[str, Any]:
    return {"id": call.id, "type": "function", "function": {"name": call.name, "arguments": call.arguments}}


def _tool_result(result: ToolResult) -> dict[str, Any]:
    content = f"Error: {result.content}" if result.is_error else result.content
    return {"role": "tool", "tool_call_id": result.call_id, "content": content}
