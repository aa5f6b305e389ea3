"""A hostile upstream: raw bytes on loopback, for the attacks an upstream
can make on our outbound client (a head of 64 MB, 200k headers, a gzip
bomb, broken chunk framing) and for `benchmarks/hostile.py`.

    with HostileUpstream(lambda: [b"HTTP/1.1 200 OK\\r\\n", b"x: " + b"a" * 2**26]) as upstream:
        upstream.base            # http://127.0.0.1:PORT/v1, an OpenAI-style base URL

Each connection reads one request's head (and its `content-length` body),
then writes what the reply function gives, piece by piece, and closes.
It runs in threads of its own, blocking sockets, so neither the server
under test nor a test's event loop carries it. `bomb_head`, `many_headers`
and `gzip_bomb` are the replies of the attacks.
"""

from __future__ import annotations

import contextlib
import gzip
import json
import socket
import socketserver
import struct
import threading
import zlib
from collections.abc import Callable, Iterable
from functools import lru_cache
from types import TracebackType
from typing import Self

# The reply to a request, given the request's bytes (head and body).
Reply = Callable[[bytes], Iterable[bytes]]


def bomb_head(size: int = 64 * 1024 * 1024, piece: int = 1024 * 1024) -> Iterable[bytes]:
    """A 200 whose one header value is `size` bytes, sent `piece` at a time."""
    yield b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\nx-bomb: "
    sent = 0
    block = b"a" * piece
    while sent < size:
        yield block
        sent += piece
    yield b"\r\ncontent-length: 2\r\n\r\n{}"


def many_headers(count: int = 200_000) -> Iterable[bytes]:
    """A 200 with `count` small headers."""
    yield b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\n"
    batch = b"".join(b"x-%d: 1\r\n" % i for i in range(1000))
    for _ in range(count // 1000):
        yield batch
    yield b"content-length: 2\r\n\r\n{}"


@lru_cache(maxsize=4)
def gzip_bomb(inflated: int = 512 * 1024 * 1024) -> bytes:
    """A 200 whose gzip body inflates to `inflated` zero bytes (~1/1000 of
    that on the wire). Built without compressing it all: once zlib's state
    is steady, a flushed megabyte of zeros compresses to the same bytes
    every time, so the stream is that block repeated, then a checksum."""
    megabyte = bytes(1024 * 1024)
    count = max(1, inflated // len(megabyte))
    squeeze = zlib.compressobj(9, zlib.DEFLATED, -zlib.MAX_WBITS)
    first = squeeze.compress(megabyte) + squeeze.flush(zlib.Z_SYNC_FLUSH)
    steady = squeeze.compress(megabyte) + squeeze.flush(zlib.Z_SYNC_FLUSH)
    crc = 0
    for _ in range(count):
        crc = zlib.crc32(megabyte, crc)
    body = (
        b"\x1f\x8b\x08\x00\x00\x00\x00\x00\x02\xff"  # a gzip member's header
        + first
        + steady * (count - 1)
        + squeeze.flush()
        + struct.pack("<II", crc, (count * len(megabyte)) & 0xFFFFFFFF)
    )
    head = (
        b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-encoding: gzip\r\n"
        b"content-length: %d\r\n\r\n" % len(body)
    )
    return head + body


def gzipped(status: int, body: bytes, *headers: bytes) -> bytes:
    """A whole reply with a gzip body (what an honest upstream may send)."""
    packed = gzip.compress(body)
    extra = b"".join(h + b"\r\n" for h in headers)
    return (
        b"HTTP/1.1 %d OK\r\ncontent-encoding: gzip\r\ncontent-length: %d\r\n%s\r\n"
        % (status, len(packed), extra)
        + packed
    )


def openai_text(request: bytes, text: str, pieces: int = 64) -> Iterable[bytes]:
    """An honest OpenAI chat reply of `text` (a large one, for the stalled
    readers): streamed in `pieces` deltas when the request asks for a
    stream, else whole; framed by the connection's close."""
    if b'"stream":true' not in request.replace(b" ", b""):
        body = json.dumps(
            {
                "id": "big",
                "object": "chat.completion",
                "model": "big",
                "choices": [
                    {"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": "stop"}
                ],
                "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2},
            }
        ).encode()
        yield b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: %d\r\n\r\n" % len(body)
        yield body
        return
    yield b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\nconnection: close\r\n\r\n"
    step = max(1, len(text) // pieces)
    for start in range(0, len(text), step):
        delta = {"content": text[start : start + step]}
        yield _sse_chunk({"index": 0, "delta": delta, "finish_reason": None})
    yield _sse_chunk({"index": 0, "delta": {}, "finish_reason": "stop"})
    yield b"data: [DONE]\n\n"


def _sse_chunk(choice: dict[str, object]) -> bytes:
    chunk = {"id": "big", "object": "chat.completion.chunk", "model": "big", "choices": [choice]}
    return b"data: " + json.dumps(chunk).encode() + b"\n\n"


class _Handler(socketserver.BaseRequestHandler):
    server: _Server

    def handle(self) -> None:
        sock: socket.socket = self.request
        head = b""
        while b"\r\n\r\n" not in head:
            got = sock.recv(65536)
            if not got:
                return
            head += got
        fields, _, body = head.partition(b"\r\n\r\n")
        lengths = [line for line in fields.lower().split(b"\r\n") if line.startswith(b"content-length:")]
        length = int(lengths[0].split(b":", 1)[1]) if lengths else 0
        while len(body) < length:
            got = sock.recv(65536)
            if not got:
                return
            body += got
        self.server.requests += 1
        try:
            for piece in self.server.reply(fields + b"\r\n\r\n" + body):
                sock.sendall(piece)
                self.server.sent += len(piece)
        except OSError:
            self.server.cut += 1  # the client gave up on us: what a client should do
            return
        with contextlib.suppress(OSError):  # the client may have gone already
            sock.shutdown(socket.SHUT_WR)


class _Server(socketserver.ThreadingTCPServer):
    daemon_threads = True
    allow_reuse_address = True

    def __init__(self, reply: Reply) -> None:
        super().__init__(("127.0.0.1", 0), _Handler)
        self.reply = reply
        self.requests = 0
        self.sent = 0
        self.cut = 0


class HostileUpstream:
    """The server, in a thread, for a `with` block."""

    def __init__(self, reply: Reply) -> None:
        self._server = _Server(reply)
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    @property
    def port(self) -> int:
        return int(self._server.server_address[1])

    @property
    def base(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    @property
    def requests(self) -> int:
        """Requests read so far."""
        return self._server.requests

    @property
    def sent(self) -> int:
        """Bytes of replies written so far (the kernel took them; the client may not have)."""
        return self._server.sent

    @property
    def cut(self) -> int:
        """Replies the client cut off before they were all written."""
        return self._server.cut

    def __enter__(self) -> Self:
        self._thread.start()
        return self

    def __exit__(
        self, kind: type[BaseException] | None, error: BaseException | None, trace: TracebackType | None
    ) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(timeout=5)
