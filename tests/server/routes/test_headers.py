"""What a request carries besides its body's meaning, on every POST route of
the app: Host, Origin, gateway keys, Content-Type, Content-Length that
lies, bodies over the limit, JSON nested too deep, bytes that are not
UTF-8, lone surrogates and NaN. Never a 5xx; a refusal in the caller's
format; and a connection a lie left open does not wedge the server."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from hypothesis import given
from hypothesis import strategies as st

from benchwarmers.formats.errors import format_for_path
from benchwarmers.server.guard import MAX_JSON_DEPTH

from .hardening_support import (
    FUZZ,
    POST_ROUTES,
    Bench,
    as_bytes,
    check_reply,
    headers_for,
    raw_http,
    shaped_like,
    start_bench,
)

PATHS = sorted(POST_ROUTES)
paths = st.sampled_from(PATHS)
# What a header may hold at all (HTTP itself refuses control characters,
# before any app: uvicorn answers those with its own bare 400).
HEADER_TEXT = st.text(st.characters(min_codepoint=0x20, max_codepoint=0x7E), max_size=30).map(str.strip)
POISONS = st.sampled_from(
    [float("nan"), float("inf"), float("-inf"), "\ud800", "a\udfffb", 10**400, -(10**30), "\x00", "😀" * 50]
)


@st.composite
def poisoned(draw: st.DrawFn, value: Any, poison: st.SearchStrategy[Any]) -> Any:
    """`value` with one node (or a new key) replaced by a poison."""
    if isinstance(value, dict) and value and draw(st.integers(0, 3)):
        key = draw(st.sampled_from(sorted(value)) | st.just("extra"))
        inner = value.get(key)
        return {**value, key: draw(poisoned(inner, poison)) if inner is not None else draw(poison)}
    if isinstance(value, list) and value and draw(st.integers(0, 3)):
        index = draw(st.integers(0, len(value) - 1))
        return [*value[:index], draw(poisoned(value[index], poison)), *value[index + 1 :]]
    return draw(poison)


def post(client: httpx.Client, path: str, content: bytes, **headers: str) -> httpx.Response:
    return client.post(path, content=content, headers={**headers_for(path), **headers})


@FUZZ
@given(data=st.data(), path=paths)
def test_nan_surrogates_and_huge_numbers_anywhere(
    client: httpx.Client, data: st.DataObject, path: str
) -> None:
    body = data.draw(poisoned(POST_ROUTES[path], POISONS))
    reply = post(client, path, as_bytes(body))
    check_reply(reply, path, body)


@pytest.mark.parametrize("path", [p for p in PATHS if not p.endswith("/mcp")])
def test_nan_is_refused_as_not_json(client: httpx.Client, path: str) -> None:
    body = {**POST_ROUTES[path], "temperature": float("nan")}
    reply = post(client, path, as_bytes(body))
    check_reply(reply, path, body)
    assert reply.status_code == 400 and "NaN" in reply.text


@pytest.mark.parametrize("path", ["/mcp", "/v1/mcp"])
@pytest.mark.parametrize("argument", ["prompt", "merged", "collection"])
def test_nan_in_a_tool_argument_is_an_error(client: httpx.Client, path: str, argument: str) -> None:
    """The MCP SDK reads the body itself (NaN where nothing reads it is
    ignored); NaN where a tool reads it is an error, never an ask."""
    call = json.loads(json.dumps(POST_ROUTES["/mcp"]))
    call["params"]["arguments"][argument] = float("nan")
    reply = post(client, path, as_bytes(call))
    check_reply(reply, path, call)
    assert reply.status_code >= 400 or '"isError":true' in reply.text.replace(" ", ""), reply.text


@pytest.mark.parametrize("path", PATHS)
def test_a_lone_surrogate_is_refused(client: httpx.Client, path: str) -> None:
    content = json.dumps({**POST_ROUTES[path], "extra": "x"})
    for text in ('"hi"', '"n"', '"c_none"', '"m"', '"coder"', '"no-such-endpoint"', '"x"'):
        content = content.replace(text, text[:-1] + '\\ud800"')
    reply = post(client, path, content.encode())
    check_reply(reply, path, content)
    assert reply.status_code == 400, reply.text


@FUZZ
@given(
    path=paths,
    encoding=st.sampled_from(["latin-1", "utf-16", "utf-32", "cp1252"]),
    text=st.text(st.characters(min_codepoint=0xA0, max_codepoint=0xFF), min_size=1, max_size=8),
    raw=st.binary(min_size=1, max_size=6),
)
def test_bytes_that_are_not_utf8(
    client: httpx.Client, path: str, encoding: str, text: str, raw: bytes
) -> None:
    body = json.dumps({**POST_ROUTES[path], "extra": text}, ensure_ascii=False).encode(encoding)
    check_reply(post(client, path, body), path, body)
    spliced = json.dumps(POST_ROUTES[path]).encode().replace(b'"hi"', b'"' + raw + b'"')
    check_reply(post(client, path, spliced), path, spliced)


@pytest.mark.parametrize("path", PATHS)
@pytest.mark.parametrize("depth", [MAX_JSON_DEPTH + 1, 5000])
def test_too_deep_json_is_400(client: httpx.Client, path: str, depth: int) -> None:
    content = b"[" * depth + b"]" * depth
    reply = post(client, path, content)
    check_reply(reply, path, depth)
    assert reply.status_code == 400 and str(MAX_JSON_DEPTH) in reply.text


@pytest.mark.parametrize("path", PATHS)
def test_json_at_the_depth_limit_never_500s(client: httpx.Client, path: str) -> None:
    nested: Any = "hi"
    for _ in range(MAX_JSON_DEPTH - 3):
        nested = {"x": nested}
    body = {**POST_ROUTES[path], "extra": nested}
    check_reply(post(client, path, as_bytes(body)), path, "deep")


@FUZZ
@given(
    path=paths,
    content_type=st.sampled_from(
        [
            "",
            "text/plain",
            "application/x-www-form-urlencoded",
            "multipart/form-data; boundary=x",
            "application/json; charset=utf-16",
            "application/json; charset=latin-1",
            "*/*",
            "application/JSON",
        ]
    ),
)
def test_any_content_type(client: httpx.Client, path: str, content_type: str) -> None:
    reply = client.post(
        path, content=as_bytes(POST_ROUTES[path]), headers={**headers_for(path), "content-type": content_type}
    )
    check_reply(reply, path, content_type)


@FUZZ
@given(
    path=paths,
    host=st.sampled_from(["evil.example", "127.0.0.1.nip.io", "[::1", "localhost:99999", "a b", "", "::1:80"])
    | st.text(st.characters(min_codepoint=0x21, max_codepoint=0x7E), min_size=1, max_size=20),
)
def test_any_host(bench: Bench, path: str, host: str) -> None:
    status, body = raw_http(
        bench.server.port,
        f"POST {path} HTTP/1.1\nHost: {host}\nContent-Type: application/json\nContent-Length: 2\n"
        f"Connection: close\n",
        b"{}",
    )
    assert 0 < status < 500, (host, status, body[:200])
    if status >= 400:
        assert shaped_like(format_for_path(path), status, json.loads(body)), (host, body[:200])


@FUZZ
@given(
    path=paths,
    origin=st.sampled_from(
        ["https://evil.example", "null", "http://127.0.0.1.evil", "file://", "http://localhost:1"]
    )
    | HEADER_TEXT.filter(bool),
)
def test_foreign_origins_are_refused_in_format(client: httpx.Client, path: str, origin: str) -> None:
    reply = post(client, path, as_bytes(POST_ROUTES[path]), origin=origin)
    check_reply(reply, path, origin)
    assert reply.status_code == 403


KEY_HEADER = st.sampled_from(["authorization", "x-api-key", "x-goog-api-key"])
KEY_VALUE = HEADER_TEXT | st.sampled_from(["Bearer", "Bearer bw_nope", "Basic abc", "bearer  x  y"])


@FUZZ
@given(path=paths, header=KEY_HEADER, value=KEY_VALUE, query_key=st.text(max_size=10))
def test_any_key(client: httpx.Client, path: str, header: str, value: str, query_key: str) -> None:
    """On loopback with keys not required, a key that is not ours is the owner's request."""
    reply = client.post(
        path,
        params={"key": query_key},
        content=as_bytes(POST_ROUTES[path]),
        headers={**headers_for(path), header: value},
    )
    check_reply(reply, path, (header, value))


@pytest.mark.parametrize("path", [p for p in PATHS if p.startswith("/bench/ops")])
def test_a_scoped_key_may_not_change_the_bench(bench: Bench, client: httpx.Client, path: str) -> None:
    reply = post(client, path, as_bytes(POST_ROUTES[path]), authorization=f"Bearer {bench.trio_key}")
    check_reply(reply, path)
    assert reply.status_code == 403


def test_a_scoped_key_may_not_ask_another_collection(bench: Bench, client: httpx.Client) -> None:
    for path, body in POST_ROUTES.items():
        if "trio" not in json.dumps(body) or "mcp" in path or "count" in path or "show" in path:
            continue
        moved = json.loads(json.dumps(body).replace("trio", "duo"))
        path = path.replace("trio", "duo")
        reply = post(client, path, as_bytes(moved), authorization=f"Bearer {bench.trio_key}")
        check_reply(reply, path)
        assert reply.status_code == 403, (path, reply.text)


@pytest.mark.parametrize("path", PATHS)
def test_content_length_over_the_limit_is_413(bench: Bench, path: str) -> None:
    status, body = raw_http(
        bench.server.port,
        f"POST {path} HTTP/1.1\nHost: 127.0.0.1\nContent-Type: application/json\nContent-Length: {10**15}\n",
    )
    assert status == 413 and shaped_like(format_for_path(path), 413, json.loads(body)), body[:300]
    assert b"1 MB" in body


@pytest.mark.parametrize("path", PATHS)
@pytest.mark.parametrize("length", ["-1", "abc", "1e3", " ", "0x10", "99999999999999999999999"])
def test_content_length_that_is_no_number(bench: Bench, path: str, length: str) -> None:
    status, body = raw_http(
        bench.server.port,
        f"POST {path} HTTP/1.1\nHost: 127.0.0.1\nContent-Type: application/json\nContent-Length: {length}\n"
        "Connection: close\n",
        b"{}",
    )
    # httptools may refuse the header itself (a bare 400, before any app), or the guard does.
    assert 0 <= status < 500, (length, status, body[:200])


@pytest.mark.parametrize("path", ["/v1/chat/completions", "/v1/messages", "/api/chat", "/mcp"])
def test_content_length_shorter_than_the_body(bench: Bench, client: httpx.Client, path: str) -> None:
    """The bytes past the stated length are the next request, and garbage: a
    4xx or a closed connection, and the server still answers afterwards."""
    content = as_bytes(POST_ROUTES[path])
    status, body = raw_http(
        bench.server.port,
        f"POST {path} HTTP/1.1\nHost: 127.0.0.1\nContent-Type: application/json\n"
        f"Content-Length: {len(content) // 2}\nConnection: close\n",
        content,
    )
    assert 0 < status < 500, (status, body[:200])
    assert client.get("/healthz").status_code == 200


@pytest.mark.parametrize(
    "path", ["/v1/chat/completions", "/v1/messages", "/api/chat", "/mcp", "/bench/verdict"]
)
def test_content_length_longer_than_the_body(bench: Bench, client: httpx.Client, path: str) -> None:
    """A client that promises more than it sends and gives up: no reply owed,
    no 5xx, and the server is not wedged."""
    content = as_bytes(POST_ROUTES[path])
    status, _ = raw_http(
        bench.server.port,
        f"POST {path} HTTP/1.1\nHost: 127.0.0.1\nContent-Type: application/json\n"
        f"Content-Length: {len(content) + 100}\n",
        content,
        timeout=0.3,
    )
    assert status < 500
    assert client.get("/healthz").status_code == 200


@pytest.mark.parametrize(
    "path",
    [
        "/v1/chat/completions",
        "/v1beta/models/bench/trio:generateContent",
        "/api/chat",
        "/mcp",
        "/bench/verdict",
    ],
)
def test_streamed_body_over_the_limit_is_413(bench: Bench, path: str) -> None:
    piece = b"x" * 65536
    chunks = b"".join(b"%x\r\n%s\r\n" % (len(piece), piece) for _ in range(17)) + b"0\r\n\r\n"
    status, body = raw_http(
        bench.server.port,
        f"POST {path} HTTP/1.1\nHost: 127.0.0.1\nContent-Type: application/json\n"
        "Transfer-Encoding: chunked\n",
        chunks,
    )
    assert status == 413 and shaped_like(format_for_path(path), 413, json.loads(body)), body[:300]


@pytest.fixture(scope="module")
def exposed(tmp_path_factory: pytest.TempPathFactory) -> Iterator[httpx.Client]:
    """A client of a bench that believes it listens beyond loopback: keys required."""
    for bench in start_bench(tmp_path_factory.mktemp("exposed"), acting_as="0.0.0.0"):
        with httpx.Client(base_url=bench.url, timeout=30) as http:
            http.headers["x-trio-key"] = bench.trio_key
            yield http


@FUZZ
@given(path=paths, header=KEY_HEADER, value=KEY_VALUE, in_query=st.booleans())
def test_exposed_without_a_valid_key_is_401_in_format(
    exposed: httpx.Client, path: str, header: str, value: str, in_query: bool
) -> None:
    headers = {**headers_for(path), **({} if in_query else {header: value})}
    params = {"key": value} if in_query and value else {}
    reply = exposed.post(path, params=params, content=as_bytes(POST_ROUTES[path]), headers=headers)
    check_reply(reply, path, (header, value))
    assert reply.status_code == 401, reply.text


@pytest.mark.parametrize("path", PATHS)
@pytest.mark.parametrize("how", ["authorization", "x-api-key", "x-goog-api-key", "query"])
def test_exposed_with_a_key_every_way_never_500s(exposed: httpx.Client, path: str, how: str) -> None:
    key = exposed.headers["x-trio-key"]
    headers = {
        **headers_for(path),
        **({} if how == "query" else {how: f"Bearer {key}" if how == "authorization" else key}),
    }
    params = {"key": key} if how == "query" else {}
    reply = exposed.post(path, params=params, content=as_bytes(POST_ROUTES[path]), headers=headers)
    check_reply(reply, path, how)
    assert reply.status_code != 401, reply.text
    if path.startswith("/bench/ops"):
        assert reply.status_code == 403  # a key limited to collections may not change the bench
