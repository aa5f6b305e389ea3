"""Our HTTP/1.1 client against a server that writes scripted bytes: every
framing a reply may come in (length, chunks, the connection's close, gzip),
keep-alive reuse only after a reply read to its end, and every way the
exchange breaks ending as an `OSError` the transport maps once."""

from __future__ import annotations

import asyncio
import gzip
import ssl
import zlib
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from benchwarmers.providers import wire
from benchwarmers.providers.deadline import Deadline
from benchwarmers.providers.outbound import OutboundClient, Response
from benchwarmers.providers.wire import HIGH_WATER, Pool, WireError, parse_url

pytestmark = pytest.mark.integration

# What the server answers a request with, given the request's bytes and how many it has seen.
Script = Callable[[bytes, int], bytes | None]


def ok(body: bytes, *headers: str) -> bytes:
    head = "".join(f"{h}\r\n" for h in headers)
    return f"HTTP/1.1 200 OK\r\ncontent-length: {len(body)}\r\n{head}\r\n".encode() + body


class Scripted(asyncio.Protocol):
    """Answers each whole request (head and `content-length` body) with
    what the script says; None closes the connection instead."""

    def __init__(self, script: Script, seen: list[bytes], connections: list[Scripted]) -> None:
        self.script, self.seen, self.buffer = script, seen, b""
        self.transport: asyncio.Transport | None = None
        connections.append(self)

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport  # type: ignore[assignment]

    def connection_lost(self, exc: Exception | None) -> None:
        self.transport = None

    def data_received(self, data: bytes) -> None:
        self.buffer += data
        head, found, rest = self.buffer.partition(b"\r\n\r\n")
        if not found:
            return
        fields = head.lower().split(b"\r\n")
        lengths = [int(line.split(b":")[1]) for line in fields if line.startswith(b"content-length")]
        length = lengths[0] if lengths else 0
        if len(rest) < length:
            return
        self.buffer = rest[length:]
        request = head + b"\r\n\r\n" + rest[:length]
        self.seen.append(request)
        answer = self.script(request, len(self.seen))
        assert self.transport is not None
        if answer is None:
            self.transport.close()
        else:
            self.transport.write(answer)


@asynccontextmanager
async def server(script: Script) -> AsyncIterator[tuple[str, list[bytes], list[Scripted]]]:
    seen: list[bytes] = []
    connections: list[Scripted] = []
    loop = asyncio.get_running_loop()
    listening = await loop.create_server(lambda: Scripted(script, seen, connections), "127.0.0.1", 0)
    port = listening.sockets[0].getsockname()[1]
    try:
        yield f"http://127.0.0.1:{port}/v1/chat/completions", seen, connections
    finally:
        listening.close()
        for connection in connections:
            if connection.transport is not None:
                connection.transport.close()


async def fetch(
    outbound: OutboundClient, url: str, headers: dict[str, str] | None = None
) -> tuple[Response, bytes]:
    deadline = Deadline.after(5.0)
    try:
        response = await outbound.open("POST", url, {"model": "m"}, headers or {}, deadline)
        try:
            body = b"".join([piece async for piece in response.body])
        finally:
            response.release()
        return response, body
    finally:
        deadline.close()


async def test_a_reply_read_to_its_end_leaves_its_connection_for_the_next_call() -> None:
    async with (
        server(lambda _r, n: ok(f"reply {n}".encode())) as (url, seen, connections),
        OutboundClient() as outbound,
    ):
        bodies = [(await fetch(outbound, url))[1] for _ in range(3)]
    assert bodies == [b"reply 1", b"reply 2", b"reply 3"]
    assert len(connections) == 1 and len(seen) == 3


async def test_the_request_is_one_json_post_with_our_headers_and_the_callers() -> None:
    async with server(lambda _r, _n: ok(b"{}")) as (url, seen, _), OutboundClient() as outbound:
        await fetch(outbound, url + "?alt=sse", {"authorization": "Bearer k"})
    head, _, body = seen[0].partition(b"\r\n\r\n")
    lines = head.decode().split("\r\n")
    assert lines[0] == "POST /v1/chat/completions?alt=sse HTTP/1.1"
    fields = {line.split(": ")[0].lower(): line.split(": ", 1)[1] for line in lines[1:]}
    assert fields["host"] == url.split("/")[2]
    assert fields["authorization"] == "Bearer k" and fields["content-type"] == "application/json"
    assert int(fields["content-length"]) == len(body) and body == b'{"model":"m"}'


async def test_a_server_that_says_close_is_not_asked_again_on_that_connection() -> None:
    async with (
        server(lambda _r, _n: ok(b"x", "connection: close")) as (url, _, connections),
        OutboundClient() as outbound,
    ):
        for _ in range(2):
            await fetch(outbound, url)
    assert len(connections) == 2


async def test_a_reply_given_up_half_way_closes_its_connection() -> None:
    def script(_request: bytes, n: int) -> bytes:
        return b"HTTP/1.1 200 OK\r\ncontent-length: 100\r\n\r\nabc" if n == 1 else ok(b"whole")

    async with server(script) as (url, _, connections), OutboundClient() as outbound:
        deadline = Deadline.after(5.0)
        response = await outbound.open("POST", url, {}, {}, deadline)
        deadline.close()
        response.release()  # 3 bytes of 100 in: the rest would be read as the next reply
        assert outbound.in_flight == 0
        _, body = await fetch(outbound, url)
    assert body == b"whole" and len(connections) == 2


async def test_chunked_gzip_and_close_framed_bodies_read_whole() -> None:
    words = b"data: one\n\ndata: two\n\n"
    packed = gzip.compress(words)
    chunked = (
        b"HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\ncontent-encoding: gzip\r\n\r\n"
        + b"".join(b"%x\r\n%s\r\n" % (len(part), part) for part in (packed[:7], packed[7:]))
        + b"0\r\n\r\n"
    )
    deflated = ok(zlib.compress(words), "content-encoding: deflate")
    to_close = b"HTTP/1.1 200 OK\r\n\r\n" + words

    def script(_request: bytes, n: int) -> bytes:
        return chunked if n == 1 else deflated

    async with server(script) as (url, _, connections), OutboundClient() as outbound:
        assert (await fetch(outbound, url))[1] == words
        assert (await fetch(outbound, url))[1] == words
    assert len(connections) == 1

    async with server(lambda _r, _n: to_close) as (url, _, connections), OutboundClient() as outbound:
        # The server keeps the connection open: close it after the bytes, as such a server would.
        task = asyncio.ensure_future(fetch(outbound, url))
        while not connections or connections[0].transport is None or not connections[0].seen:
            await asyncio.sleep(0.01)
        assert connections[0].transport is not None
        connections[0].transport.close()
        _, body = await task
    assert body == words


async def test_an_interim_100_is_skipped_for_the_reply_after_it() -> None:
    async with (
        server(lambda _r, _n: b"HTTP/1.1 100 Continue\r\n\r\n" + ok(b"real")) as (url, _, _c),
        OutboundClient() as outbound,
    ):
        response, body = await fetch(outbound, url)
    assert (response.status, body) == (200, b"real")


async def test_a_kept_connection_the_server_closed_as_it_was_reused_is_asked_once_more() -> None:
    """The server's idle timeout ran out as ours had not: the second request
    went down a connection it closed without a byte of reply, and is asked
    again on a new one (the first connection answered it nothing); a kept
    connection that answered part of a reply, or a fresh one that answers
    nothing, fails as before."""

    def closes_the_second(_request: bytes, n: int) -> bytes | None:
        return None if n == 2 else ok(f"reply {n}".encode())

    async with server(closes_the_second) as (url, seen, connections), OutboundClient() as outbound:
        assert (await fetch(outbound, url))[1] == b"reply 1"
        assert (await fetch(outbound, url))[1] == b"reply 3"
        assert len(seen) == 3 and len(connections) == 2
        assert outbound.in_flight == 0

    def cuts_the_second(_request: bytes, n: int) -> bytes:
        return b"HTTP/1.1 200 OK\r\ncontent-length: 10\r\n\r\nabc" if n == 2 else ok(b"whole")

    async with server(cuts_the_second) as (url, seen, connections), OutboundClient() as outbound:
        assert (await fetch(outbound, url))[1] == b"whole"
        task = asyncio.ensure_future(fetch(outbound, url))
        while len(seen) < 2:
            await asyncio.sleep(0.01)
        assert connections[0].transport is not None
        connections[0].transport.close()
        with pytest.raises(OSError, match="closed before the reply ended"):
            await task
        assert len(seen) == 2  # part of a reply came: not asked again


@pytest.mark.parametrize(
    ("answer", "says"),
    [
        (None, "closed the connection before replying"),
        (b"HTTP/1.1 200 OK\r\ncontent-length: 10\r\n\r\nabc", "closed before the reply ended"),
        (b"SMTP ready\r\n\r\n", "not valid HTTP"),
        (ok(b"not gzip", "content-encoding: gzip"), "corrupt"),
        (ok(b"x", "content-encoding: br"), "not asked for"),
    ],
    ids=["no reply", "cut body", "not http", "bad gzip", "unasked encoding"],
)
async def test_a_broken_exchange_is_an_oserror(answer: bytes | None, says: str) -> None:
    def script(_request: bytes, _n: int) -> bytes | None:
        return answer

    async with server(script) as (url, _, connections), OutboundClient() as outbound:
        if answer is not None and b"abc" in answer:  # a cut body: the server closes after what it sent
            task = asyncio.ensure_future(fetch(outbound, url))
            while not connections or not connections[0].seen:
                await asyncio.sleep(0.01)
            assert connections[0].transport is not None
            connections[0].transport.close()
            with pytest.raises(OSError, match=says):
                await task
        else:
            with pytest.raises(OSError, match=says):
                await fetch(outbound, url)
        assert outbound.in_flight == 0
    assert issubclass(WireError, OSError)  # what the transport maps, with the socket's own


async def test_a_header_that_would_split_the_request_is_refused() -> None:
    async with server(lambda _r, _n: ok(b"x")) as (url, seen, _), OutboundClient() as outbound:
        with pytest.raises(ValueError, match="line break"):
            await fetch(outbound, url, {"authorization": "Bearer k\r\nx-evil: 1"})
    assert seen == []


def test_only_http_urls_with_a_host_are_used() -> None:
    assert parse_url("https://api.example/v1").host == "api.example"
    for bad in ("ftp://host/x", "http:///nohost", "not a url"):
        with pytest.raises(ValueError):
            parse_url(bad)


async def test_a_connection_idle_past_the_keepalive_is_not_used_again() -> None:
    async with server(lambda _r, n: ok(b"x")) as (url, _, connections), OutboundClient() as outbound:
        await fetch(outbound, url)
        pool = outbound._pool
        assert isinstance(pool, Pool)
        pool.keepalive = 0.0
        await fetch(outbound, url)
    assert len(connections) == 2


async def test_a_large_reply_pauses_reading_until_it_is_taken() -> None:
    size = HIGH_WATER * 3
    async with server(lambda _r, _n: ok(b"y" * size)) as (url, _, connections), OutboundClient() as outbound:
        _, body = await fetch(outbound, url)
        _, again = await fetch(outbound, url)
    assert len(body) == len(again) == size and len(connections) == 1


async def test_a_cancelled_wait_for_the_reply_closes_the_connection() -> None:
    async with (
        server(lambda _r, n: ok(b"late") if n > 1 else b"") as (url, _, connections),
        OutboundClient() as outbound,
    ):
        task = asyncio.ensure_future(fetch(outbound, url))
        while not connections or not connections[0].seen:
            await asyncio.sleep(0.01)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        assert outbound.in_flight == 0
        _, body = await fetch(outbound, url)
    assert body == b"late" and len(connections) == 2


async def test_https_is_tls_to_the_host_named_checked_against_trusted_certificates(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    cert, key = _self_signed(tmp_path, "localhost")
    serving = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    serving.load_cert_chain(cert, key)
    seen: list[bytes] = []
    loop = asyncio.get_running_loop()
    listening = await loop.create_server(
        lambda: Scripted(lambda _r, _n: ok(b"secret"), seen, []), "127.0.0.1", 0, ssl=serving
    )
    url = f"https://localhost:{listening.sockets[0].getsockname()[1]}/v1/chat/completions"
    try:
        async with OutboundClient() as outbound:  # the system's certificates: ours is not among them
            with pytest.raises(ssl.SSLCertVerificationError):
                await fetch(outbound, url)
        trusting = ssl.create_default_context(cafile=str(cert))
        monkeypatch.setattr(wire, "_tls", lambda: trusting)
        async with OutboundClient() as outbound:
            _, body = await fetch(outbound, url)
    finally:
        listening.close()
    assert body == b"secret" and seen[-1].startswith(b"POST /v1/chat/completions HTTP/1.1\r\n")


def _self_signed(folder: Path, host: str) -> tuple[Path, Path]:
    x509 = pytest.importorskip("cryptography.x509")
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, host)])
    now = datetime.now(UTC)
    certificate = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - timedelta(days=1))
        .not_valid_after(now + timedelta(days=1))
        .add_extension(x509.SubjectAlternativeName([x509.DNSName(host)]), critical=False)
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .sign(key, hashes.SHA256())
    )
    cert_file, key_file = folder / "cert.pem", folder / "key.pem"
    cert_file.write_bytes(certificate.public_bytes(serialization.Encoding.PEM))
    key_file.write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
        )
    )
    return cert_file, key_file


async def test_a_reply_nobody_asked_for_closes_the_connection_not_the_next_call() -> None:
    async with (
        server(lambda _r, n: ok(b"first") + ok(b"unasked") if n == 1 else ok(b"second")) as (
            url,
            _,
            connections,
        ),
        OutboundClient() as outbound,
    ):
        first = (await fetch(outbound, url))[1]
        second = (await fetch(outbound, url))[1]
    assert (first, second) == (b"first", b"second") and len(connections) == 2


async def test_connections_left_idle_are_closed_once_their_keepalive_is_up() -> None:
    async with server(lambda _r, _n: ok(b"x")) as (url, _, connections), OutboundClient() as outbound:
        pool = outbound._pool
        assert isinstance(pool, Pool)
        pool.keepalive = 0.05
        await fetch(outbound, url)
        assert connections[0].transport is not None  # kept for the next call
        for _ in range(100):
            if connections[0].transport is None:
                break
            await asyncio.sleep(0.02)
        assert connections[0].transport is None, "the idle connection was never closed"
