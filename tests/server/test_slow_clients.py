"""Slow and oversized requests (slowloris), on raw sockets: a head that
trickles or never ends gets 408 and the connection closed, a body that
stalls gets 408, a head over 64 KB gets 431, and while hundreds of such
connections hang the server still answers everyone else."""

from __future__ import annotations

import socket
import time
from collections.abc import Callable, Iterator

import httpx
import pytest

from benchwarmers.server import guard, protocol
from benchwarmers.testing.live_server import LiveServer

from .conftest import read_reply

SHORT = 0.5
# What a reply must begin with; many times SHORT is the wait for it (never a timing assertion).
PATIENCE = 30.0


@pytest.fixture(autouse=True)
def _short_deadlines(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(protocol, "HEAD_SECONDS", SHORT)
    monkeypatch.setattr(guard, "BODY_IDLE_SECONDS", SHORT)


def _connect(server: LiveServer) -> socket.socket:
    sock = socket.create_connection(("127.0.0.1", server.port), timeout=PATIENCE)
    return sock


def _read_to_close(sock: socket.socket) -> bytes:
    """Everything the server sends until it closes the connection."""
    got = b""
    while True:
        try:
            data = sock.recv(65536)
        except (ConnectionResetError, TimeoutError):
            break
        if not data:
            break
        got += data
    return got


def test_a_head_sent_a_byte_at_a_time_is_cut_off_with_408(server: LiveServer) -> None:
    with _connect(server) as sock:
        sock.sendall(b"POST /v1/chat/completions HTTP/1.1\r\nHost: 127.0.0.1\r\n")
        closed = False
        for byte in b"X-Slow: " + b"a" * 200:
            try:
                sock.sendall(bytes([byte]))
            except (BrokenPipeError, ConnectionResetError):
                closed = True
                break
            time.sleep(SHORT / 5)
        reply = _read_to_close(sock)
    assert reply.startswith(b"HTTP/1.1 408"), reply[:80]
    assert closed or reply  # the server ended it, not the test


def test_a_connection_that_sends_nothing_is_closed(server: LiveServer) -> None:
    with _connect(server) as sock:
        assert _read_to_close(sock).startswith(b"HTTP/1.1 408")


def test_a_body_that_stalls_gets_408(server: LiveServer) -> None:
    with _connect(server) as sock:
        sock.sendall(
            b"POST /v1/chat/completions HTTP/1.1\r\nHost: 127.0.0.1\r\ncontent-type: application/json\r\n"
            b'content-length: 100\r\n\r\n{"model":'
        )
        reply = _read_to_close(sock)
    assert reply.startswith(b"HTTP/1.1 408"), reply[:80]
    assert b"did not arrive in time" in reply


def test_a_head_over_64_kb_gets_431(server: LiveServer) -> None:
    with _connect(server) as sock:
        sock.sendall(b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Big: " + b"a" * 70_000 + b"\r\n\r\n")
        reply = _read_to_close(sock)
    assert reply.startswith(b"HTTP/1.1 431"), reply[:80]


def test_a_keep_alive_connection_answers_then_must_send_its_next_head_in_time(server: LiveServer) -> None:
    with _connect(server) as sock:
        sock.sendall(b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
        assert read_reply(sock).startswith(b"HTTP/1.1 200")
        sock.sendall(b"GET /healthz HTTP/1.1\r\n")  # and no more
        rest = _read_to_close(sock)
    assert rest == b"" or rest.startswith(b"HTTP/1.1 408")


def test_a_connection_whose_heads_keep_coming_in_time_is_never_cut_off(server: LiveServer) -> None:
    # Each head is due HEAD_SECONDS after the reply before it, not after the
    # connection opened: the deadline's one timer, set at the opening, fires
    # meanwhile and must find the head now awaited not yet due.
    with _connect(server) as sock:
        for _ in range(8):  # 8 x 0.4 x SHORT: well past the first head's deadline
            sock.sendall(b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
            assert read_reply(sock).startswith(b"HTTP/1.1 200")
            time.sleep(SHORT * 0.4)
        sock.sendall(b"GET /healthz HTTP/1.1\r\n")  # and no more: that one is cut off
        rest = _read_to_close(sock)
    assert rest == b"" or rest.startswith(b"HTTP/1.1 408")


def _slow_connections(server: LiveServer, count: int) -> Iterator[socket.socket]:
    for _ in range(count):
        sock = _connect(server)
        sock.sendall(b"POST /v1/chat/completions HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: a")
        yield sock


def test_hundreds_of_slow_clients_do_not_stop_the_others(
    server: LiveServer, counts: Callable[[str], None]
) -> None:
    hanging = list(_slow_connections(server, 300))
    try:
        with httpx.Client(timeout=PATIENCE) as client:
            assert client.get(f"{server.url}/healthz").status_code == 200
        closed = sum(_read_to_close(sock).startswith(b"HTTP/1.1 408") for sock in hanging)
    finally:
        for sock in hanging:
            sock.close()
    counts(f"slow clients: {len(hanging)} opened, {closed} cut off with 408")
    assert closed == len(hanging)
