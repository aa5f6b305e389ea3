"""`benchwarmers serve` as a child process, for the tests that run the real
command (its banner, `--workers`, `--demo`, SIGKILL).

Ready is an event, not a time: the child is polled at `/healthz` until it
answers, and only its exit fails the wait (a loaded machine makes the start
slower, never the test red; pytest's timeout bounds it). Its output goes to
a file, never a pipe: a pipe nobody reads while the child runs can fill
and stall it, and reading one before the child ends blocks the test.
"""

from __future__ import annotations

import asyncio
import os
import re
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import httpx

RUN = "from benchwarmers.cli.main import run; run()"
# A call id as a reply shows it (`call_ids.new_call_id`'s), in its text or its headers.
CALL_ID = re.compile(r"(?<![A-Za-z0-9_-])c_[A-Za-z0-9_-]{20}(?![A-Za-z0-9_-])")
# The first line: "Benchwarmers on http://127.0.0.1:P", "Benchwarmers demo on ...", or with
# --host 0.0.0.0 "Benchwarmers on every address of this machine (0.0.0.0:P), http://127.0.0.1:P here".
BANNER_PORT = re.compile(r"^Benchwarmers\b.*?http://127\.0\.0\.1:(\d+)", re.MULTILINE)
STOP_WAIT = 60.0  # for a clean exit after SIGTERM: several times what a loaded machine takes


def free_port() -> int:
    """A loopback port nothing listens on (bound, then released): for a
    server that must not answer."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@dataclass
class Served:
    port: int
    process: subprocess.Popen[bytes]
    log: Path

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def output(self) -> str:
        """What the child printed so far (stdout and stderr, in order)."""
        return self.log.read_text(errors="replace")


def start(args: list[str], log: Path, env: Mapping[str, str] | None = None, port: int = 0) -> Served:
    """`benchwarmers serve ARGS --port P` started, not yet waited for. On
    port 0 (the default) the child binds a free port itself: a port probed
    free here could be taken by a parallel test before the child binds it."""
    with log.open("wb") as sink:
        process = subprocess.Popen(
            [sys.executable, "-c", RUN, "serve", *args, "--port", str(port)],
            env=dict(os.environ if env is None else env),
            stdout=sink,
            stderr=subprocess.STDOUT,
        )
    return Served(port, process, log)


def until_serving(child: Served) -> None:
    """Once `/healthz` answers 200; an AssertionError with the child's output
    if it exits first. A child started on port 0 binds one itself: its port
    is then read from its banner (BANNER_PORT)."""
    with httpx.Client(timeout=5) as client:  # one client: each new one loads the CA bundle again
        while True:
            if not child.port and (banner := BANNER_PORT.search(child.output())):
                child.port = int(banner.group(1))
            try:
                if child.port and client.get(f"{child.url}/healthz").status_code == 200:
                    return
            except httpx.TransportError:
                pass
            code = child.process.poll()
            assert code is None, f"the server exited ({code}) before it answered:\n{child.output()}"
            time.sleep(0.05)


def stop(child: Served, how: signal.Signals = signal.SIGTERM) -> None:
    if child.process.poll() is None:
        child.process.send_signal(how)
    child.process.wait(STOP_WAIT)


@contextmanager
def served(
    *args: str, log: Path, env: Mapping[str, str] | None = None, how: signal.Signals = signal.SIGTERM
) -> Iterator[Served]:
    """The child, answering, for the block; stopped with `how` after it
    (its whole output is then `child.output()`)."""
    child = start(list(args), log, env)
    try:
        until_serving(child)
        yield child
    finally:
        stop(child, how)


async def boards_agree_after_pairs(url: str, collection: str) -> None:
    """Asks `collection` (two members) three times through one worker, reads
    its leaderboard there (so that worker has its reads cached), gives a pair
    through the other worker, and finds both workers' boards the same at once:
    scores, intervals and pairs."""
    first, second = await _one_client_per_worker(url)
    board = {"collection": f"bench/{collection}"}
    body = {"model": f"bench/{collection}", "messages": [{"role": "user", "content": "which?"}]}
    try:
        for better, worse in ((0, 1), (1, 0), (0, 1)):
            reply = await first.post(f"{url}/v1/chat/completions", json=body)
            calls = [seat["call"] for seat in reply.json()["bench"]["seats"]]
            assert (await first.get(f"{url}/bench/leaderboard", params=board)).status_code == 200
            pair = {"better": calls[better], "worse": calls[worse]}
            judged = await second.post(f"{url}/bench/verdict", json=pair)
            assert judged.status_code == 200, judged.text
            here, there = [
                {
                    m["alias"]: (m["score"], m["low"], m["high"], m["pairs"])
                    for m in (await c.get(f"{url}/bench/leaderboard", params=board)).json()["models"]
                }
                for c in (first, second)
            ]
            assert here == there
    finally:
        await asyncio.gather(first.aclose(), second.aclose())


async def _one_client_per_worker(url: str) -> tuple[httpx.AsyncClient, httpx.AsyncClient]:
    """Two clients on one keep-alive connection each, to two different workers."""
    by_pid: dict[int, httpx.AsyncClient] = {}
    for _ in range(64):
        client = httpx.AsyncClient(timeout=30, limits=httpx.Limits(max_connections=1))
        pid = (await client.get(f"{url}/healthz")).json()["pid"]
        if pid in by_pid:
            await client.aclose()
            continue
        by_pid[pid] = client
        if len(by_pid) == 2:
            first, second = by_pid.values()
            return first, second
    await asyncio.gather(*(client.aclose() for client in by_pid.values()))
    raise AssertionError(f"64 connections all reached one worker: {list(by_pid)}")
