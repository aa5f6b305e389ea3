"""Fixtures for the server tests: a real server on a free loopback port
(`testing.live_server`) with probe routes (`probes.py`) mounted beside the
app's own, so the guard and the error handlers are exercised the way gateway
routes will meet them, in every API format's path space. The server and the
routes are imported where one starts: `-m unit` loads this file too, and its
test here (test_heap.py) starts none.

- `server`: a started `LiveServer` on the test's data folder.
- `start(**kwargs)`: start one with options (`acting_as="0.0.0.0"`).
- `setting(home, setting, value)`, `new_key(home, name, ...)`: write to the
  store before (or while) a server runs.
- `shared_redis`: servers started after it count in the Redis on
  127.0.0.1:6379 (skipped when there is none); it gives a key name of the
  test's own and removes that key's counters afterwards.
"""

from __future__ import annotations

import asyncio
import socket
import uuid
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import httpx
import pytest

from benchwarmers.identity.keys import create_key
from benchwarmers.runtime import REDIS_URL_ENV, Runtime
from benchwarmers.store.settings import Setting, Settings

if TYPE_CHECKING:
    from benchwarmers.testing.live_server import LiveServer

REDIS_URL = "redis://127.0.0.1:6379/0"


def run(coro: Any) -> Any:
    return asyncio.run(coro)


def setting(home: Path, which: Setting[Any], value: Any) -> None:
    async def work() -> None:
        async with Runtime.open(home) as rt:
            await Settings(rt.store).set(which, value)

    run(work())


def new_key(home: Path, name: str, collections: tuple[str, ...] = (), rate: int | None = None) -> str:
    async def work() -> str:
        async with Runtime.open(home) as rt:
            _, secret = await create_key(rt.store, name, collections=collections, requests_per_minute=rate)
            return secret

    return run(work())


@pytest.fixture
def start(home: Path) -> Iterator[Callable[..., LiveServer]]:
    """Start servers on this test's data folder (stopped at the end)."""
    from benchwarmers.testing.live_server import LiveServer

    from .probes import OWN_ROUTERS, probe

    started: list[LiveServer] = []

    def starter(**options: Any) -> LiveServer:
        server = LiveServer(home, routers=OWN_ROUTERS, extra_routers=[probe], **options).start()
        started.append(server)
        return server

    yield starter
    for server in started:
        server.stop()


@pytest.fixture
def shared_redis(monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    from redis import Redis

    redis = Redis.from_url(REDIS_URL, socket_connect_timeout=0.5)
    try:
        redis.ping()
    except Exception as exc:  # whatever the reason, there is no Redis to test against
        redis.close()
        pytest.skip(f"no Redis on 127.0.0.1:6379 ({type(exc).__name__}: {exc})")
    monkeypatch.setenv(REDIS_URL_ENV, REDIS_URL)
    name = f"shared-{uuid.uuid4().hex[:12]}"  # Redis outlives the test: a key name of its own
    try:
        yield name
    finally:
        leftovers = list(redis.scan_iter(match=f"*gateway-key|{name}|*"))
        if leftovers:
            redis.delete(*leftovers)
        redis.close()


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveServer]:
    """One server per test module, for tests that change nothing in it."""
    from benchwarmers.testing.live_server import LiveServer

    from .probes import OWN_ROUTERS, probe

    server = LiveServer(tmp_path_factory.mktemp("home"), routers=OWN_ROUTERS, extra_routers=[probe]).start()
    yield server
    server.stop()


@pytest.fixture(scope="module")
def client() -> Iterator[httpx.Client]:
    """One client (making one costs more than a request does)."""
    with httpx.Client(timeout=60) as client:
        yield client


def read_reply(sock: socket.socket) -> bytes:
    """One whole reply off a connection: up to its Content-Length (its head
    and body may come in separate reads on a busy machine), else to the
    connection's close."""
    reply = b""
    while True:
        data = sock.recv(65536)
        if not data:
            return reply
        reply += data
        if b"\r\n\r\n" in reply:
            top, _, body = reply.partition(b"\r\n\r\n")
            headers = _headers(top)
            if "content-length" in headers and len(body) >= int(headers["content-length"]):
                return reply


def raw_http(port: int, head: str, chunks: Sequence[bytes] = ()) -> tuple[int, dict[str, str], bytes]:
    """Send a hand-written request (for what httpx will not send: a lying
    Content-Length, a chunked body of our choosing) and read the reply."""
    with socket.create_connection(("127.0.0.1", port), timeout=60) as sock:
        sock.sendall(head.replace("\n", "\r\n").encode() + b"\r\n")
        for chunk in chunks:
            sock.sendall(chunk)
        reply = read_reply(sock)
    top, _, body = reply.partition(b"\r\n\r\n")
    status = int(top.split(b" ", 2)[1])
    return status, _headers(top), body


def _headers(top: bytes) -> dict[str, str]:
    lines = top.decode("latin-1").split("\r\n")[1:]
    return {k.strip().lower(): v.strip() for k, _, v in (line.partition(":") for line in lines)}
