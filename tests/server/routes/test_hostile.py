"""Hostile callers, on every POST route of the app (MCP included): a
DNS-rebinding page (a foreign Host), a page of another origin, a key that
is revoked, out of scope or over its rate. Each is refused before anything
runs, in the caller's format, and spends no call."""

from __future__ import annotations

import asyncio

import httpx
import pytest

from benchwarmers.identity.keys import create_key, revoke_key
from benchwarmers.runtime import Runtime

from .hardening_support import POST_ROUTES, Bench, check_reply, headers_for

PATHS = sorted(POST_ROUTES)


def _post(client: httpx.Client, path: str, **headers: str) -> httpx.Response:
    return client.post(path, json=POST_ROUTES[path], headers={**headers_for(path), **headers})


def _key(bench: Bench, name: str, *, rate: int | None = None, revoked: bool = False) -> str:
    async def work() -> str:
        async with Runtime.open(bench.home) as runtime:
            _info, secret = await create_key(runtime.store, name, requests_per_minute=rate)
            if revoked:
                await revoke_key(runtime.store, name)
            return secret

    return asyncio.run(work())


@pytest.fixture(scope="module")
def keys(bench: Bench) -> dict[str, str]:
    return {"revoked": _key(bench, "gone", revoked=True), "slow": _key(bench, "one-a-minute", rate=1)}


@pytest.mark.parametrize("path", PATHS)
def test_a_rebinding_page_is_refused_everywhere(bench: Bench, client: httpx.Client, path: str) -> None:
    before = bench.fake.calls.copy()
    reply = _post(client, path, host="evil.example")
    assert reply.status_code == 421, (path, reply.text)
    check_reply(reply, path)
    assert bench.fake.calls == before


@pytest.mark.parametrize("path", PATHS)
@pytest.mark.parametrize("origin", ["http://evil.example", "null", "http://127.0.0.1.evil.example"])
def test_a_foreign_page_cannot_post(bench: Bench, client: httpx.Client, path: str, origin: str) -> None:
    before = bench.fake.calls.copy()
    reply = _post(client, path, origin=origin)
    assert reply.status_code == 403, (path, reply.text)
    check_reply(reply, path)
    assert bench.fake.calls == before


@pytest.mark.parametrize("path", PATHS)
def test_a_revoked_key_is_refused_everywhere(
    bench: Bench, client: httpx.Client, keys: dict[str, str], path: str
) -> None:
    reply = _post(client, path, authorization=f"Bearer {keys['revoked']}")
    assert reply.status_code == 401, (path, reply.text)
    check_reply(reply, path)


def test_a_scoped_key_cannot_reach_other_collections_or_administer(
    bench: Bench, client: httpx.Client
) -> None:
    auth = {"authorization": f"Bearer {bench.trio_key}"}
    other = client.post(
        "/v1/chat/completions",
        json={**POST_ROUTES["/v1/chat/completions"], "model": "bench/duo"},
        headers=auth,
    )
    assert other.status_code == 403, other.text
    admin = client.post("/bench/ops/scheduler", json={"enabled": True}, headers=auth)
    assert admin.status_code == 403, admin.text


def test_over_rate_every_429_carries_retry_after(
    bench: Bench, client: httpx.Client, keys: dict[str, str]
) -> None:
    auth = {"authorization": f"Bearer {keys['slow']}"}
    statuses: list[int] = []
    for path in ("/v1/chat/completions", "/v1/messages", "/api/chat", "/mcp"):
        reply = _post(client, path, **auth)
        statuses.append(reply.status_code)
        if reply.status_code == 429:
            assert reply.headers["retry-after"].isdigit(), path
            check_reply(reply, path)
    assert statuses[0] == 200 and statuses[1:] == [429, 429, 429], statuses


def _raw(bench: Bench, head: bytes) -> bytes:
    import socket

    with socket.create_connection(("127.0.0.1", bench.server.port), timeout=30) as sock:
        sock.sendall(head)
        got = b""
        while chunk := sock.recv(65536):
            got += chunk
            if b"\r\n\r\n" in got:
                break
    return got


@pytest.mark.parametrize(
    "head",
    [
        b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nHost: evil.example\r\n\r\n",
        b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nHost: 127.0.0.1\r\n\r\n",
        b"GET http://evil.example/healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n",
    ],
    ids=["two hosts", "the same host twice", "absolute form"],
)
def test_a_duplicate_or_absolute_form_host_is_400(bench: Bench, head: bytes) -> None:
    assert _raw(bench, head).startswith(b"HTTP/1.1 400"), head


def test_a_path_holding_a_scheme_separator_is_a_path_not_an_absolute_target(client: httpx.Client) -> None:
    reply = client.get("/v1/://")  # found by the fuzzing of unknown paths: it was a plain-text 400
    assert reply.status_code == 404 and reply.headers["content-type"].startswith("application/json")


def test_headers_over_64_kb_are_431(bench: Bench) -> None:
    head = b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n" + b"X-Pad: " + b"a" * 8000 + b"\r\n" * 1
    reply = _raw(
        bench, head * 1 + b"".join(b"X-Pad-%d: %s\r\n" % (i, b"a" * 8000) for i in range(10)) + b"\r\n"
    )
    assert reply.startswith(b"HTTP/1.1 431")


def test_the_server_still_answers(client: httpx.Client) -> None:
    assert client.get("/healthz").status_code == 200
