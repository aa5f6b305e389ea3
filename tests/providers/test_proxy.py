"""The environment's proxies, through a small proxy of our own on loopback:
`HTTP_PROXY` takes an http call as a whole-URL request (signed in with the
proxy URL's credentials), `HTTPS_PROXY` an https call through a CONNECT
tunnel with TLS to the upstream inside it (the proxy never sees the
request), `NO_PROXY` goes direct, and a proxy that refuses the tunnel is a
provider error that names it."""

from __future__ import annotations

import asyncio
import base64
import ssl
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from pathlib import Path

import pytest

from benchwarmers.errors import ProviderConnectError
from benchwarmers.providers import wire
from benchwarmers.providers.outbound import OutboundClient
from benchwarmers.providers.transport import Transport
from benchwarmers.testing.hostile import HostileUpstream

from .test_wire import Scripted, _self_signed, ok

pytestmark = pytest.mark.integration

REPLY = b'{"answer": "through"}'
PROXY_VARIABLES = ("http_proxy", "https_proxy", "no_proxy", "all_proxy")


class _Proxy:
    """A forward proxy: CONNECT tunnels and whole-URL requests, each piped
    both ways to where it names; `heads` are the request heads it read."""

    def __init__(self, refuse_tunnels: bool = False) -> None:
        self.heads: list[bytes] = []
        self.refuse_tunnels = refuse_tunnels

    async def serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        head = await reader.readuntil(b"\r\n\r\n")
        self.heads.append(head)
        method, target, _ = head.split(b"\r\n", 1)[0].split(b" ", 2)
        if method == b"CONNECT":
            if self.refuse_tunnels:
                writer.write(b"HTTP/1.1 407 Proxy Authentication Required\r\ncontent-length: 0\r\n\r\n")
                await writer.drain()
                writer.close()
                return
            host, port = target.decode().rsplit(":", 1)
            up_reader, up_writer = await asyncio.open_connection(host, int(port))
            writer.write(b"HTTP/1.1 200 Connection established\r\n\r\n")
        else:
            authority = target.decode().split("://", 1)[1].split("/", 1)[0]
            host, port = authority.rsplit(":", 1)
            up_reader, up_writer = await asyncio.open_connection(host, int(port))
            up_writer.write(head)
        await asyncio.gather(_pipe(reader, up_writer), _pipe(up_reader, writer))


async def _pipe(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    try:
        while data := await reader.read(65536):
            writer.write(data)
            await writer.drain()
    except ConnectionError:
        pass
    finally:
        writer.close()


@asynccontextmanager
async def _proxy(refuse_tunnels: bool = False) -> AsyncIterator[tuple[_Proxy, str]]:
    proxy = _Proxy(refuse_tunnels)
    server = await asyncio.start_server(proxy.serve, "127.0.0.1", 0)
    try:
        yield proxy, f"127.0.0.1:{server.sockets[0].getsockname()[1]}"
    finally:
        server.close()


@pytest.fixture(autouse=True)
def _clean_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in PROXY_VARIABLES:
        monkeypatch.delenv(name, raising=False)
        monkeypatch.delenv(name.upper(), raising=False)


@pytest.fixture
def upstream() -> Iterator[HostileUpstream]:
    reply = b"HTTP/1.1 200 OK\r\ncontent-length: %d\r\n\r\n%s" % (len(REPLY), REPLY)
    with HostileUpstream(lambda _request: [reply]) as server:
        yield server


async def _post(url: str) -> object:
    async with OutboundClient() as outbound:
        _, body = await Transport(outbound).post_json(url, {"model": "m"}, headers={}, timeout=10.0)
        return body


async def test_http_proxy_takes_a_whole_url_request_signed_in(
    upstream: HostileUpstream, monkeypatch: pytest.MonkeyPatch
) -> None:
    async with _proxy() as (proxy, where):
        monkeypatch.setenv("HTTP_PROXY", f"http://me:s%40cret@{where}")
        body = await _post(upstream.base + "/chat/completions")
    assert body == {"answer": "through"}
    [head] = proxy.heads
    assert head.startswith(f"POST {upstream.base}/chat/completions HTTP/1.1\r\n".encode())
    signed = base64.b64encode(b"me:s@cret")
    assert b"proxy-authorization: Basic " + signed in head


async def test_no_proxy_goes_direct(upstream: HostileUpstream, monkeypatch: pytest.MonkeyPatch) -> None:
    async with _proxy() as (proxy, where):
        monkeypatch.setenv("HTTP_PROXY", f"http://{where}")
        monkeypatch.setenv("NO_PROXY", "localhost,127.0.0.1")
        body = await _post(upstream.base + "/chat/completions")
    assert body == {"answer": "through"} and proxy.heads == []


async def test_https_proxy_tunnels_with_connect_and_tls_inside(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    cert, key = _self_signed(tmp_path, "localhost")
    serving = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    serving.load_cert_chain(cert, key)
    seen: list[bytes] = []
    loop = asyncio.get_running_loop()
    listening = await loop.create_server(
        lambda: Scripted(lambda _r, _n: ok(REPLY), seen, []), "127.0.0.1", 0, ssl=serving
    )
    port = listening.sockets[0].getsockname()[1]
    trusting = ssl.create_default_context(cafile=str(cert))
    monkeypatch.setattr(wire, "_tls", lambda: trusting)
    try:
        async with _proxy() as (proxy, where):
            monkeypatch.setenv("HTTPS_PROXY", f"http://{where}")
            body = await _post(f"https://localhost:{port}/v1/chat/completions")
    finally:
        listening.close()
    assert body == {"answer": "through"}
    [head] = proxy.heads
    assert head.startswith(f"CONNECT localhost:{port} HTTP/1.1\r\n".encode())
    assert seen[-1].startswith(b"POST /v1/chat/completions HTTP/1.1\r\n")  # read by the upstream, in TLS


async def test_a_proxy_that_refuses_the_tunnel_is_an_error_naming_it(monkeypatch: pytest.MonkeyPatch) -> None:
    async with _proxy(refuse_tunnels=True) as (_proxy_server, where):
        monkeypatch.setenv("HTTPS_PROXY", f"http://{where}")
        with pytest.raises(ProviderConnectError, match=rf"the proxy {where} refused a tunnel .* HTTP 407"):
            await _post("https://localhost:9/v1/chat/completions")


async def test_a_proxy_of_another_scheme_is_refused_not_bypassed(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HTTPS_PROXY", "socks5://127.0.0.1:1080")
    with pytest.raises(ProviderConnectError, match="not an http:// proxy"):
        await _post("https://localhost:9/v1/chat/completions")
