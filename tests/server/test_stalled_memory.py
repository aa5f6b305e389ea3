"""What stalled readers cost the server's memory (issue 36, attack 3): 20
clients each ask a streamed panel of a 4 MB answer and read nothing. The
server (`benchwarmers serve`, a child process) holds each stream's
buffers (ours, the outbound connection's, the kernel's fixed send buffer,
and the text its seat has sent), not its reply, while they stall: on
2aa897e these 20 held +147 MB above the warm server, +53 MB at b2b65ee,
here +21 MB (the outbound body handed on 64 KB at a time, its high-water
mark 64 KB, the send buffer 128 KB). Memory with a wide margin (under what
the replies weigh in all), sampled until the server has cut every client;
`benchmarks/hostile.py` has the figures for 100.

And once the server has cut them, a route-mode stream's memory is given
back: its turns, read to the end for nobody after their cut, left their
text in cycles (the response task cancelled by the client's going keeps
its traceback) that only a full collection frees, so 20 cut turns held
+173 MB above the warm server for good (b2b65ee); now a stream stops at
its client's going and the give-back (`benchwarmers.trim`) collects the
cycles before it trims the heap."""

from __future__ import annotations

import asyncio
import select
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from benchwarmers.testing.hostile import HostileUpstream, openai_text
from tests.server.child_server import Child

from .routes.hardening_support import ask_body
from .test_stalled_readers import _ask, register_big

pytestmark = pytest.mark.integration

CLIENTS = 20
REPLY_MB = 4
STALL = 5
# Under the replies' weight in all: a stalled stream holds less than its reply.
BOUND_MB = CLIENTS * REPLY_MB
PATIENCE = 120.0


def _rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    raise AssertionError("no VmRSS")


@pytest.fixture
def server(tmp_path: Path) -> Iterator[Child]:
    home = tmp_path / "home"
    home.mkdir()
    text = "x" * (REPLY_MB * 2**20)
    with HostileUpstream(lambda request: openai_text(request, text)) as upstream:
        asyncio.run(register_big(home, upstream.base, seat_timeout=120, stall=STALL))
        child = Child(home)
        child.start()
        try:
            yield child
        finally:
            child.stop()


def _warm(server: Child, model: str) -> tuple[int, float]:
    """The server's pid and its memory once warm (the first ask loads what
    every later one uses), as `benchmarks/hostile.py` measures."""
    assert server.served is not None
    warm = httpx.post(
        f"{server.url}/v1/chat/completions", json=ask_body(model, stream=True), timeout=PATIENCE
    )
    assert warm.status_code == 200
    pid = server.served.process.pid
    return pid, _rss_mb(pid)


def _stall_until_cut(server: Child, model: str, pid: int) -> float:
    """`CLIENTS` stalled readers of `model`, kept until the server has cut
    each; the server's peak memory while all of them stalled."""
    clients = [_ask(server, model, buffer=64 * 1024) for _ in range(CLIENTS)]  # type: ignore[arg-type]
    poller = select.poll()
    for sock in clients:
        poller.register(sock, select.POLLERR | select.POLLHUP | select.POLLRDHUP)
    cut: set[int] = set()
    peak = 0.0
    deadline = time.monotonic() + PATIENCE
    try:
        while len(cut) < CLIENTS and time.monotonic() < deadline:
            if not cut:  # while every client stalls, none cut yet
                peak = max(peak, _rss_mb(pid))
            cut.update(fd for fd, _events in poller.poll(100))
    finally:
        for sock in clients:
            sock.close()
    assert len(cut) == CLIENTS, "a stalled reader was never cut"
    return peak


def test_stalled_readers_hold_their_buffers_not_their_replies(server: Child) -> None:
    pid, idle = _warm(server, "big")
    peak = _stall_until_cut(server, "bench/big", pid)
    print(
        f"stalled readers: {CLIENTS} x {REPLY_MB} MB, idle {idle:.0f} MB, "
        f"peak while stalled +{peak - idle:.0f} MB"
    )
    assert peak - idle < BOUND_MB, f"{CLIENTS} stalled streams held +{peak - idle:.0f} MB"


def test_cut_route_mode_streams_give_their_memory_back(server: Child) -> None:
    pid, idle = _warm(server, "big:route")
    _stall_until_cut(server, "bench/big:route", pid)
    # Given back a moment after the cut (`trim.GIVE_BACK_DELAY`): sampled until it is, or PATIENCE.
    bound = BOUND_MB / 2
    above = _rss_mb(pid) - idle
    deadline = time.monotonic() + PATIENCE
    while above >= bound and time.monotonic() < deadline:
        time.sleep(0.5)
        above = _rss_mb(pid) - idle
    print(f"cut route-mode streams: {CLIENTS} x {REPLY_MB} MB, idle {idle:.0f} MB, once cut {above:+.0f} MB")
    assert above < bound, f"{CLIENTS} cut route-mode streams still held {above:+.0f} MB"
