"""Clients that ask for a stream and never read it (issue 36, attack 3):
the server cuts each once it has taken nothing for `stream_stall_seconds`,
without that client reading a byte (on 3fd40b0 they held their reply for
as long as they kept the socket open), the panel's seat is still logged
(cancelled, as a client's hang-up stops its panel), and a reader that keeps reading is never cut, in every
format, panel and route mode alike. Raw sockets
with a small receive buffer, so the server's writing pauses early."""

from __future__ import annotations

import asyncio
import json
import select
import socket
import time
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from benchwarmers.runtime import Runtime
from benchwarmers.server.protocol import GONE_KEY
from benchwarmers.server.streaming import stream_response
from benchwarmers.store.collections import add_collection
from benchwarmers.store.endpoints import add_endpoint
from benchwarmers.store.models import add_model
from benchwarmers.store.settings import STREAM_STALL_SECONDS, Settings
from benchwarmers.testing.hostile import HostileUpstream, openai_text
from benchwarmers.testing.live_server import LiveServer, live_server

from .routes.hardening_support import FORMATS, format_request, rows

pytestmark = pytest.mark.integration

STALL = 1
REPLY = "x" * (4 * 2**20)  # a seat of 4 MB: its stream event is larger than any socket buffer
# How long a cut may take to show: many times STALL (never a timing assertion).
PATIENCE = 60.0


async def register_big(home: Path, base: str, *, seat_timeout: int, stall: int) -> None:
    """One model `big` on `base`, alone in collection `big`, and the stall
    setting: the bench every stalled-reader test asks."""
    async with Runtime.open(home) as runtime:
        store = runtime.store
        await add_endpoint(store, "big", base, "openai", needs_key=False)
        await add_model(store, "big", "big", "big")
        await add_collection(store, "big", ["big"], seat_timeout=seat_timeout)
        await Settings(store).set(STREAM_STALL_SECONDS, stall)


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveServer]:
    home = tmp_path_factory.mktemp("home")
    with HostileUpstream(lambda request: openai_text(request, REPLY)) as upstream:
        asyncio.run(register_big(home, upstream.base, seat_timeout=60, stall=STALL))
        with live_server(home) as live:
            yield live


def _ask(server: LiveServer, model: str, buffer: int = 4096, fmt: str = "chat") -> socket.socket:
    """A client asking for a stream in format `fmt`, with a receive buffer of `buffer` bytes."""
    sock = socket.socket()
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, buffer)
    sock.connect(("127.0.0.1", server.port))
    path, ask = format_request(fmt, model, stream=True)
    body = json.dumps(ask)
    sock.sendall(
        f"POST {path} HTTP/1.1\r\nhost: 127.0.0.1\r\ncontent-type: application/json\r\n"
        f"content-length: {len(body)}\r\n\r\n{body}".encode()
    )
    return sock


def _cut_without_reading(sock: socket.socket) -> bool:
    """Whether the server ends the connection (a reset or a hang-up) while
    this client reads nothing: polled, never read."""
    poller = select.poll()
    poller.register(sock, select.POLLERR | select.POLLHUP | select.POLLRDHUP)
    deadline = time.monotonic() + PATIENCE
    while time.monotonic() < deadline:
        for _fd, events in poller.poll(200):
            if events & (select.POLLERR | select.POLLHUP | select.POLLRDHUP):
                return True
    return False


@pytest.mark.parametrize("fmt", FORMATS)
@pytest.mark.parametrize("model", ["bench/big", "bench/big:route"], ids=["panel", "route"])
def test_a_client_that_reads_nothing_is_cut_and_its_seat_still_logged(
    server: LiveServer, model: str, fmt: str
) -> None:
    """A panel's seat is logged once its client is cut: `cancelled`, as a
    client that hangs up stops its panel (or answered, when it was in
    before the cut); a route-mode turn is its client's own call, logged
    however it ended (its upstream is read only as fast as the client
    reads: cut, it left)."""
    counted = (
        "SELECT id FROM calls WHERE alias = 'big' AND status IN ('ok', 'cancelled')"
        if model == "bench/big"
        else "SELECT id FROM calls WHERE alias = 'big'"
    )
    before = len(rows(server.home, counted))
    clients = [_ask(server, model, fmt=fmt) for _ in range(3)]
    try:
        assert all(_cut_without_reading(sock) for sock in clients), "a stalled reader was never cut"
    finally:
        for sock in clients:
            sock.close()
    deadline = time.monotonic() + PATIENCE
    logged = before
    while logged < before + 3 and time.monotonic() < deadline:
        logged = len(rows(server.home, counted))
        time.sleep(0.2)
    assert logged == before + 3, "a cut client's call was not logged (a panel's: cancelled or answered)"
    assert httpx.get(server.url + "/healthz", timeout=PATIENCE).status_code == 200


def test_a_slow_reader_that_keeps_reading_is_not_cut(server: LiveServer) -> None:
    sock = _ask(server, "bench/big", buffer=256 * 1024)
    got = 0
    try:
        sock.settimeout(PATIENCE)
        while True:
            piece = sock.recv(256 * 1024)
            if not piece:
                break
            got += len(piece)
            if piece.endswith(b"0\r\n\r\n"):  # the chunked stream's last chunk: all of it came
                break
            time.sleep(STALL / 10)  # slow, never idle for the whole stall
    finally:
        sock.close()
    assert got > len(REPLY)


async def test_a_stream_whose_client_is_gone_reads_no_more_of_its_body() -> None:
    """The server's `send` writes nothing to a connection that is gone and
    returns at once: a stream that went on would read its upstream to the end
    for nobody (a cut route-mode turn read its whole 4 MB before the
    disconnect reached it). The protocol marks the scope; the stream stops."""
    pulled: list[int] = []
    closed: list[bool] = []

    async def body() -> AsyncIterator[bytes]:
        try:
            for n in range(100):
                pulled.append(n)
                yield b"data: {}\n\n"
        finally:
            closed.append(True)

    scope: dict[str, Any] = {
        "type": "http",
        "path": "/v1/chat/completions",
        "headers": [],
        "asgi": {"spec_version": "2.4"},
    }

    async def send(message: dict[str, Any]) -> None:
        if message["type"] == "http.response.body":
            scope[GONE_KEY] = True  # the connection was lost meanwhile (`protocol.connection_lost`)

    async def receive() -> dict[str, Any]:
        await asyncio.Event().wait()
        raise AssertionError("unreachable")

    await stream_response(body(), "text/event-stream")(scope, receive, send)
    assert pulled == [0] and closed == [True]


async def test_a_reader_the_loop_has_not_caught_up_with_is_not_cut() -> None:
    """On a loaded machine the stall timer can run before the write callback
    that would move the server's buffer on: the client read, but only the
    kernel's send queue shows it yet. The check counts that queue, so such a
    reader is left alone (on a loaded CI box one was cut mid-stream)."""
    listener = socket.create_server(("127.0.0.1", 0))
    client = socket.create_connection(listener.getsockname())
    client.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    client.settimeout(PATIENCE)
    served, _ = listener.accept()
    served.setblocking(False)
    try:
        while True:  # fill the kernel's queue; the transport's buffer stays as it was
            served.send(b"x" * 65536)
    except BlockingIOError:
        pass

    class Transport:
        aborted = False

        def get_write_buffer_size(self) -> int:
            return 1_000_000  # what the app wrote past the kernel: unchanged, the loop never ran

        def get_extra_info(self, name: str) -> object:
            return served if name == "socket" else None

        def abort(self) -> None:
            self.aborted = True

    from benchwarmers.server.protocol import GuardedHttpToolsProtocol

    checker = GuardedHttpToolsProtocol.__new__(GuardedHttpToolsProtocol)
    checker.transport = Transport()  # type: ignore[assignment]
    checker.loop = asyncio.get_running_loop()
    checker.cycle = None
    try:
        checker._arm_stall()
        checker._disarm_stall()
        deadline = time.monotonic() + PATIENCE
        while checker._unread() >= checker._stall_backlog and time.monotonic() < deadline:
            client.recv(65536)  # the client reads; the kernel's queue drains into it
        checker._stall_check()
        assert not checker.transport.aborted, "a client that read was cut as stalled"  # type: ignore[attr-defined]
        checker._disarm_stall()
    finally:
        for sock in (client, served, listener):
            sock.close()
