"""Whatever a caller sends, the server answers a 4xx (or a 2xx), never a
5xx: random bytes, random JSON, random headers and query strings against
the guard, the error handlers and this package's routes."""

from __future__ import annotations

import json

import httpx
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from benchwarmers.testing.live_server import LiveServer

PATHS = st.sampled_from(
    [
        "/healthz",
        "/v1/probe/typed",
        "/v1/probe/parse",
        "/api/probe/raw",
        "/v1beta/probe/raw",
        "/v1/messages/probe/raw",
        "/bench/probe/caller",
        "/v1/chat/completions",
        "/mcp",
        "/v1beta/models/bench/x:generateContent",
    ]
)
METHODS = st.sampled_from(["GET", "POST", "PUT", "DELETE", "PATCH", "OPTIONS"])
PRINTABLE = st.text(st.characters(min_codepoint=0x20, max_codepoint=0x7E), max_size=40)
HEADER_NAMES = st.sampled_from(
    ["host", "origin", "authorization", "x-api-key", "x-goog-api-key", "content-type", "accept", "x-junk"]
)
JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=20),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4),
    max_leaves=20,
)
FUZZ = settings(
    max_examples=120,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)


@FUZZ
@given(path=PATHS, method=METHODS, body=st.binary(max_size=300))
def test_random_bytes(server: LiveServer, client: httpx.Client, path: str, method: str, body: bytes) -> None:
    reply = client.request(method, f"{server.url}{path}", content=body)
    assert reply.status_code < 500, reply.text


@FUZZ
@given(path=PATHS, value=JSON)
def test_random_json(server: LiveServer, client: httpx.Client, path: str, value: object) -> None:
    reply = client.post(
        f"{server.url}{path}", content=json.dumps(value), headers={"content-type": "application/json"}
    )
    assert reply.status_code < 500, reply.text


@FUZZ
@given(
    path=PATHS,
    method=METHODS,
    headers=st.dictionaries(HEADER_NAMES, PRINTABLE, max_size=4),
    query=PRINTABLE,
    body=st.binary(max_size=50),
)
def test_random_headers_and_queries(
    server: LiveServer, client: httpx.Client, path: str, method: str, headers: dict, query: str, body: bytes
) -> None:
    url = f"{server.url}{path}?{query}"
    try:
        reply = client.request(method, url, headers=headers, content=body)
    except (httpx.InvalidURL, httpx.LocalProtocolError):
        return  # httpx would not send it; nothing reached the server
    assert reply.status_code < 500, reply.text


@FUZZ
@given(typed=st.fixed_dictionaries({}, optional={"name": JSON, "count": JSON}))
def test_wrong_types_are_400(server: LiveServer, client: httpx.Client, typed: dict) -> None:
    reply = client.post(f"{server.url}/v1/probe/typed", content=json.dumps(typed))
    assert reply.status_code in (200, 400), reply.text
