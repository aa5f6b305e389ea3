"""Property tests: whatever body a client sends to any of these routes, the
server answers either a success or a 4xx in that route's own error shape,
and never a 500. Bodies are valid requests with parts replaced, removed or
added at random (so they reach deep into each parser), arbitrary JSON, and
bytes that are not JSON at all."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any
from urllib.parse import quote

import httpx
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from .formats_support import PNG_DATA, Gateway

FUZZ = settings(
    max_examples=60,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)

json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers()
    | st.sampled_from([10**400, -(2**64), 2**53 + 1])
    | st.floats()  # NaN and the infinities too: Python's JSON reader takes them
    | st.text(max_size=12),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=10), inner, max_size=3),
    max_leaves=8,
)


def perturbed(value: Any) -> st.SearchStrategy[Any]:
    """`value`, or a near miss of it: any key may go missing or hold
    anything, any list may grow, shrink or hold anything."""
    if isinstance(value, dict):
        shaped = st.fixed_dictionaries({}, optional={k: perturbed(v) for k, v in value.items()})
        extra = st.dictionaries(
            st.sampled_from(["tools", "images", "format", "role", "type", "x"]), json_values, max_size=1
        )
        return st.one_of(st.builds(lambda a, b: {**a, **b}, shaped, extra), shaped, json_values)
    if isinstance(value, list) and value:
        return st.one_of(st.lists(perturbed(value[0]), max_size=3), json_values)
    return st.one_of(st.just(value), json_values)


IMAGE_URL = f"data:image/png;base64,{PNG_DATA}"
ROUTES: dict[str, tuple[str, dict[str, Any]]] = {
    "/v1/responses": (
        "responses",
        {
            "model": "bench/trio",
            "instructions": "s",
            "input": [
                {
                    "role": "user",
                    "content": [
                        {"type": "input_text", "text": "hi"},
                        {"type": "input_image", "image_url": IMAGE_URL},
                    ],
                }
            ],
            "temperature": 0.5,
            "max_output_tokens": 20,
        },
    ),
    "/v1/messages": (
        "anthropic",
        {
            "model": "bench/trio",
            "max_tokens": 20,
            "system": [{"type": "text", "text": "s"}],
            "messages": [
                {
                    "role": "user",
                    "content": [
                        {"type": "text", "text": "hi"},
                        {
                            "type": "image",
                            "source": {"type": "base64", "media_type": "image/png", "data": PNG_DATA},
                        },
                    ],
                }
            ],
            "stop_sequences": ["x"],
        },
    ),
    "/v1/messages/count_tokens": (
        "anthropic",
        {"model": "bench/trio", "messages": [{"role": "user", "content": "hi"}]},
    ),
    "/v1beta/models/bench/trio:generateContent": (
        "gemini",
        {
            "systemInstruction": {"parts": [{"text": "s"}]},
            "contents": [
                {
                    "role": "user",
                    "parts": [{"text": "hi"}, {"inlineData": {"mimeType": "image/png", "data": PNG_DATA}}],
                }
            ],
            "generationConfig": {"temperature": 0.5, "stopSequences": ["x"], "maxOutputTokens": 20},
        },
    ),
    "/v1beta/models/bench/trio:streamGenerateContent?alt=sse": (
        "gemini",
        {"contents": [{"role": "user", "parts": [{"text": "hi"}]}]},
    ),
    "/v1beta/models/bench/trio:countTokens": ("gemini", {"contents": [{"parts": [{"text": "hi"}]}]}),
    "/api/chat": (
        "ollama",
        {
            "model": "bench/trio",
            "messages": [{"role": "user", "content": "hi", "images": [PNG_DATA]}],
            "options": {"temperature": 0.5, "stop": ["x"], "num_predict": 20},
            "stream": False,
        },
    ),
    "/api/generate": ("ollama", {"model": "bench/trio", "prompt": "hi", "system": "s", "images": [PNG_DATA]}),
    "/api/show": ("ollama", {"model": "bench/trio"}),
}


def shaped_like(fmt: str, status: int, body: Any) -> bool:
    if fmt == "ollama":
        return isinstance(body.get("error"), str) and bool(body["error"])
    if fmt == "anthropic":
        error = body.get("error", {})
        return (
            body.get("type") == "error"
            and isinstance(error.get("type"), str)
            and isinstance(error.get("message"), str)
        )
    error = body.get("error")
    if not isinstance(error, dict) or not isinstance(error.get("message"), str):
        return False
    if fmt == "gemini":
        return error.get("code") == status and isinstance(error.get("status"), str)
    return isinstance(error.get("type"), str)


def check(client: httpx.Client, path: str, fmt: str, content: bytes) -> None:
    reply = client.post(path, content=content, headers={"content-type": "application/json"})
    assert reply.status_code < 500, (path, content[:300], reply.status_code, reply.text[:300])
    if reply.status_code >= 400:
        assert shaped_like(fmt, reply.status_code, reply.json()), (path, reply.text[:300])


@pytest.fixture(scope="module")
def client(gateway: Gateway) -> httpx.Client:
    with httpx.Client(base_url=gateway.url, timeout=30) as http:
        yield http


def _fuzz_route(path: str) -> Callable[..., None]:
    fmt, template = ROUTES[path]

    @FUZZ
    @given(body=perturbed(template))
    def test(client: httpx.Client, body: Any) -> None:
        check(client, path, fmt, json.dumps(body).encode())

    return test


test_fuzz_responses = _fuzz_route("/v1/responses")
test_fuzz_anthropic_messages = _fuzz_route("/v1/messages")
test_fuzz_anthropic_count = _fuzz_route("/v1/messages/count_tokens")
test_fuzz_gemini_generate = _fuzz_route("/v1beta/models/bench/trio:generateContent")
test_fuzz_gemini_stream = _fuzz_route("/v1beta/models/bench/trio:streamGenerateContent?alt=sse")
test_fuzz_gemini_count = _fuzz_route("/v1beta/models/bench/trio:countTokens")
test_fuzz_ollama_chat = _fuzz_route("/api/chat")
test_fuzz_ollama_generate = _fuzz_route("/api/generate")
test_fuzz_ollama_show = _fuzz_route("/api/show")


@FUZZ
@given(
    path=st.sampled_from(sorted(ROUTES)),
    content=st.binary(max_size=64) | json_values.map(lambda v: json.dumps(v)[:-1].encode()),
)
def test_fuzz_bytes_that_are_not_a_request(client: httpx.Client, path: str, content: bytes) -> None:
    check(client, path, ROUTES[path][0], content)


@FUZZ
@given(
    name=st.text(max_size=20),
    method=st.sampled_from(["generateContent", "streamGenerateContent", "countTokens", ""]),
)
def test_fuzz_gemini_model_paths(client: httpx.Client, name: str, method: str) -> None:
    path = "/v1beta/models/" + quote(name, safe="/:") + (f":{method}" if method else "")
    body = json.dumps({"contents": [{"parts": [{"text": "hi"}]}]}).encode()
    check(client, path, "gemini", body)
    reply = client.get(path)
    assert reply.status_code < 500 and (
        reply.status_code < 400 or shaped_like("gemini", reply.status_code, reply.json())
    )
