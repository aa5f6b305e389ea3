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
from hypothesis import given
from hypothesis import strategies as st

from .hardening_support import FUZZ, as_bytes, check_reply, odd_text, perturbed

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
            "tool_calls": [
                {"id": "t1", "type": "function", "function": {"name": "read_file", "arguments": "{}"}}
            ],
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
        {
            "role": "assistant",
            "content": [{"type": "tool_use", "id": "t1", "name": "read_file", "input": {}}],
        },
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t1", "content": "file text"}]},
    ],
    "tools": [{"name": "read_file", "description": "d", "input_schema": {"type": "object"}}],
    "tool_choice": {"type": "auto"},
    "stream": False,
}
ROUTED = [f"bench/only-{api}:route" for api in ("openai", "anthropic", "gemini", "ollama")]
MODELS = st.sampled_from(["bench/duo", "bench/duo:merged", "bench/nope:route", "duo", "bench/", *ROUTED])
# Text a caller may put where JSON is expected inside a string (a tool
# call's arguments, a tool's result): adapters that need an object parse it.
JSON_IN_A_STRING = st.sampled_from(
    [
        "[" * 100_000,
        '{"x": NaN}',
        '{"x": Infinity}',
        '{"x": "\\ud800"}',
        '{"a": 1',
        "",
        "null",
        "[]",
        '"s"',
        "{}",
    ]
) | st.text(max_size=20)


@FUZZ
@given(body=perturbed(CHAT), model=MODELS, stream=st.booleans())
def test_chat_completions(client: httpx.Client, body: Any, model: str, stream: bool) -> None:
    if isinstance(body, dict):
        body.setdefault("model", model)
        if "stream" in body:
            body["stream"] = stream
    reply = client.post(
        "/v1/chat/completions", content=as_bytes(body), headers={"content-type": "application/json"}
    )
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


@FUZZ
@given(
    model=st.sampled_from(ROUTED), arguments=JSON_IN_A_STRING, result=JSON_IN_A_STRING, stream=st.booleans()
)
def test_json_inside_strings_reaches_every_adapter(
    client: httpx.Client, model: str, arguments: str, result: str, stream: bool
) -> None:
    """Route mode hands the caller's tool calls and results to a member on
    each API; those that want an object parse the text, and text that is no
    JSON object travels as text: never a 5xx."""
    body = {**CHAT, "model": model, "stream": stream}
    if not stream:  # OpenAI refuses `stream_options` without a stream (a 400, as here)
        del body["stream_options"]
    body["messages"] = [
        *CHAT["messages"][:2],
        {
            **CHAT["messages"][2],
            "tool_calls": [
                {
                    **CHAT["messages"][2]["tool_calls"][0],
                    "function": {"name": "read_file", "arguments": arguments},
                }
            ],
        },
        {**CHAT["messages"][3], "content": result},
    ]
    reply = client.post("/v1/chat/completions", json=body)
    check_reply(reply, "/v1/chat/completions", (arguments[:40], result[:40]))
    assert reply.status_code == 200, reply.text[:300]


PREFIXES = st.sampled_from(
    ["/v1/", "/v1beta/", "/api/", "/bench/", "/bench/ops/", "/mcp/", "/v1/messages/", "/x/", "/"]
)


@FUZZ
@given(
    prefix=PREFIXES,
    rest=st.text(
        st.characters(min_codepoint=0x21, max_codepoint=0x7E, exclude_characters="?#%"), max_size=20
    ),
    method=st.sampled_from(["GET", "POST", "PUT", "DELETE", "PATCH", "HEAD", "OPTIONS"]),
)
def test_unknown_paths_and_methods(client: httpx.Client, prefix: str, rest: str, method: str) -> None:
    """Paths no route has, and methods a route does not take: a 404 or 405
    in the format the path's prefix speaks."""
    path = prefix + rest
    reply = client.request(method, path, content=b"{}")
    if method == "HEAD":
        assert reply.status_code < 500, (path, reply.status_code)
    else:
        check_reply(reply, path, method)
