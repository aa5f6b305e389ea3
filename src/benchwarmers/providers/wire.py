"""HTTP/1.1 on our own keep-alive connections: the one way a model call
reaches the network.

Why not aiohttp's client, which this replaced (`benchmarks/outbound.py`,
loopback, the instant upstream): a call through aiohttp's `ClientSession`
cost 200-370 µs of CPU (its request object, payload, tracing, cookie jar,
redirect and timer machinery, its connector's bookkeeping), the largest
share of a passthrough's own work; the same exchange on an asyncio
`Protocol` with httptools' C parser (llhttp, what uvicorn parses requests
with) costs a quarter of that. A model call needs little of HTTP: one
request at a time per connection, a JSON body of known length, a reply
framed by `Content-Length`, chunks or the connection's close, maybe gzip.

What it keeps of aiohttp's behaviour, on purpose: no redirect is followed
(`transport.py` says where one points), the environment's proxies
(`proxy.py`: a request through an http one, a CONNECT tunnel for https),
the system's certificates for TLS,
`gzip` and `deflate` replies decoded, a connection idle for `keepalive`
seconds closed, and a request sent down a kept connection the server had
closed (no byte of reply) asked once more on a new one.

The limits a well-kept client holds against a hostile upstream:

- A reply's head (status line, headers, any interim 1xx) is at most
  `MAX_HEAD_BYTES` and `MAX_HEADERS` fields: `ReplyRefused` naming the cap.
  The bytes are counted *before* they reach the parser, and only as many as
  the cap allows are fed to it: httptools joins a header's pieces with
  `bytes +=` as they arrive, so a 64 MB header fed whole cost seconds of
  quadratic copying on the one event loop (every other client waited).
- A body is handed on at most `MAX_PIECE` bytes at a time: the consumer
  (`transport.py`) decodes a piece, splits it into events and parses them
  all before it yields the first, and a consumer that waits (a panel's
  seat whose client reads nothing, a route-mode stream) holds every form
  of that piece meanwhile. Handed whole, what was buffered (up to
  `HIGH_WATER` plus one read of 256 KB) was held four times over while its
  client stalled: half of a stalled stream's memory.
- A compressed body is inflated at most `INFLATED_PIECE` bytes at a time
  (zlib's `max_length`, the rest kept as its `unconsumed_tail`), so the
  transport's size cap counts inflated bytes as they come and a gzip bomb
  (500 KB of zeros on the wire, 512 MB inflated) is refused holding no
  more than the cap.
- Past `INFLATION_FLOOR` inflated bytes, a body that inflates more than
  `MAX_INFLATION_RATIO` times the compressed bytes it consumed is refused
  at once (`ReplyRefused`): a bomb is cut after about a MB of work instead
  of the transport's whole cap (each MB inflated is also decoded and
  scanned for events on the one event loop: 32 MB of it, ~0.3 s of CPU,
  held `/healthz` back by 100+ ms). JSON and SSE of real text deflate
  3-30:1 and deflate's own limit, what a bomb of zeros reaches, is
  ~1030:1, so the bound sits well between; a reply that deflates 200:1 past
  1 MB is no model's (a megabyte is ~250k tokens of one repeated word).

What it drops: cookies (no
model API needs one). A connection goes back to its pool only when its
reply was read to the end and the server did not say `close`; a reply
given up half way (a consumer gone, a deadline, a cancellation) closes its
connection, so no half-read reply is ever read as the next one's.

Failures are `OSError`s (`WireError`, or the socket's own), which the
transport maps once; a URL it cannot use is a `ValueError`.
"""

from __future__ import annotations

import asyncio
import ssl
import time
import zlib
from functools import lru_cache
from typing import Any

import httptools
from yarl import URL

from benchwarmers import jsontext
from benchwarmers.providers.proxy import Proxies, Proxy

# Bytes of a reply held before its connection stops reading until the consumer catches up:
# what a stream whose client reads nothing holds of its upstream (a panel's buffer and a
# route-mode stream wait on their client; 1 MB made that half of a stalled stream's memory),
# plus one read (up to 256 KB) that may arrive on top.
HIGH_WATER = 64 * 1024
# A reply's head: at most this many bytes (every interim reply's too) and this many fields.
MAX_HEAD_BYTES = 64 * 1024
MAX_HEADERS = 256
# A body is handed on at most this much at a time (what a waiting consumer holds, parsed).
MAX_PIECE = 64 * 1024
# A compressed body is inflated at most this much per piece handed on.
INFLATED_PIECE = 64 * 1024
# Past this many inflated bytes, a body inflating more than this many times what it consumed is a bomb.
INFLATION_FLOOR = 1024 * 1024
MAX_INFLATION_RATIO = 200
USER_AGENT = "benchwarmers"


class WireError(ConnectionError):
    """The exchange broke: the connection closed or the reply was not HTTP."""


class ReplyRefused(WireError):
    """The reply broke one of our limits (its head's size or field count):
    the upstream answered, wrongly, which is no connection failure."""


@lru_cache(maxsize=4096)
def parse_url(url: str) -> URL:
    """A URL the calls can use: http(s) with a host (parsed once per URL: the
    same few are asked again and again). `ValueError` otherwise."""
    parsed = URL(url)
    if parsed.scheme not in ("http", "https") or not parsed.host:
        raise ValueError(f"not an http(s) URL with a host: {url!r}")
    return parsed


@lru_cache(maxsize=1)
def _tls() -> ssl.SSLContext:
    return ssl.create_default_context()


# Scheme, host, port, and the proxy it goes through ("" for none).
Origin = tuple[str, str, int, str]


class Connection(asyncio.Protocol):
    """One keep-alive connection and the exchange on it now, as httptools'
    parser reads the reply: `head` is done once the status and headers are
    in, the body's pieces wait in `pieces` for `Body` to take."""

    def __init__(self, origin: Origin) -> None:
        self.origin = origin
        self.transport: asyncio.Transport | None = None
        self._parser = httptools.HttpResponseParser(self)
        self.idle_since = 0.0
        self._reset()

    def _reset(self) -> None:
        self.status = 0
        self.headers: dict[str, str] = {}
        self.head: asyncio.Future[None] | None = None
        self.pieces: list[bytes | memoryview] = []
        self.buffered = 0
        self.paused = False
        self.complete = False
        self.keep_alive = False  # what the reply said, read as it completed (the parser forgets it then)
        self.error: BaseException | None = None
        self.waiter: asyncio.Future[None] | None = None
        self.exchanging = False
        self.head_bytes = 0  # of the head so far (interim replies' included), counted before parsing
        self.fields = 0
        self.refused: ReplyRefused | None = None

    # -------------------------------------------------------------- the exchange

    def send(self, request: bytes, loop: asyncio.AbstractEventLoop) -> asyncio.Future[None]:
        """Write a request; the future is done when the reply's head is in."""
        assert self.transport is not None
        self._reset()
        self.exchanging = True
        self.head = loop.create_future()
        self.transport.write(request)
        return self.head

    def taken(self, size: int) -> None:
        """`Body` took what was buffered: read on if reading was paused."""
        self.buffered -= size
        if self.paused and self.buffered < HIGH_WATER and self.transport is not None:
            self.paused = False
            self.transport.resume_reading()

    @property
    def reusable(self) -> bool:
        return (
            self.complete
            and self.error is None
            and self.transport is not None
            and not self.transport.is_closing()
            and self.keep_alive
        )

    def close(self) -> None:
        if self.transport is not None:
            self.transport.abort()
            self.transport = None

    # --------------------------------------------------------- asyncio.Protocol

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport  # type: ignore[assignment]

    def data_received(self, data: bytes) -> None:
        if not self.exchanging:  # bytes nobody asked for: this connection cannot be trusted
            self._fail(WireError("the server sent bytes outside any exchange"))
            return
        if self.status == 0:  # the head is not in yet: the parser sees no more of it than the cap allows
            room = MAX_HEAD_BYTES - self.head_bytes
            self.head_bytes += len(data)
            if len(data) > room:
                self._feed(data[:room])
                if self.status == 0 and self.transport is not None:
                    self._fail(ReplyRefused(f"the reply's head is larger than {MAX_HEAD_BYTES // 1024} KB"))
                    return
                data = data[room:]
        self._feed(data)

    def _feed(self, data: bytes) -> None:
        try:
            self._parser.feed_data(data)
        except httptools.HttpParserError as error:
            self._fail(self.refused or WireError(f"the reply is not valid HTTP: {error}"))

    def connection_lost(self, exc: Exception | None) -> None:
        self.transport = None
        if not self.exchanging or self.complete:
            return
        if self.head is not None and self.head.done() and _ends_at_close(self.headers):
            self.on_message_complete()  # a body framed by the connection's close
            return
        self._fail(
            WireError(
                "the server closed the connection before replying"
                if self.head is None or not self.head.done()
                else "the connection closed before the reply ended"
            )
            if exc is None
            else exc
        )

    # ------------------------------------------------------ httptools callbacks

    def on_message_begin(self) -> None:
        if not self.exchanging:  # a second reply in the bytes of the first: nobody asked for it
            raise WireError("the server sent a reply nobody asked for")

    def on_header(self, name: bytes, value: bytes) -> None:
        self.fields += 1
        if self.fields > MAX_HEADERS:
            self.refused = ReplyRefused(f"the reply's head has more than {MAX_HEADERS} header fields")
            raise self.refused
        self.headers[name.decode("latin-1").lower()] = value.decode("latin-1")

    def on_headers_complete(self) -> None:
        status = self._parser.get_status_code()
        if 100 <= status < 200:  # an interim reply (100 Continue): the real one follows
            self.headers = {}
            self.fields = 0
            return
        self.status = status
        if self.head is not None and not self.head.done():
            self.head.set_result(None)

    def on_body(self, body: bytes) -> None:
        if self.status < 200:
            return
        self.pieces.append(body)
        self.buffered += len(body)
        if self.buffered >= HIGH_WATER and not self.paused and self.transport is not None:
            self.paused = True
            self.transport.pause_reading()
        self._wake()

    def on_message_complete(self) -> None:
        if self.status < 200:
            return
        self.keep_alive = self._parser.should_keep_alive()
        self.complete = True
        self.exchanging = False
        self._wake()

    # ----------------------------------------------------------------- plumbing

    def _fail(self, error: BaseException) -> None:
        if self.error is None and not self.complete:
            self.error = error
        self.exchanging = False
        self.close()
        if self.head is not None and not self.head.done():
            self.head.set_exception(error)
            self.head.exception()  # retrieved: its waiter may be gone
        self._wake()

    def _wake(self) -> None:
        waiter = self.waiter
        if waiter is not None and not waiter.done():
            waiter.set_result(None)


def _ends_at_close(headers: dict[str, str]) -> bool:
    return "content-length" not in headers and "chunked" not in headers.get("transfer-encoding", "").lower()


class Body:
    """A reply's body as it arrives: each `anext` is what came since the
    last one (joined, decoded), waiting only when nothing has."""

    __slots__ = ("_compressed", "_connection", "_decoder", "_inflated", "_loop")

    def __init__(self, connection: Connection, loop: asyncio.AbstractEventLoop) -> None:
        self._connection = connection
        self._loop = loop
        self._compressed = 0  # bytes the decoder consumed, and what they inflated to
        self._inflated = 0
        encoding = connection.headers.get("content-encoding", "identity").lower()
        if encoding in ("gzip", "x-gzip", "deflate"):
            self._decoder: Any = zlib.decompressobj(32 + zlib.MAX_WBITS)  # gzip or zlib, by its header
        elif encoding == "identity":
            self._decoder = None
        else:
            raise WireError(f"the reply is encoded as {encoding!r}, which was not asked for")

    def __aiter__(self) -> Body:
        return self

    async def __anext__(self) -> bytes:
        decoder = self._decoder
        if decoder is not None and decoder.unconsumed_tail:
            await asyncio.sleep(0)  # a large inflation takes turns with the loop's other work
            return self._inflate(decoder.unconsumed_tail)
        connection = self._connection
        while not connection.pieces:
            if connection.error is not None:
                raise connection.error
            if connection.complete:
                if self._decoder is not None:
                    rest = self._decoder.flush()  # what zlib still holds: less than its window
                    self._decoder = None
                    if rest:
                        return bytes(rest)
                raise StopAsyncIteration
            waiter = connection.waiter = self._loop.create_future()
            try:
                await waiter
            finally:
                connection.waiter = None
        pieces = connection.pieces
        first = pieces[0]
        if len(pieces) == 1 and type(first) is bytes and len(first) <= MAX_PIECE:  # a stream's usual piece
            piece = first
            connection.pieces = []
        else:
            piece = _front(connection)
        connection.taken(len(piece))
        return piece if decoder is None else self._inflate(piece)

    def _inflate(self, piece: bytes) -> bytes:
        """At most `INFLATED_PIECE` bytes of what `piece` inflates to; the
        rest of `piece` waits in the decoder's `unconsumed_tail`. Refused
        once the body inflates past `MAX_INFLATION_RATIO` (a bomb)."""
        decoder = self._decoder
        try:
            inflated: bytes = decoder.decompress(piece, INFLATED_PIECE)
        except zlib.error as error:
            raise WireError(f"the reply's compressed body is corrupt: {error}") from None
        self._compressed += len(piece) - len(decoder.unconsumed_tail)
        self._inflated += len(inflated)
        if self._inflated > INFLATION_FLOOR and self._inflated > MAX_INFLATION_RATIO * self._compressed:
            raise ReplyRefused(
                f"the reply's compressed body inflates more than {MAX_INFLATION_RATIO}:1 (a bomb)"
            )
        return inflated


class Pool:
    """Keep-alive connections by origin, the most recently used first. The
    gates in front (`outbound.OutboundClient`) bound how many there are."""

    def __init__(self, keepalive: float, proxies: Proxies | None = None) -> None:
        self.keepalive = keepalive
        self.proxies = proxies
        self._idle: dict[Origin, list[Connection]] = {}
        self._sweep: asyncio.TimerHandle | None = None
        self._closed = False

    async def exchange(
        self, method: str, url: URL, body: dict[str, Any] | None, headers: dict[str, str]
    ) -> tuple[Connection, Body]:
        """Send one request and wait for its reply's head; the caller gives
        the connection back (`give_back`) however the exchange ends."""
        loop = asyncio.get_running_loop()
        proxy = self.proxies.for_url(url) if self.proxies else None
        if proxy is not None and url.scheme == "http":  # the proxy reads it: the whole URL, its sign-in
            signed = dict(headers)
            if proxy.authorization:
                signed["proxy-authorization"] = proxy.authorization
            request = _request(method, url, body, signed, target=str(url.with_fragment(None)))
        else:
            request = _request(method, url, body, headers)
        origin: Origin = (url.scheme, url.raw_host or "", url.port or 0, proxy.key if proxy else "")
        kept = self._take(origin)
        connection = kept or await self._connect(origin, proxy, loop)
        try:
            await connection.send(request, loop)
        except OSError:
            connection.close()
            if kept is None or connection.head_bytes:
                raise
            # A kept-alive connection the server closed as we reused it (its idle time
            # ran out as ours had not) answered not a byte: the request is asked once
            # more on a new connection, as Go's client asks again after a server closed
            # an idle one; a fresh connection that answers nothing fails as it is.
            connection = await self._connect(origin, proxy, loop)
            try:
                await connection.send(request, loop)
            except BaseException:
                connection.close()
                raise
        except BaseException:
            connection.close()
            raise
        return connection, Body(connection, loop)

    def give_back(self, connection: Connection) -> None:
        if self._closed or not connection.reusable:
            connection.close()
            return
        connection.idle_since = time.monotonic()
        self._idle.setdefault(connection.origin, []).append(connection)
        if self._sweep is None:
            self._sweep = asyncio.get_running_loop().call_later(self.keepalive, self._swept)

    def close(self) -> None:
        self._closed = True
        if self._sweep is not None:
            self._sweep.cancel()
            self._sweep = None
        for idle in self._idle.values():
            for connection in idle:
                connection.close()
        self._idle.clear()

    def _take(self, origin: Origin) -> Connection | None:
        idle = self._idle.get(origin)
        oldest = time.monotonic() - self.keepalive
        while idle:
            connection = idle.pop()
            alive = connection.transport is not None and not connection.transport.is_closing()
            if alive and connection.idle_since > oldest:
                return connection
            connection.close()
        return None

    async def _connect(
        self, origin: Origin, proxy: Proxy | None, loop: asyncio.AbstractEventLoop
    ) -> Connection:
        scheme, host, port, _ = origin
        tls = scheme == "https"
        if proxy is not None and tls:
            return await _tunnel(origin, proxy, loop)
        if proxy is not None:
            _, plain = await loop.create_connection(lambda: Connection(origin), proxy.host, proxy.port)
            return plain
        _, connection = await loop.create_connection(
            lambda: Connection(origin),
            host,
            port,
            ssl=_tls() if tls else None,
            server_hostname=host if tls else None,
        )
        return connection

    def _swept(self) -> None:
        """Close what has idled past its time; come again while any idles."""
        self._sweep = None
        oldest = time.monotonic() - self.keepalive
        for origin, idle in list(self._idle.items()):
            keep = []
            for connection in idle:
                if connection.idle_since > oldest and connection.transport is not None:
                    keep.append(connection)
                else:
                    connection.close()
            if keep:
                self._idle[origin] = keep
            else:
                del self._idle[origin]
        if self._idle:
            self._sweep = asyncio.get_running_loop().call_later(self.keepalive, self._swept)


async def _tunnel(origin: Origin, proxy: Proxy, loop: asyncio.AbstractEventLoop) -> Connection:
    """A connection to an https origin through a proxy's CONNECT tunnel, TLS
    to the origin inside it."""
    _, host, port, _ = origin
    authority = f"[{host}]:{port}" if ":" in host else f"{host}:{port}"
    transport, opening = await loop.create_connection(_Opening, proxy.host, proxy.port)
    try:
        signed = f"proxy-authorization: {proxy.authorization}\r\n" if proxy.authorization else ""
        asked = f"CONNECT {authority} HTTP/1.1\r\nHost: {authority}\r\n{signed}\r\n"
        transport.write(asked.encode("latin-1"))
        status = await opening.answered
        if not 200 <= status < 300:
            raise WireError(f"the proxy {proxy.key} refused a tunnel to {authority}: HTTP {status}")
        connection = Connection(origin)
        secured = await loop.start_tls(transport, connection, _tls(), server_hostname=host)
    except BaseException:
        transport.abort()
        raise
    assert secured is not None
    connection.connection_made(secured)
    return connection


class _Opening(asyncio.Protocol):
    """A CONNECT's reply: its status, once its head is in (at most `MAX_HEAD_BYTES`)."""

    def __init__(self) -> None:
        self.answered: asyncio.Future[int] = asyncio.get_running_loop().create_future()
        self._head = b""

    def data_received(self, data: bytes) -> None:
        if self.answered.done():
            return
        self._head += data
        head, found, rest = self._head.partition(b"\r\n\r\n")
        if found:
            parts = head.split(b" ", 2)
            ok = len(parts) >= 2 and parts[0].startswith(b"HTTP/1.") and parts[1].isdigit() and not rest
            if ok:
                self.answered.set_result(int(parts[1]))
            else:
                self.answered.set_exception(WireError("the proxy's answer to CONNECT is not HTTP"))
        elif len(self._head) > MAX_HEAD_BYTES:
            self.answered.set_exception(ReplyRefused("the proxy's answer to CONNECT is larger than its cap"))

    def connection_lost(self, exc: Exception | None) -> None:
        if not self.answered.done():
            self.answered.set_exception(exc or WireError("the proxy closed the connection before answering"))


def _request(
    method: str, url: URL, body: dict[str, Any] | None, headers: dict[str, str], target: str = ""
) -> bytes:
    """The request's bytes: its line (`target`: the whole URL, for a proxy),
    headers and JSON body."""
    lines = [f"{method} {target or url.raw_path_qs} HTTP/1.1", f"Host: {url.host_port_subcomponent}"]
    sent = {name.lower() for name in headers}
    for name, value in headers.items():
        if "\r" in value or "\n" in value or "\r" in name or "\n" in name or ":" in name:
            raise ValueError(f"header {name!r} holds a line break or a colon: refused")
        lines.append(f"{name}: {value}")
    payload = b"" if body is None else jsontext.dumps(body)
    for name, value in _DEFAULTS:
        if name not in sent:
            lines.append(f"{name}: {value}")
    if body is not None:
        if "content-type" not in sent:
            lines.append("content-type: application/json")
        lines.append(f"content-length: {len(payload)}")
    return ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1") + payload


_DEFAULTS = (("accept", "*/*"), ("accept-encoding", "gzip, deflate"), ("user-agent", USER_AGENT))


def _front(connection: Connection) -> bytes:
    """At most `MAX_PIECE` bytes off the front of what `connection` buffered;
    the rest stays, a view of it (not copied again for each piece taken)."""
    pieces = connection.pieces
    buffered = pieces[0] if len(pieces) == 1 else b"".join(pieces)
    if len(buffered) <= MAX_PIECE:
        connection.pieces = []
        return bytes(buffered)
    view = memoryview(buffered)
    connection.pieces = [view[MAX_PIECE:]]
    return bytes(view[:MAX_PIECE])
