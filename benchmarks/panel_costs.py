"""What one panel ask (and one route turn) costs, counted rather than timed.

Wall-clock overheads (`benchmarks/panel.py`) swing with whatever else the
machine runs; counts do not. For a 3-seat panel against fake seats (no
delay: only our own work is left), this prints per ask:

* SQL statements and transactions (SQLAlchemy engine events), split into
  the ask itself (until the reply is done) and what runs after it (the
  seating history), for the engine in-process and for a gateway request
  (guard, route, engine, format) over HTTP; the same for a one-member
  route-mode turn over HTTP (`bench/solo:route`, one conversation);
* CPU seconds of our process per ask (`time.process_time`, which counts
  only this process, so other people's load on the machine does not show);
* with `--profile`, the top of a cProfile of the in-process engine.

    .venv/bin/python benchmarks/panel_costs.py [--asks 50] [--profile]
"""

from __future__ import annotations

import argparse
import asyncio
import cProfile
import io
import pstats
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx
from sqlalchemy import event

from benchwarmers.calls import log
from benchwarmers.panel import engine as engine_module
from benchwarmers.panel.engine import PanelEngine
from benchwarmers.runtime import Runtime
from benchwarmers.store.collections import add_collection
from benchwarmers.store.db import Store
from benchwarmers.store.endpoints import add_endpoint
from benchwarmers.store.models import add_model
from benchwarmers.testing.fake_provider import FakeProvider
from benchwarmers.testing.live_server import live_server
from benchwarmers.testing.script import FakeModel
from benchwarmers.types import Ask, Request, user

ALIASES = ("fast", "mid", "slow")
BODY = {"model": "bench/trio", "messages": [{"role": "user", "content": "one word please"}]}
ROUTE_BODY = {"model": "bench/solo:route", "messages": [{"role": "user", "content": "one word please"}]}


class Tally:
    """SQL statements (by their first word) and transactions on one store."""

    def __init__(self) -> None:
        self.statements: Counter[str] = Counter()
        self.transactions = 0

    def total(self) -> int:
        return sum(self.statements.values())


@contextmanager
def counting(store: Store) -> Iterator[Tally]:
    """On the store's engine and on the call log's own: its `thread_engine`
    where a version has it, else its batches on a driver connection of its
    own (`log._LogFile.write`: one transaction of its statements)."""
    tally = Tally()
    thread_engine = getattr(store, "thread_engine", None)
    engines = [e for e in (store.engine.sync_engine, thread_engine) if e is not None]
    log_file = getattr(log, "_LogFile", None) if thread_engine is None else None
    write = log_file.write if log_file is not None else None

    def on_execute(_conn: Any, _cursor: Any, statement: str, *_rest: Any) -> None:
        tally.statements[statement.split(None, 1)[0].upper()] += 1

    def on_commit(_conn: Any) -> None:
        tally.transactions += 1

    def counted_write(file: Any, statements: Any) -> None:
        assert write is not None
        write(file, statements)
        for statement, values in statements:
            if values:
                tally.statements[str(statement).split(None, 1)[0].upper()] += 1
        tally.transactions += 1

    for sync in engines:
        event.listen(sync, "before_cursor_execute", on_execute)
        event.listen(sync, "commit", on_commit)
    if log_file is not None:
        log_file.write = counted_write
    try:
        yield tally
    finally:
        for sync in engines:
            event.remove(sync, "before_cursor_execute", on_execute)
            event.remove(sync, "commit", on_commit)
        if log_file is not None:
            log_file.write = write


async def set_up(home: Path, fake: FakeProvider) -> None:
    async with Runtime.open(home) as runtime:
        await add_endpoint(runtime.store, "fake", fake.openai_base, "openai", needs_key=False)
        for alias in ALIASES:
            fake.add(FakeModel(alias, answer=f"{alias} says hello"))
            await add_model(runtime.store, alias, "fake", alias)
        await add_collection(runtime.store, "trio", list(ALIASES))
        await add_collection(runtime.store, "solo", [ALIASES[0]])


async def settle() -> None:
    """Let what an ask leaves running (the seating history) finish."""
    while engine_module._RUNNING:
        await asyncio.gather(*engine_module._RUNNING, return_exceptions=True)


async def engine_costs(home: Path, asks: int, profile: bool) -> tuple[Tally, Tally, float, str]:
    async with Runtime.open(home) as runtime:
        engine = PanelEngine(runtime)
        the_ask = Ask("trio", "panel", Request((user("one word please"),)))
        await engine.answer(the_ask)  # warm up: connections, caches, imports
        await settle()
        profiler = cProfile.Profile() if profile else None
        during, after = Tally(), Tally()
        cpu = 0.0
        for _ in range(asks):
            with counting(runtime.store) as ask_tally:
                started = time.process_time()
                if profiler:
                    profiler.enable()
                await engine.answer(the_ask)
                if profiler:
                    profiler.disable()
                cpu += time.process_time() - started
            during.statements.update(ask_tally.statements)
            during.transactions += ask_tally.transactions
            with counting(runtime.store) as later:
                await settle()
            after.statements.update(later.statements)
            after.transactions += later.transactions
    report = ""
    if profiler:
        out = io.StringIO()
        pstats.Stats(profiler, stream=out).sort_stats("cumulative").print_stats(45)
        report = out.getvalue()
    return during, after, cpu / asks, report


def gateway_costs(home: Path, asks: int, body: dict[str, Any]) -> tuple[Tally, float]:
    with live_server(home) as server, httpx.Client(timeout=30) as client:
        assert server.app is not None
        client.post(f"{server.url}/v1/chat/completions", json=body).raise_for_status()
        time.sleep(0.2)  # the warm-up's seating history
        store = server.runtime.store
        with counting(store) as tally:
            started = time.process_time()
            for _ in range(asks):
                client.post(f"{server.url}/v1/chat/completions", json=body).raise_for_status()
            cpu = time.process_time() - started
            time.sleep(0.2)
    return tally, cpu / asks


def per_ask(tally: Tally, asks: int) -> str:
    kinds = ", ".join(f"{kind} {count / asks:g}" for kind, count in sorted(tally.statements.items()))
    return f"{tally.total() / asks:g} statements ({kinds}); {tally.transactions / asks:g} commits"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--asks", type=int, default=50)
    parser.add_argument("--profile", action="store_true", help="print a cProfile of the engine asks")
    args = parser.parse_args()
    with FakeProvider() as fake, tempfile.TemporaryDirectory() as folder:
        home = Path(folder) / "home"
        asyncio.run(set_up(home, fake))
        during, after, engine_cpu, report = asyncio.run(engine_costs(home, args.asks, args.profile))
        gateway, gateway_cpu = gateway_costs(home, args.asks, BODY)
        route, route_cpu = gateway_costs(home, args.asks, ROUTE_BODY)
    print(f"3-seat panel, {args.asks} asks, per ask:")
    print(f"  engine, until the reply:   {per_ask(during, args.asks)}")
    print(f"  engine, after the reply:   {per_ask(after, args.asks)}")
    print(f"  gateway request (all):     {per_ask(gateway, args.asks)}")
    print(f"  CPU per ask (this process, fake seats included): engine {engine_cpu * 1000:.1f} ms;", end=" ")
    print(f"gateway request {gateway_cpu * 1000:.1f} ms")
    print(f"1-member route turn, {args.asks} turns of one conversation, per turn:")
    print(f"  gateway request (all):     {per_ask(route, args.asks)}")
    print(f"  CPU per turn (this process, fake member included): {route_cpu * 1000:.1f} ms")
    if report:
        print(report)
    return 0


if __name__ == "__main__":
    sys.exit(main())
