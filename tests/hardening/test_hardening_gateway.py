"""The gateway routes the format fuzz (tests/formats) leaves out: OpenAI
chat completions (panel, merged and streamed), route mode on chat
completions and on Messages (tools, tool results, a conversation header),
the listings (`/v1/models`, `/v1beta/models`, `/api/tags`, `/api/version`)
and the Gemini path on `/v1/models/...`. Never a 5xx; a 4xx in the
caller's format."""

from __future__ import annotations

from typing import Any
from urllib.parse import quote, urlencode

import httpx
from hardening_support import FUZZ, as_bytes, check_reply, odd_text, perturbed
from hypothesis import given
from hypothesis import strategies as st

TOOL = {
    "type": "function",
    "function": {"name": "read_file", "description": "d", "parameters": {"type": "object", "properties": {}}},
}
CHAT = {
    "model": "bench/duo",
    "messages": [
        {"role": "system", "content": "s"},
        {"role": "user", "content": [{"type": "text", "text": "hi"}]},
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [{"id": "t1", "type": "function", "function": {"name": "read_file", "arguments": "{}"}}],
        },
        {"role": "tool", "tool_call_id": "t1", "content": "file text"},
    ],
    "tools": [TOOL],
    "tool_choice": "auto",
    "temperature": 0.5,
    "max_tokens": 20,
    "stop": ["x"],
    "stream": False,
    "stream_options": {"include_usage": True},
}
MESSAGES = {
    "model": "bench/duo:route",
    "max_tokens": 20,
    "system": "s",
    "messages": [
        {"role": "user", "content": "hi"},
        {"role": "assistant", "content": [{"type": "tool_use", "id": "t1", "name": "read_file", "input": {}}]},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t1", "content": "file text"}]},
    ],
    "tools": [{"name": "read_file", "description": "d", "input_schema": {"type": "object"}}],
    "tool_choice": {"type": "auto"},
    "stream": False,
}
MODELS = st.sampled_from(["bench/duo", "bench/duo:route", "bench/duo:merged", "bench/nope:route", "duo", "bench/"])


@FUZZ
@given(body=perturbed(CHAT), model=MODELS, stream=st.booleans())
def test_chat_completions(client: httpx.Client, body: Any, model: str, stream: bool) -> None:
    if isinstance(body, dict):
        body.setdefault("model", model)
        if "stream" in body:
            body["stream"] = stream
    reply = client.post("/v1/chat/completions", content=as_bytes(body), headers={"content-type": "application/json"})
    check_reply(reply, "/v1/chat/completions", body)


@FUZZ
@given(body=perturbed(MESSAGES), stream=st.booleans(), conversation=odd_text)
def test_messages_route_mode(client: httpx.Client, body: Any, stream: bool, conversation: str) -> None:
    if isinstance(body, dict) and "stream" in body:
        body["stream"] = stream
    headers = {"content-type": "application/json", "x-bench-conversation": quote(conversation)}
    reply = client.post("/v1/messages", content=as_bytes(body), headers=headers)
    check_reply(reply, "/v1/messages", body)


@FUZZ
@given(
    path=st.sampled_from(["/v1/models", "/v1beta/models", "/api/tags", "/api/version", "/healthz"]),
    query=st.lists(st.tuples(st.sampled_from(["pageSize", "pageToken", "key", "x"]), odd_text), max_size=3),
)
def test_listings(client: httpx.Client, path: str, query: list[tuple[str, str]]) -> None:
    url = f"{path}?{urlencode(query)}" if query else path
    check_reply(client.get(url), url)


@FUZZ
@given(
    name=odd_text,
    method=st.sampled_from(["generateContent", "streamGenerateContent", "countTokens", "embedContent", "x"]),
    body=perturbed({"contents": [{"role": "user", "parts": [{"text": "hi"}]}]}),
)
def test_gemini_on_v1(client: httpx.Client, name: str, method: str, body: Any) -> None:
    """google-genai's default API version is v1: the same route, on another prefix."""
    path = f"/v1/models/{quote(name, safe='/')}:{method}"
    check_reply(client.post(path, content=as_bytes(body)), path, body)
