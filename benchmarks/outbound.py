"""The outbound client side by side: ours (`providers/outbound.py`: our own
HTTP/1.1 connections, `providers/wire.py`, behind our gates), bare aiohttp
(what ours was before), and the httpx pool we used before that, on the same
loopback upstreams.

Two measurements, printed as one table:

- **throughput**: `--calls` chat completions at `--concurrency` against the
  instant upstream (`upstream.py`), calls per second, p50/p99 and the
  process's CPU per call (the upstream runs in this process too: the same
  share for every client);
- **wedge**: `--rounds` floods of `--flood` calls on a pool of `--pool`
  connections, two in three to an upstream that never answers (timeouts of
  0.1-0.25 s), one in four cancelled from outside as a panel gives up on a
  seat; then `--pool`×3 calls to the instant upstream: how many answered.
  A pool that leaks slots (httpcore #1093) answers none.

    .venv/bin/python benchmarks/outbound.py [--calls 3000 --concurrency 200]

httpx behind the same gates (send in a task of its own, never cancelled)
did not wedge either but was slower still than the bare httpx pool: 17
calls/s at 200 concurrent (p99 28 s), 555 at 20 (p50 28 ms).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import sys
import time
from collections.abc import Awaitable, Callable
from contextlib import AbstractAsyncContextManager, asynccontextmanager, suppress
from pathlib import Path
from typing import Any

import aiohttp
import httpx

sys.path.insert(0, str(Path(__file__).parent))
from upstream import InstantUpstream

from benchwarmers.providers.deadline import Deadline
from benchwarmers.providers.outbound import OutboundClient

BODY = {"model": "alpha", "messages": [{"role": "user", "content": "hi"}]}
HANG = 3600.0

Send = Callable[[str, float], Awaitable[int]]
Opener = Callable[[int], AbstractAsyncContextManager[Send]]


@asynccontextmanager
async def ours(pool: int) -> Any:
    async with OutboundClient(per_origin=pool, total=pool) as client:

        async def send(url: str, timeout: float) -> int:
            deadline = Deadline.after(timeout)
            try:
                response = await client.open("POST", url, BODY, {}, deadline)
            finally:
                deadline.close()
            try:
                async for _ in response.body:
                    pass
                return response.status
            finally:
                response.release()

        yield send


@asynccontextmanager
async def plain_httpx(pool: int) -> Any:
    """What `providers/transport.py` did before: one pool, asyncio timeouts around send."""
    async with httpx.AsyncClient(limits=httpx.Limits(max_connections=pool), timeout=None) as client:

        async def send(url: str, timeout: float) -> int:
            async with asyncio.timeout(timeout):
                response = await client.post(url, json=BODY)
                return response.status_code

        yield send


@asynccontextmanager
async def aiohttp_client(pool: int) -> Any:
    connector = aiohttp.TCPConnector(limit=pool, limit_per_host=pool)
    async with aiohttp.ClientSession(connector=connector) as session:

        async def send(url: str, timeout: float) -> int:
            async with session.post(url, json=BODY, timeout=aiohttp.ClientTimeout(total=timeout)) as response:
                await response.read()
                return response.status

        yield send


async def throughput(
    opener: Opener, url: str, calls: int, concurrency: int
) -> tuple[float, float, float, float]:
    times: list[float] = []
    async with opener(concurrency) as send:
        queue = iter(range(calls))

        async def worker() -> None:
            for _ in queue:
                started = time.perf_counter()
                await send(url, 30.0)
                times.append(time.perf_counter() - started)

        started, cpu = time.perf_counter(), time.process_time()
        await asyncio.gather(*(worker() for _ in range(concurrency)))
        elapsed, cpu = time.perf_counter() - started, time.process_time() - cpu
    times.sort()
    p50, p99 = statistics.median(times) * 1000, times[int(len(times) * 0.99)] * 1000
    return calls / elapsed, p50, p99, cpu / calls * 1e6


async def wedge(opener: Opener, fast: str, hang: str, pool: int, rounds: int, flood: int) -> int:
    async with opener(pool) as send:

        async def one(url: str, timeout: float) -> None:
            with suppress(Exception):
                await send(url, timeout)

        async def cancelled(url: str, after: float) -> None:
            with suppress(Exception):
                await asyncio.wait_for(send(url, 5.0), after)

        for _ in range(rounds):
            jobs = []
            for i in range(flood):
                url = hang if i % 3 else fast
                if i % 4 == 0:
                    jobs.append(cancelled(url, 0.05 + (i % 5) / 100))
                else:
                    jobs.append(one(url, 0.1 + 0.05 * (i % 4)))
            await asyncio.gather(*jobs)
        await asyncio.sleep(0.5)  # abandoned sends end by their own timeouts

        async def probe() -> bool:
            try:
                return await send(fast, 2.0) == 200
            except Exception:
                return False

        answers = await asyncio.gather(*(probe() for _ in range(pool * 3)))
    return sum(answers)


async def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--calls", type=int, default=3000)
    parser.add_argument("--concurrency", type=int, default=200)
    parser.add_argument("--pool", type=int, default=10)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--flood", type=int, default=200)
    args = parser.parse_args()
    loop = asyncio.get_running_loop()
    instant = await loop.create_server(lambda: InstantUpstream(0.0), "127.0.0.1", 0, backlog=4096)
    stuck = await loop.create_server(lambda: InstantUpstream(HANG), "127.0.0.1", 0, backlog=4096)
    fast = f"http://127.0.0.1:{instant.sockets[0].getsockname()[1]}/v1/chat/completions"
    hang = f"http://127.0.0.1:{stuck.sockets[0].getsockname()[1]}/v1/chat/completions"
    clients: dict[str, Opener] = {
        "ours (wire, gated)": ours,
        "aiohttp, bare": aiohttp_client,
        "httpx pool (before)": plain_httpx,
    }
    rows = []
    for name, opener in clients.items():
        rate, p50, p99, cpu = await throughput(opener, fast, args.calls, args.concurrency)
        answered = await wedge(opener, fast, hang, args.pool, args.rounds, args.flood)
        rows.append((name, rate, p50, p99, cpu, answered))
    print(json.dumps({"calls": args.calls, "concurrency": args.concurrency, "pool": args.pool}))
    print(f"{'client':<22} {'calls/s':>8} {'p50 ms':>7} {'p99 ms':>7} {'CPU µs/call':>11}  after the flood")
    for name, rate, p50, p99, cpu, answered in rows:
        print(
            f"{name:<22} {rate:8.0f} {p50:7.1f} {p99:7.1f} {cpu:11.0f}  {answered}/{args.pool * 3} answered"
        )
    instant.close()
    stuck.close()
    return 0


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))
