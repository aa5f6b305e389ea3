"""Errors in the caller's format: every refusal and every 4xx in each API's
own shape (read back by the official clients), and no 500 for a caller's
mistake; a genuine bug is a 500 with an id and no traceback."""

from __future__ import annotations

import json
import logging
from pathlib import Path
from typing import Any

import anthropic
import httpx
import ollama
import openai
import pytest
from google import genai
from google.genai import errors as genai_errors
from starlette.requests import Request

from benchwarmers.formats import registry
from benchwarmers.formats.errors import error_body, format_for_path
from benchwarmers.server.errors import read_json
from benchwarmers.server.guard import BODY_STATE
from benchwarmers.store.settings import MAX_BODY_MB
from benchwarmers.testing.live_server import LiveServer

from .conftest import new_key, raw_http, setting

# A path in each registered format's space, and the format it speaks.
PATHS = {fmt.example_path(): fmt.name for fmt in registry.formats()} | {"/bench/verdict": "openai_chat"}


def assert_shape(fmt: str, status: int, body: Any) -> str:
    """The body is `fmt`'s error shape; returns its message."""
    if fmt in ("openai_chat", "responses"):
        assert set(body) == {"error"} and set(body["error"]) == {"message", "type", "code"}
        return body["error"]["message"]
    if fmt == "anthropic":
        assert body["type"] == "error" and set(body["error"]) == {"type", "message"}
        return body["error"]["message"]
    if fmt == "gemini":
        assert body["error"]["code"] == status and body["error"]["status"].isupper()
        return body["error"]["message"]
    if fmt == "ollama":
        assert set(body) == {"error"} and isinstance(body["error"], str)
        return body["error"]
    if fmt != "jsonrpc":  # a format registered elsewhere: the keys its own renderer writes
        assert set(body) == set(registry.error_body(fmt, status, "")), body
        return json.dumps(body)
    assert body["jsonrpc"] == "2.0" and body["id"] is None and isinstance(body["error"]["code"], int)
    return body["error"]["message"]


def test_paths_name_their_format() -> None:
    for path, fmt in PATHS.items():
        assert format_for_path(path) == fmt
    assert format_for_path("/v1/messages/count_tokens") == "anthropic"
    assert format_for_path("/v1/mcp") == "jsonrpc"
    assert format_for_path("/v1/models") == "openai_chat"
    assert format_for_path("/v1/models/bench/trio") == "openai_chat"
    assert format_for_path("/v1/models/bench/trio:streamGenerateContent") == "gemini"  # google-genai's v1
    assert format_for_path("/api/tags") == "ollama"
    assert format_for_path("/mcpish") == "openai_chat"
    assert format_for_path("/") == "openai_chat"


def test_error_shapes() -> None:
    assert error_body("openai_chat", 429, "slow") == {
        "error": {"message": "slow", "type": "rate_limit_error", "code": "rate_limit_exceeded"}
    }
    assert error_body("anthropic", 413, "big") == {
        "type": "error",
        "error": {"type": "request_too_large", "message": "big"},
    }
    assert error_body("gemini", 400, "bad") == {
        "error": {"code": 400, "message": "bad", "status": "INVALID_ARGUMENT"}
    }
    assert error_body("ollama", 404, "none") == {"error": "none"}
    assert error_body("jsonrpc", 400, "junk", malformed=True)["error"]["code"] == -32700
    # The field at fault: OpenAI's shape names it (`param`, which its SDK reads); the others have no place.
    named = error_body("responses", 400, "bad", param="stream_options")
    assert named["error"] == {
        "message": "bad",
        "type": "invalid_request_error",
        "code": "invalid_request",
    } | {"param": "stream_options"}
    assert error_body("anthropic", 400, "bad", param="x") == error_body("anthropic", 400, "bad")
    assert error_body("ollama", 400, "bad", param="x") == {"error": "bad"}


@pytest.mark.parametrize(("path", "fmt"), PATHS.items())
def test_every_refusal_in_every_format(home: Path, start, client: httpx.Client, path: str, fmt: str) -> None:
    setting(home, MAX_BODY_MB, 1)
    free = {"x-api-key": new_key(home, "free")}
    slow = {"x-api-key": new_key(home, "slow", rate=1)}
    server = start(acting_as="0.0.0.0")
    url = f"{server.url}{path}"
    client.post(url, headers=slow, json={})  # spends the slow key's one request a minute
    refusals = {
        421: client.post(url, headers={"host": "evil.example", **free}, json={}),
        403: client.post(url, headers={"origin": "http://evil.example", **free}, json={}),
        401: client.post(url, json={}),
        400: client.post(url, headers=free, content="[" * 100 + "]" * 100),
        429: client.post(url, headers=slow, json={}),
    }
    for status, reply in refusals.items():
        assert reply.status_code == status, (status, reply.text)
        assert assert_shape(fmt, status, reply.json())
    head = (
        f"POST {path} HTTP/1.1\nHost: 127.0.0.1\nx-api-key: {free['x-api-key']}\n"
        f"Content-Length: {2 * 1024 * 1024}\n"
    )
    status, _, body = raw_http(server.port, head)
    assert status == 413
    assert "1 MB" in assert_shape(fmt, 413, json.loads(body))


@pytest.mark.parametrize(("path", "fmt"), [("/v1/nothing", "openai_chat"), ("/api/nothing", "ollama")])
def test_unknown_routes_are_404_in_format(
    server: LiveServer, client: httpx.Client, path: str, fmt: str
) -> None:
    reply = client.get(f"{server.url}{path}")
    assert reply.status_code == 404
    assert "no route GET" in assert_shape(fmt, 404, reply.json())


def test_wrong_method_is_405(server: LiveServer, client: httpx.Client) -> None:
    reply = client.delete(f"{server.url}/healthz")
    assert reply.status_code == 405
    assert "DELETE is not allowed" in reply.json()["error"]["message"]


def test_validation_errors_are_400_naming_the_field(server: LiveServer, client: httpx.Client) -> None:
    reply = client.post(f"{server.url}/v1/probe/typed", json={"name": "a", "count": "many"})
    assert reply.status_code == 400
    assert reply.json()["error"]["message"].startswith("count:")
    missing = client.post(f"{server.url}/v1/probe/typed", json={})
    assert "name" in missing.json()["error"]["message"] and "count" in missing.json()["error"]["message"]


@pytest.mark.parametrize(
    "path", ["/v1/probe/typed", "/v1/probe/parse", "/api/probe/raw", "/v1beta/probe/raw"]
)
@pytest.mark.parametrize("body", [b'{"name": ', b"\xff\xfe\x00", b"", b"[1, 2", b"nan"])
def test_malformed_json_is_400(server: LiveServer, client: httpx.Client, path: str, body: bytes) -> None:
    reply = client.post(f"{server.url}{path}", content=body, headers={"content-type": "application/json"})
    assert reply.status_code == 400, reply.text
    assert assert_shape(format_for_path(path), 400, reply.json())


@pytest.mark.parametrize("body", [b'{"t": NaN}', b'{"t": -Infinity}'])
def test_read_json_refuses_what_json_lacks(server: LiveServer, client: httpx.Client, body: bytes) -> None:
    reply = client.post(f"{server.url}/api/probe/raw", content=body)
    assert reply.status_code == 400
    assert "is not a JSON value" in reply.json()["error"]


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        (b'{"n": 123456789012345678901234567890}', {"n": 123456789012345678901234567890}),
        (b'{"n": 1.5e-7, "m": [-9223372036854775808]}', {"n": 1.5e-7, "m": [-9223372036854775808]}),
        (b'{"t": "\\ud83d\\ude00 \xc3\xa9"}', {"t": "\U0001f600 \u00e9"}),
    ],
)
async def test_read_json_reads_what_json_reads_exactly(raw: bytes, expected: Any) -> None:
    """orjson reads the body unless it would answer otherwise: an integer
    past 64 bits is read exactly, not as a float (`jsontext`)."""
    body = await read_json(Request({"type": "http", "state": {BODY_STATE: raw}}))
    assert body == expected
    assert [type(v) for v in body.values()] == [type(v) for v in expected.values()]


def test_wrong_json_type_is_400(server: LiveServer, client: httpx.Client) -> None:
    reply = client.post(f"{server.url}/v1/messages/probe/raw", json=[1, 2])
    assert reply.status_code == 400
    assert reply.json()["error"]["message"] == "body must be a JSON object, not an array"


@pytest.mark.parametrize(
    ("path", "fmt"), [("/api/probe/bug", "ollama"), ("/v1/messages/probe/bug", "anthropic")]
)
def test_a_bug_is_500_with_an_id_and_no_traceback(
    server: LiveServer, client: httpx.Client, caplog: pytest.LogCaptureFixture, path: str, fmt: str
) -> None:
    with caplog.at_level(logging.ERROR, logger="benchwarmers.server.errors"):
        reply = client.post(f"{server.url}{path}", json={})
    assert reply.status_code == 500
    message = assert_shape(fmt, 500, reply.json())
    assert (
        message.startswith("internal error ") and "secret" not in reply.text and "Traceback" not in reply.text
    )
    error_id = message.split()[2].rstrip(";")
    assert any(error_id in r.getMessage() and r.exc_info for r in caplog.records)


def test_a_bug_mid_stream_cuts_the_stream(server: LiveServer, client: httpx.Client) -> None:
    with (
        pytest.raises(httpx.RemoteProtocolError),
        client.stream("GET", f"{server.url}/v1/probe/cut") as reply,
    ):
        assert reply.status_code == 200
        for _ in reply.iter_bytes():
            pass


# ------------------------------------------- read by the official clients


def test_official_clients_read_our_errors(home: Path, start) -> None:
    """Each vendor's client turns our refusal into its own error type with
    our message: proof the shapes are the real ones."""
    server = start(acting_as="0.0.0.0")
    bad = "bw-not-a-key"
    oa = openai.OpenAI(base_url=f"{server.url}/v1", api_key=bad, max_retries=0)
    with pytest.raises(openai.AuthenticationError) as caught:
        oa.chat.completions.create(model="bench/trio", messages=[{"role": "user", "content": "hi"}])
    assert "not valid" in caught.value.message
    an = anthropic.Anthropic(base_url=server.url, api_key=bad, max_retries=0)
    with pytest.raises(anthropic.AuthenticationError) as caught_an:
        an.messages.create(model="bench/trio", max_tokens=10, messages=[{"role": "user", "content": "hi"}])
    assert caught_an.value.body["error"]["type"] == "authentication_error"
    for version in ("v1beta", None):  # None: the client's default (v1 today)
        options = {"base_url": server.url, **({"api_version": version} if version else {})}
        ge = genai.Client(api_key=bad, http_options=options)
        with pytest.raises(genai_errors.ClientError) as caught_ge:
            ge.models.generate_content(model="bench/trio", contents="hi")
        assert caught_ge.value.code == 401 and caught_ge.value.status == "UNAUTHENTICATED"
        assert "not valid" in caught_ge.value.message
    ol = ollama.Client(host=server.url, headers={"authorization": f"Bearer {bad}"})
    with pytest.raises(ollama.ResponseError) as caught_ol:
        ol.chat(model="bench/trio", messages=[{"role": "user", "content": "hi"}])
    assert caught_ol.value.status_code == 401 and "not valid" in caught_ol.value.error
