"""Every format's panel and merged replies, whole and streamed, validated
under the official SDK's own types in strict mode (`model_validate`, not the
clients' lenient parsing): openai `ChatCompletion`/`ChatCompletionChunk`
and `Response`/every `ResponseStreamEvent`, anthropic `Message`/every raw
stream event, google-genai `GenerateContentResponse`, ollama
`ChatResponse`/`GenerateResponse`. Route mode's replies are checked the
same way in tests/route/test_strict_types.py."""

from __future__ import annotations

from typing import Any

import httpx
import pytest

from benchwarmers.testing.sdk_types import check, check_all, ndjson_lines, sse_events

from .formats_support import Gateway

MODELS = ["bench/trio", "bench/trio:merged"]
USER = "Which is bigger, 3 or 4?"

# (whole kind, stream kind, path, body, framing)
FORMATS: dict[str, tuple[str, str, str, dict[str, Any], str]] = {
    "chat": (
        "chat",
        "chat_chunk",
        "/v1/chat/completions",
        {"messages": [{"role": "user", "content": USER}]},
        "sse",
    ),
    "responses": (
        "responses",
        "responses_event",
        "/v1/responses",
        {"input": USER, "instructions": "Be brief."},
        "sse",
    ),
    "anthropic": (
        "anthropic",
        "anthropic_event",
        "/v1/messages",
        {"max_tokens": 100, "messages": [{"role": "user", "content": USER}]},
        "sse",
    ),
    "ollama_chat": (
        "ollama_chat",
        "ollama_chat",
        "/api/chat",
        {"messages": [{"role": "user", "content": USER}]},
        "nd",
    ),
    "ollama_generate": ("ollama_generate", "ollama_generate", "/api/generate", {"prompt": USER}, "nd"),
}


def _events(raw: bytes, framing: str) -> list[Any]:
    return list(sse_events(raw) if framing == "sse" else ndjson_lines(raw))


@pytest.mark.parametrize("choice", ["live", "sections"])  # x-bench-stream: text as written, or seats whole
@pytest.mark.parametrize("model", MODELS)
@pytest.mark.parametrize("name", list(FORMATS))
def test_whole_and_streamed_replies_fit_the_sdk_types(
    gateway: Gateway, name: str, model: str, choice: str
) -> None:
    whole, streamed, path, body, framing = FORMATS[name]
    reply = httpx.post(gateway.url + path, json={**body, "model": model, "stream": False}, timeout=30)
    assert reply.status_code == 200, reply.text
    check(whole, reply.json())
    stream = httpx.post(
        gateway.url + path,
        json={**body, "model": model, "stream": True},
        headers={"x-bench-stream": choice},
        timeout=30,
    )
    assert stream.status_code == 200, stream.text
    events = _events(stream.content, framing)
    check_all(streamed, events)
    assert len(events) > 2  # opening, every seat, closing


@pytest.mark.parametrize("model", MODELS)
def test_gemini_replies_fit_the_sdk_type(gateway: Gateway, model: str) -> None:
    body = {"contents": [{"role": "user", "parts": [{"text": USER}]}]}
    base = f"{gateway.url}/v1beta/models/{model}"
    reply = httpx.post(f"{base}:generateContent", json=body, timeout=30)
    assert reply.status_code == 200, reply.text
    check("gemini", reply.json())
    for choice in ("live", "sections"):
        stream = httpx.post(
            f"{base}:streamGenerateContent",
            params={"alt": "sse"},
            json=body,
            headers={"x-bench-stream": choice},
            timeout=30,
        )
        check_all("gemini", sse_events(stream.content))


def test_a_reply_missing_a_declared_field_fails_the_check() -> None:
    """The check is strict: what the SDK declares and we leave out fails."""
    usage = {"input_tokens": 1, "input_tokens_details": {"cached_tokens": 0}, "output_tokens": 1}
    usage |= {"output_tokens_details": {"reasoning_tokens": 0}, "total_tokens": 2}
    body = {
        "id": "resp_1",
        "object": "response",
        "created_at": 1,
        "model": "bench/trio",
        "output": [],
        "parallel_tool_calls": False,
        "tool_choice": "none",
        "tools": [],
        "usage": usage,
    }
    with pytest.raises(ValueError, match="cache_write_tokens"):
        check("responses", body)
    with pytest.raises(ValueError, match="int"):
        check(
            "chat_chunk",
            {"id": "c", "object": "chat.completion.chunk", "created": "1", "model": "m", "choices": []},
        )
