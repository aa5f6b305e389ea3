"""The guard against a real server: Host, Origin, body size and JSON depth."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Awaitable, Callable
from pathlib import Path

import httpx
import pytest

from benchwarmers.errors import Refused
from benchwarmers.server.guard import DRAIN_BYTES, MAX_JSON_DEPTH, MB, _headers, json_too_deep, received_by
from benchwarmers.store.settings import ALLOWED_HOSTS, MAX_BODY_MB
from benchwarmers.testing.live_server import LiveServer

from .conftest import raw_http, setting


def test_healthz(server: LiveServer, client: httpx.Client) -> None:
    reply = client.get(f"{server.url}/healthz")
    assert reply.status_code == 200
    assert reply.json()["ok"] is True
    assert client.head(f"{server.url}/healthz").status_code == 200


def test_docs_pages_are_off_and_the_schema_is_served(server: LiveServer, client: httpx.Client) -> None:
    for path in ("/docs", "/redoc"):
        assert client.get(f"{server.url}{path}").status_code == 404
    schema = client.get(f"{server.url}/openapi.json")
    assert schema.status_code == 200 and schema.json()["openapi"].startswith("3.")


# ------------------------------------------------------------------- Host


@pytest.mark.parametrize("host", ["127.0.0.1", "localhost", "LOCALHOST:1", "[::1]:8122", "localhost.:9"])
def test_loopback_names_pass(server: LiveServer, host: str, client: httpx.Client) -> None:
    assert client.get(f"{server.url}/healthz", headers={"host": host}).status_code == 200


@pytest.mark.parametrize(
    "host",
    ["evil.example", "evil.example:8122", "127.0.0.1.evil.example", "localhost.evil.example", "10.0.0.7"],
)
def test_rebinding_hosts_are_refused(server: LiveServer, host: str, client: httpx.Client) -> None:
    reply = client.get(f"{server.url}/healthz", headers={"host": host})
    assert reply.status_code == 421
    message = reply.json()["error"]["message"]
    assert "is not this server" in message
    name = host.partition(":")[0]
    assert f"`benchwarmers settings set allowed_hosts {name}`" in message


# "\xb2" (superscript two) is a digit to str.isdigit but not to int(): it was a 500.
@pytest.mark.parametrize("host", ["[::1", "localhost:port", "a:b:c", "localhost:123456", b"localhost:\xb2"])
def test_malformed_hosts_are_400(server: LiveServer, host: str | bytes, client: httpx.Client) -> None:
    reply = client.get(f"{server.url}/healthz", headers={"host": host})
    assert reply.status_code == 400 and "is not a host name" in reply.json()["error"]["message"]


def test_allowed_hosts_from_settings(home: Path, start, client: httpx.Client) -> None:
    setting(home, ALLOWED_HOSTS, ["bench.lan", "other.lan:9000"])
    server = start()
    assert client.get(f"{server.url}/healthz", headers={"host": "bench.lan:8122"}).status_code == 200
    assert client.get(f"{server.url}/healthz", headers={"host": "other.lan:9000"}).status_code == 200
    assert client.get(f"{server.url}/healthz", headers={"host": "other.lan:9001"}).status_code == 421
    assert client.get(f"{server.url}/healthz", headers={"host": "evil.lan"}).status_code == 421


def test_a_star_allows_any_host(home: Path, start, client: httpx.Client) -> None:
    setting(home, ALLOWED_HOSTS, ["*"])
    server = start()
    assert client.get(f"{server.url}/healthz", headers={"host": "anything.example"}).status_code == 200


def test_allowed_hosts_from_environment(start, monkeypatch: pytest.MonkeyPatch, client: httpx.Client) -> None:
    monkeypatch.setenv("BENCHWARMERS_ALLOWED_HOSTS", "a.lan, b.lan")
    server = start()
    assert client.get(f"{server.url}/healthz", headers={"host": "b.lan"}).status_code == 200


def test_a_settings_change_applies_without_restart(home: Path, start, client: httpx.Client) -> None:
    server = start()
    assert client.get(f"{server.url}/healthz", headers={"host": "late.lan"}).status_code == 421
    setting(home, ALLOWED_HOSTS, ["late.lan"])
    server.app.state.guard.forget()  # what the settings cache's time to live does
    assert client.get(f"{server.url}/healthz", headers={"host": "late.lan"}).status_code == 200


def test_a_settings_change_in_this_process_applies_at_once(home: Path, start, client: httpx.Client) -> None:
    # The guard reads the settings cache, which a write in this process makes stale.
    server = start()
    assert client.get(f"{server.url}/healthz", headers={"host": "late.lan"}).status_code == 421
    setting(home, ALLOWED_HOSTS, ["late.lan"])
    assert client.get(f"{server.url}/healthz", headers={"host": "late.lan"}).status_code == 200


def test_a_host_that_passed_is_refused_once_settings_drop_it(home: Path, start, client: httpx.Client) -> None:
    # Hosts that passed are remembered with the policy they passed under, never beyond it.
    setting(home, ALLOWED_HOSTS, ["late.lan"])
    server = start()
    for _ in range(2):
        assert client.get(f"{server.url}/healthz", headers={"host": "late.lan"}).status_code == 200
    setting(home, ALLOWED_HOSTS, [])
    server.app.state.guard.forget()
    assert client.get(f"{server.url}/healthz", headers={"host": "late.lan"}).status_code == 421


def test_wildcard_bind_accepts_ip_literals_not_names(start, client: httpx.Client) -> None:
    server = start(acting_as="0.0.0.0")
    assert client.get(f"{server.url}/healthz", headers={"host": "192.168.1.9:8122"}).status_code == 200
    assert client.get(f"{server.url}/healthz", headers={"host": "[fe80::1]"}).status_code == 200
    assert client.get(f"{server.url}/healthz", headers={"host": "evil.example"}).status_code == 421


def test_a_specific_bind_address_is_a_name_of_the_server(start, client: httpx.Client) -> None:
    server = start(acting_as="192.168.1.9")
    assert client.get(f"{server.url}/healthz", headers={"host": "192.168.1.9:8122"}).status_code == 200
    assert client.get(f"{server.url}/healthz", headers={"host": "192.168.1.10"}).status_code == 421


# ----------------------------------------------------------------- Origin


@pytest.mark.parametrize(
    "origin", ["http://evil.example", "null", "http://localhost:3000", "file://", "https://127.0.0.1"]
)
def test_foreign_origin_post_is_refused(server: LiveServer, origin: str, client: httpx.Client) -> None:
    reply = client.post(
        f"{server.url}/v1/probe/typed", json={"name": "a", "count": 1}, headers={"origin": origin}
    )
    assert reply.status_code == 403
    message = reply.json()["error"]["message"]
    assert "another origin" in message and "(use an API client)" in message
    assert "dashboard" not in message  # there is none to send people to


@pytest.mark.parametrize("method", ["PUT", "PATCH", "DELETE"])
def test_every_state_changing_method_is_checked(
    server: LiveServer, method: str, client: httpx.Client
) -> None:
    reply = client.request(
        method, f"{server.url}/bench/probe/caller", headers={"origin": "http://evil.example"}
    )
    assert reply.status_code == 403


def test_same_origin_and_no_origin_pass(server: LiveServer, client: httpx.Client) -> None:
    body = {"name": "a", "count": 1}
    same = client.post(f"{server.url}/v1/probe/typed", json=body, headers={"origin": server.url})
    assert same.status_code == 200
    assert client.post(f"{server.url}/v1/probe/typed", json=body).status_code == 200


def test_foreign_origin_may_still_read(server: LiveServer, client: httpx.Client) -> None:
    """A GET changes nothing, and without CORS headers the page cannot read it."""
    reply = client.get(f"{server.url}/healthz", headers={"origin": "http://evil.example"})
    assert reply.status_code == 200
    assert "access-control-allow-origin" not in reply.headers


# ------------------------------------------------------------------ bodies


def test_content_length_over_the_limit_is_413_naming_it(home: Path, start) -> None:
    setting(home, MAX_BODY_MB, 1)
    server = start()
    status, _, body = raw_http(
        server.port,
        f"POST /v1/chat/completions HTTP/1.1\nHost: 127.0.0.1\nContent-Type: application/json\n"
        f"Content-Length: {1024 * 1024 + 1}\n",
    )
    assert status == 413
    message = json.loads(body)["error"]["message"]
    assert "1 MB" in message and "1048576 bytes" in message
    assert "`benchwarmers settings set max_body_mb <MB>`" in message


def test_streamed_bytes_over_the_limit_are_413(home: Path, start) -> None:
    setting(home, MAX_BODY_MB, 1)
    server = start()
    piece = b"x" * 65536
    chunks = [b"%x\r\n%s\r\n" % (len(piece), piece) for _ in range(17)] + [b"0\r\n\r\n"]
    status, _, body = raw_http(
        server.port,
        "POST /v1/messages HTTP/1.1\nHost: 127.0.0.1\nTransfer-Encoding: chunked\n",
        chunks,
    )
    assert status == 413
    assert json.loads(body)["error"]["type"] == "request_too_large"


LIMIT_MB = 4  # more than the kernel's socket buffers take in on loopback


@pytest.mark.parametrize(
    ("chunked", "pieces"),
    [
        pytest.param(False, 96, id="declared"),  # 6 MB, sent a piece at a time while the server refuses
        pytest.param(True, 96, id="chunked"),
        # declared 12 MB: more than the drain's bound, and past the limit by just that bound
        pytest.param(False, 16 * (LIMIT_MB + DRAIN_BYTES // MB), id="declared-at-the-bound"),
    ],
)
def test_a_client_that_sends_its_whole_too_large_body_reads_the_413(
    home: Path, start, chunked: bool, pieces: int
) -> None:
    """Most clients send the whole body before they read: the server reads
    and drops what comes past the limit (within a bound) before it closes, or
    the unread bytes would make the close a reset and the client would never
    see why it was refused."""
    setting(home, MAX_BODY_MB, LIMIT_MB)
    server = start()
    piece = b"x" * 65536
    if chunked:
        framing = "Transfer-Encoding: chunked"
        sent = [b"%x\r\n%s\r\n" % (len(piece), piece)] * pieces + [b"0\r\n\r\n"]
    else:
        framing = f"Content-Length: {len(piece) * pieces}"
        sent = [piece] * pieces
    for _ in range(3):
        status, headers, reply = raw_http(
            server.port, f"POST /v1/chat/completions HTTP/1.1\nHost: 127.0.0.1\n{framing}\n", sent
        )
        assert status == 413 and headers["connection"] == "close"
        assert json.loads(reply)["error"]["type"] == "invalid_request_error"


def test_a_client_that_waits_to_be_told_to_continue_is_refused_at_once(home: Path, start) -> None:
    setting(home, MAX_BODY_MB, 1)
    server = start()
    head = (
        "POST /v1/chat/completions HTTP/1.1\nHost: 127.0.0.1\nExpect: 100-continue\nContent-Length: 3145728\n"
    )
    status, _, reply = raw_http(server.port, head)  # no "100 Continue", and no body waited for
    assert status == 413 and "larger than the limit" in json.loads(reply)["error"]["message"]


def test_a_body_under_the_limit_reaches_the_route(home: Path, start, client: httpx.Client) -> None:
    setting(home, MAX_BODY_MB, 1)
    server = start()
    body = {"name": "x" * (1024 * 1024 - 100), "count": 1}
    assert client.post(f"{server.url}/v1/probe/typed", json=body).status_code == 200


def test_chunked_body_is_replayed_to_the_route(server: LiveServer, client: httpx.Client) -> None:
    def pieces():
        yield b'{"name": "chunked",'
        yield b' "count": 2}'

    reply = client.post(
        f"{server.url}/v1/probe/typed", content=pieces(), headers={"content-type": "application/json"}
    )
    assert reply.json() == {"name": "chunked", "count": 2}


def test_json_deeper_than_the_limit_is_400(server: LiveServer, client: httpx.Client) -> None:
    deep = "[" * (MAX_JSON_DEPTH + 1) + "]" * (MAX_JSON_DEPTH + 1)
    reply = client.post(f"{server.url}/api/probe/raw", content=deep)
    assert reply.status_code == 400
    assert reply.json() == {"error": f"the JSON body is nested deeper than {MAX_JSON_DEPTH} levels"}


def test_json_at_the_limit_passes(server: LiveServer, client: httpx.Client) -> None:
    nested: object = {}
    for _ in range(MAX_JSON_DEPTH - 1):
        nested = {"a": nested}
    assert client.post(f"{server.url}/api/probe/raw", json=nested).status_code == 200


def test_depth_counts_no_brackets_inside_strings() -> None:
    text = json.dumps({"text": "[" * 500 + '\\"{{{' + "{" * 500})
    assert not json_too_deep(text.encode(), 64)
    assert json_too_deep(b" " + b"[" * 65 + b"]" * 65, 64)
    assert not json_too_deep(b"[" * 64 + b"]" * 64, 64)
    assert not json_too_deep(b"[]" * 1000, 64)
    assert not json_too_deep(b"not json {{{{", 2)


# ------------------------------------------------ the body's wait, by hand


async def test_a_message_already_in_is_taken_without_a_wait() -> None:
    async def receive() -> dict[str, object]:
        return {"type": "http.request", "body": b"{}"}

    loop = asyncio.get_running_loop()
    assert await received_by(receive, loop.time() - 1) == {"type": "http.request", "body": b"{}"}


async def test_a_message_that_comes_later_is_waited_for() -> None:
    arrived: asyncio.Future[dict[str, object]] = asyncio.get_running_loop().create_future()

    async def receive() -> dict[str, object]:
        return await arrived

    loop = asyncio.get_running_loop()
    loop.call_later(0.01, arrived.set_result, {"type": "http.request", "body": b"late"})
    assert await received_by(receive, loop.time() + 5) == {"type": "http.request", "body": b"late"}


def _slow_receive(seen: list[str]) -> Callable[[], Awaitable[dict[str, object]]]:
    """A receive that waits 5 s for its message, noting in `seen` if it is cancelled."""

    async def receive() -> dict[str, object]:
        try:
            await asyncio.sleep(5)
        except asyncio.CancelledError:
            seen.append("cancelled")
            raise
        return {}

    return receive


async def test_a_wait_past_the_deadline_is_a_timeout_and_the_receive_is_cancelled() -> None:
    seen: list[str] = []
    receive = _slow_receive(seen)
    loop = asyncio.get_running_loop()
    with pytest.raises(TimeoutError):
        await received_by(receive, loop.time() + 0.01)
    assert seen == ["cancelled"]


async def test_a_caller_cancelled_while_waiting_cancels_the_receive() -> None:
    seen: list[str] = []
    receive = _slow_receive(seen)
    waiting = asyncio.create_task(received_by(receive, asyncio.get_running_loop().time() + 5))
    await asyncio.sleep(0.01)
    waiting.cancel()
    with pytest.raises(asyncio.CancelledError):
        await waiting
    assert seen == ["cancelled"]


async def test_a_receive_that_returns_another_awaitable_is_waited_for_too() -> None:
    loop = asyncio.get_running_loop()
    arrived: asyncio.Future[dict[str, object]] = loop.create_future()
    loop.call_later(0.01, arrived.set_result, {"type": "http.disconnect"})
    assert await received_by(lambda: arrived, loop.time() + 5) == {"type": "http.disconnect"}
    never: asyncio.Future[dict[str, object]] = loop.create_future()
    with pytest.raises(TimeoutError):
        await received_by(lambda: never, loop.time() + 0.01)


def test_headers_are_read_first_wins_and_a_second_host_is_refused() -> None:
    """Most requests repeat no header name and are read in one `dict`; a
    repeated name is the first one's, a second Host is refused, and a name
    not lower-cased (not as ASGI servers hand them) is lower-cased."""
    plain = [(b"host", b"127.0.0.1"), (b"authorization", b"Bearer a"), (b"x-1", b"v")]
    assert _headers({"headers": plain}) == dict(plain)
    repeated = [(b"host", b"127.0.0.1"), (b"accept", b"a"), (b"accept", b"b")]
    assert _headers({"headers": repeated}) == {b"host": b"127.0.0.1", b"accept": b"a"}
    assert _headers({"headers": [(b"Host", b"127.0.0.1"), (b"X-Api-Key", b"k")]}) == {
        b"host": b"127.0.0.1",
        b"x-api-key": b"k",
    }
    with pytest.raises(Refused, match="more than one Host"):
        _headers({"headers": [(b"host", b"127.0.0.1"), (b"host", b"evil.example")]})
