"""The HTTP protocol the server runs: uvicorn's httptools protocol with a
deadline and a size limit on each request's head.

uvicorn bounds only the idle time between requests (`timeout_keep_alive`),
and only once a response is done: a client that opens a connection and
sends its head a byte at a time (slowloris) holds the connection, its file
descriptor and its memory for as long as it likes; thousands of them and
normal asks fail. An ASGI middleware cannot help, since the app is called
only once the head is complete. So here:

- a request's head (request line and headers) must arrive within
  `HEAD_SECONDS` of the connection opening or of the previous response
  ending, else the server answers 408 and closes;
- a head larger than `MAX_HEAD_BYTES` is answered 431 and closed;
- an absolute-form target (`GET http://host/path`, what a client sends a
  proxy) is answered 400: this is no proxy, and such a target would carry
  a second authority beside the Host header the guard checks.

And on the way out, a client that stops reading what we send it:

- uvicorn already stops writing a reply while the connection's buffer is
  over its high-water mark (`pause_writing`: the app's `send` waits), so a
  stream's backlog is at most one piece over that mark, and a route-mode
  stream stops reading its upstream meanwhile. But a client that keeps its
  socket open and reads nothing would hold that backlog, the stream's
  generator and whatever it still holds (a panel's whole reply) for as
  long as it liked. And what the kernel takes off a stream counts too: a
  stream's seat keeps the text it has sent (the log, the reply), and a
  send buffer left to grow (to `tcp_wmem`'s 4 MB) took a whole 4 MB answer
  from a client that read none of it; so each connection's is fixed at
  `SEND_BUFFER`. When writing pauses a timer starts, and a client
  that has taken no byte of its backlog in `stream_stall_seconds` (a
  setting, default 30; the guard puts its value in the scope under
  `STALL_KEY`) is cut: the connection is reset (`SO_LINGER` 0, so the
  kernel drops its copy too rather than queue a FIN behind it) and
  aborted, which drops our buffer at once, and the app sees the client gone (a panel
  stops, as when a client hangs up: its seats still answering cancelled and logged
  `cancelled`). uvicorn's `send` then returns at once, writing nothing,
  so a stream would pull its upstream to the end before the disconnect
  reached it (a cut route-mode turn read its whole 4
  MB reply): the scope's `GONE_KEY` says the client is gone, and the
  stream stops at its next piece (`streaming.FormatStream`). A slow reader that takes
  something within each period is left alone. The timer exists only while
  writing is paused: the hot path never arms one.

The body has its own deadlines in the guard (`guard.BODY_IDLE_SECONDS`,
`guard.BODY_SECONDS`), which reads it whole before any route runs.

The head's deadline is one timer per connection that is not set again for
every request: a request only notes when its successor's head is due
(`_head_due`), and the timer, when it fires, either refuses a head still
missing past that time or waits on until the time now due. Arming and
cancelling a timer for each request of a kept-alive connection cost a
passthrough ~2% of its CPU.

`cli/serve.py` and `testing/live_server.py` pass this class as uvicorn's
`http` protocol.
"""

from __future__ import annotations

import asyncio
import contextlib
import fcntl
import logging
import socket
import struct
import termios
from collections.abc import MutableMapping
from typing import Any, cast

from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol

from benchwarmers.config import tunables
from benchwarmers.store.settings import STREAM_STALL_SECONDS
from benchwarmers.trim import give_back_soon

HEAD_SECONDS = tunables.HEAD_SECONDS.value
SEND_BUFFER = tunables.SEND_BUFFER.value
MAX_HEAD_BYTES = 64 * 1024
# Where the guard puts the `stream_stall_seconds` setting in a request's scope.
STALL_KEY = "benchwarmers.stall_seconds"
# Set in a request's scope once its client is gone (hung up or cut) before its response was done.
GONE_KEY = "benchwarmers.client_gone"
# A future in a request's scope (`client_left`), done once its client is gone as above.
LEFT_KEY = "benchwarmers.client_left"
STALL_SECONDS = float(STREAM_STALL_SECONDS.default)

# SO_LINGER on, for 0 s: closing the socket resets the connection.
_RESET = struct.pack("ii", 1, 0)
# The buffer `ioctl(TIOCOUTQ)` (SIOCOUTQ on a socket) fills: bytes still in the kernel's send queue.
_INT = struct.pack("i", 0)

log = logging.getLogger(__name__)

_REPLIES = {
    408: b"the request's head did not arrive in time",
    431: b"the request's head is larger than 64 KB",
}


def client_left(scope: MutableMapping[str, Any]) -> asyncio.Future[None]:
    """A future done once this request's client hangs up (or is cut) before
    its response is done: a route awaiting a whole reply hands it to the
    core (`Panels.answer(left=)`), which stops the panel then, as a stream's
    close stops it. Never done under another server than this protocol (an
    in-process ASGI client): the panel then finishes, as it did before."""
    left: asyncio.Future[None] = asyncio.get_running_loop().create_future()
    if GONE_KEY in scope:
        left.set_result(None)
    scope[LEFT_KEY] = left
    return left


class _Refusal(Exception):
    """Raised from a parser callback: the parser stops and says 400 (see `send_400_response`)."""


class GuardedHttpToolsProtocol(HttpToolsProtocol):
    _head_timer: asyncio.TimerHandle | None = None
    # When the head now awaited is due (the loop's clock); None while none is awaited.
    _head_due: float | None = None
    _head_bytes = 0
    _absolute = False
    _stall_timer: asyncio.TimerHandle | None = None
    _stall_backlog = 0  # bytes waiting for the client when the stall timer was last armed

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        sock = transport.get_extra_info("socket")
        if sock is not None:  # what a client that reads nothing can take off a stream (see above)
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, SEND_BUFFER)
        self._arm_head()

    def connection_lost(self, exc: Exception | None) -> None:
        if self.cycle is not None and not self.cycle.response_complete:
            scope = cast("dict[str, object]", self.cycle.scope)  # uvicorn's TypedDict: an ASGI scope
            scope[GONE_KEY] = True  # a stream stops at once (`streaming.FormatStream`)
            left = scope.get(LEFT_KEY)
            if isinstance(left, asyncio.Future) and not left.done():
                left.set_result(None)  # a whole reply's panel stops (`client_left`)
        self._disarm_head()
        if self._head_timer is not None:
            self._head_timer.cancel()
            self._head_timer = None
        self._disarm_stall()
        super().connection_lost(exc)

    def pause_writing(self) -> None:
        super().pause_writing()
        if self._stall_timer is None:
            self._arm_stall()

    def resume_writing(self) -> None:
        super().resume_writing()
        self._disarm_stall()

    def send_400_response(self, msg: str) -> None:
        # The parser's error path: ours (a head too large, raised from a
        # callback) or the parser's own (uvicorn's 400).
        if self._head_bytes > MAX_HEAD_BYTES:
            self._refuse(431)
        elif self._absolute:
            self._absolute = False
            super().send_400_response("absolute-form request targets are refused: this server is not a proxy")
        else:
            super().send_400_response(msg)

    def on_url(self, url: bytes) -> None:
        self._count(len(url))
        super().on_url(url)
        # Origin-form targets begin with "/" (and may hold "://" further on: `/v1/://` is a path).
        if self.url[:1] != b"/" and b"://" in self.url:
            self._absolute = True
            raise _Refusal

    def on_header(self, name: bytes, value: bytes) -> None:
        # `_count` inline, and the parent's by name, not through `super()`: once a header of every request.
        self._head_bytes += len(name) + len(value) + 4
        if self._head_bytes > MAX_HEAD_BYTES:
            raise _Refusal
        HttpToolsProtocol.on_header(self, name, value)

    def on_headers_complete(self) -> None:
        self._disarm_head()
        super().on_headers_complete()

    def on_response_complete(self) -> None:
        pipelined = bool(self.pipeline)  # its head is in already
        super().on_response_complete()
        if not pipelined and not self.transport.is_closing():
            self._arm_head()  # the next request's head is due in time too

    # ------------------------------------------------------------ internals

    def _count(self, size: int) -> None:
        self._head_bytes += size
        if self._head_bytes > MAX_HEAD_BYTES:
            raise _Refusal

    def _arm_head(self) -> None:
        self._head_bytes = 0
        self._head_due = self.loop.time() + HEAD_SECONDS
        if self._head_timer is None:
            self._head_timer = self.loop.call_at(self._head_due, self._head_check)

    def _disarm_head(self) -> None:
        self._head_due = None  # the timer, if any, finds nothing due and ends

    def _head_check(self) -> None:
        self._head_timer = None
        due = self._head_due
        if due is None:
            return  # no head awaited: the next `_arm_head` sets a timer again
        if self.loop.time() >= due:
            self._refuse(408)
        else:  # the head awaited now is a later request's
            self._head_timer = self.loop.call_at(due, self._head_check)

    def _arm_stall(self) -> None:
        self._stall_backlog = self._unread()
        self._stall_timer = self.loop.call_later(self._stall_seconds(), self._stall_check)

    def _unread(self) -> int:
        """What the client has not taken yet: our buffer and the kernel's send
        queue. The kernel's counts because a loop that wakes late (a loaded
        machine) runs this check before the write callback that would have
        moved our buffer on: the client read, but only the kernel knows yet."""
        unread = self.transport.get_write_buffer_size()
        sock = self.transport.get_extra_info("socket")
        if sock is not None:
            with contextlib.suppress(OSError):  # not a socket the kernel counts (another OS's)
                unread += struct.unpack("i", fcntl.ioctl(sock.fileno(), termios.TIOCOUTQ, _INT))[0]
        return unread

    def _disarm_stall(self) -> None:
        if self._stall_timer is not None:
            self._stall_timer.cancel()
            self._stall_timer = None

    def _stall_check(self) -> None:
        self._stall_timer = None
        if self._unread() < self._stall_backlog:
            self._arm_stall()  # it took something: slow, not stalled
            return
        log.info("cut a client that read nothing of its reply for %s s", self._stall_seconds())
        sock = self.transport.get_extra_info("socket")
        if sock is not None:  # a reset, not a FIN queued behind what it never read
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, _RESET)
        self.transport.abort()  # its buffer goes now; the app sees the client gone
        give_back_soon(self.loop)  # and the heap it leaves, once the stream has unwound

    def _stall_seconds(self) -> float:
        """The setting as the guard read it for this connection's request."""
        seconds = None if self.cycle is None else self.cycle.scope.get(STALL_KEY)
        return seconds if isinstance(seconds, int | float) else STALL_SECONDS

    def _refuse(self, status: int) -> None:
        """Answer a plain-text refusal and close (no route ever saw it)."""
        self._disarm_head()
        if self.transport.is_closing():
            return
        if self.cycle is not None and not self.cycle.response_complete:
            self.transport.close()  # a response is under way: just close
            return
        reason = {408: b"Request Timeout", 431: b"Request Header Fields Too Large"}[status]
        body = _REPLIES[status]
        self.transport.write(
            b"HTTP/1.1 %d %s\r\ncontent-type: text/plain; charset=utf-8\r\ncontent-length: %d\r\n"
            b"connection: close\r\n\r\n%s" % (status, reason, len(body), body)
        )
        self.transport.close()
