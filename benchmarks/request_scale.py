"""Does a request cost more CPU with a long call log? Counted in-process.

`capacity.py` answers that from outside (server CPU per request from
/proc, a fresh server beside one holding `--history` past seats), which
on a shared box moves by 10-30% from run to run. This runs the same two
stores (`vs_litellm.set_up_bench`, with and without the history) as two
real servers in this process (`testing.live_server`: uvicorn, each on a
loop of its own in a thread), asks each in turn the way capacity.py does
(one connection, the same six modes, `--rounds` alternating), and prints
per mode and store:

* CPU per request by thread (from /proc/self/task: the server's event
  loop, the driver's threads, the call log's writer and checkpointer;
  the client's thread left out), so a growth shows where it is;
* the SQL statements a request sends, and, per distinct statement, the
  calls and the wall time between its `before_cursor_execute` and
  `after_cursor_execute` (one client asking in turn: no one waits
  in between), so a read that walks the log shows by name;
* the call log's batches (its own driver connection, past SQLAlchemy):
  thread CPU per row written;
* each round's ratio of the two stores' CPU per request, sorted: the
  same code on the same process still moves from cell to cell on a
  shared box (caches, frequency, the neighbours' load), and this says
  by how much.

Not a load test: one client, one request at a time.

    .venv/bin/python benchmarks/request_scale.py [--history 300000] [--requests 300] [--rounds 3]
        [--modes bench/solo:route,...] [--statements 8]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import sys
import tempfile
import threading
import time
from collections import defaultdict
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
from capacity import MODES
from sqlalchemy import event
from sqlalchemy.engine import Engine
from vs_litellm import body, set_up_bench, start_upstream

from benchwarmers.calls import log
from benchwarmers.testing.live_server import LiveServer

TICK = os.sysconf("SC_CLK_TCK")


def thread_cpu() -> dict[str, float]:
    """CPU seconds of each thread of this process by its Python name
    (threads of one name summed; the live servers' loops are
    `live-server-<port>`; "?" for threads Python did not start)."""
    names = {t.native_id: t.name for t in threading.enumerate()}
    out: dict[str, float] = defaultdict(float)
    for tid in os.listdir("/proc/self/task"):
        name = names.get(int(tid), "?")
        try:
            fields = Path(f"/proc/self/task/{tid}/stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        out[name] += (int(fields[11]) + int(fields[12])) / TICK
    return out


@dataclass
class Tally:
    """What one cell's requests sent: statements (by text) with calls and
    wall seconds, and the call log's batches, rows and thread CPU."""

    statements: dict[str, list[float]] = field(default_factory=lambda: defaultdict(lambda: [0, 0.0]))
    batches: int = 0
    rows: int = 0
    writer_cpu: float = 0.0


_current: Tally | None = None
_started: dict[int, float] = {}


def _before(_conn: Any, cursor: Any, *_rest: Any) -> None:
    _started[id(cursor)] = time.perf_counter()


def _after(_conn: Any, cursor: Any, statement: str, *_rest: Any) -> None:
    began = _started.pop(id(cursor), None)
    if _current is not None and began is not None:
        entry = _current.statements[" ".join(statement.split())]
        entry[0] += 1
        entry[1] += time.perf_counter() - began


@contextmanager
def tallying() -> Iterator[None]:
    """Every SQLAlchemy engine's statements, and the call log's own batches."""
    write = log._LogFile.write

    def timed_write(self: Any, statements: Any) -> None:
        before = time.thread_time()
        write(self, statements)
        if _current is not None:
            _current.writer_cpu += time.thread_time() - before
            _current.batches += 1
            _current.rows += sum(len(values) for _statement, values in statements if values)

    event.listen(Engine, "before_cursor_execute", _before)
    event.listen(Engine, "after_cursor_execute", _after)
    log._LogFile.write = timed_write  # type: ignore[method-assign]
    try:
        yield
    finally:
        log._LogFile.write = write  # type: ignore[method-assign]
        event.remove(Engine, "before_cursor_execute", _before)
        event.remove(Engine, "after_cursor_execute", _after)


@dataclass
class Cell:
    requests: int
    cpu: dict[str, float]  # thread group -> CPU seconds
    tally: Tally


def group(name: str, port: int) -> str | None:
    """The thread group a thread belongs to, for the server on `port`; None
    for the client's and the other server's."""
    if name == f"live-server-{port}":
        return "loop"
    if name in ("call-log", "wal-checkpoint"):
        return name  # only the server asked writes: the other is idle
    if name.startswith("Thread-") or name.startswith("asyncio_"):
        return "driver"  # aiosqlite's connection threads, to_thread's pool
    return None


def run_cell(client: httpx.Client, server: LiveServer, model: str, requests: int) -> Cell:
    global _current
    tally = Tally()
    request = {**body(model)}
    url = f"{server.url}/v1/chat/completions"
    before = thread_cpu()
    _current = tally
    for _ in range(requests):
        reply = client.post(url, json=request)
        reply.raise_for_status()
    server.settle_log()
    _current = None
    after = thread_cpu()
    cpu: dict[str, float] = defaultdict(float)
    for name, seconds in after.items():
        if (which := group(name, server.port)) is not None:
            cpu[which] += seconds - before.get(name, 0.0)
    return Cell(requests, dict(cpu), tally)


def report(mode: str, cells: dict[str, list[Cell]], shown: int) -> None:
    print(f"\n## {mode}\n")
    groups = sorted({g for cs in cells.values() for c in cs for g in c.cpu})
    print(
        "| store | " + " | ".join(f"{g} ms/req" for g in groups) + " | all ms/req | statements/req "
        "| writer µs/row |"
    )
    print("|---|" + "--:|" * (len(groups) + 3))
    for store, cs in cells.items():
        per = {g: statistics.median(c.cpu.get(g, 0.0) * 1e3 / c.requests for c in cs) for g in groups}
        total = statistics.median(sum(c.cpu.values()) * 1e3 / c.requests for c in cs)
        statements = statistics.median(
            sum(n for n, _s in c.tally.statements.values()) / c.requests for c in cs
        )
        rows = sum(c.tally.rows for c in cs)
        writer = sum(c.tally.writer_cpu for c in cs) * 1e6 / rows if rows else 0.0
        print(
            f"| {store} | "
            + " | ".join(f"{per[g]:.3f}" for g in groups)
            + f" | {total:.3f} | {statements:.2f} | {writer:.1f} |"
        )
    if len(cells) == 2:
        first, second = cells.values()
        ratios = sorted(
            (sum(b.cpu.values()) / b.requests) / (sum(a.cpu.values()) / a.requests)
            for a, b in zip(first, second, strict=True)
        )
        print(f"\nper-round ratios (all threads), sorted: {', '.join(f'{r:.2f}' for r in ratios)}")
    # Per statement: calls and mean wall µs per request, each store side by side.
    merged: dict[str, dict[str, tuple[float, float]]] = defaultdict(dict)
    for store, cs in cells.items():
        requests = sum(c.requests for c in cs)
        sums: dict[str, list[float]] = defaultdict(lambda: [0, 0.0])
        for c in cs:
            for text, (n, seconds) in c.tally.statements.items():
                sums[text][0] += n
                sums[text][1] += seconds
        for text, (n, seconds) in sums.items():
            merged[text][store] = (n / requests, seconds * 1e6 / requests)
    stores = list(cells)
    ranked = sorted(merged.items(), key=lambda kv: -max(us for _n, us in kv[1].values()))
    print()
    print("| statement | " + " | ".join(f"{s} calls/req | {s} µs/req" for s in stores) + " |")
    print("|---|" + "--:|" * (2 * len(stores)))
    for text, by_store in ranked[:shown]:
        cols = " | ".join(
            f"{by_store.get(s, (0, 0))[0]:.3f} | {by_store.get(s, (0, 0))[1]:.1f}" for s in stores
        )
        print(f"| `{text[:110]}` | {cols} |")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--history", type=int, default=300_000)
    parser.add_argument("--requests", type=int, default=300, help="per cell")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--modes", default=",".join(m for _l, m in MODES))
    parser.add_argument("--statements", type=int, default=8, help="statements shown per mode")
    args = parser.parse_args()
    modes = args.modes.split(",")
    with tempfile.TemporaryDirectory(prefix="bench-request-scale-") as tmp, ExitStack() as stack:
        folder = Path(tmp)
        upstream, base = start_upstream(folder, 0.0)
        stack.callback(upstream.stop)
        stack.enter_context(tallying())  # before the engines are made: a class's events reach new ones
        servers: dict[str, LiveServer] = {}
        for name, history in (("0", 0), (f"{args.history:,}", args.history)):
            home = folder / name / "home"
            home.mkdir(parents=True)
            asyncio.run(set_up_bench(home, base, history))
            servers[name] = LiveServer(home).start()
            stack.callback(servers[name].stop)
        client = stack.enter_context(httpx.Client(timeout=30))
        for model in modes:  # warm: every statement compiled, caches filled, pages read
            for server in servers.values():
                run_cell(client, server, model, 50)
        cells: dict[str, dict[str, list[Cell]]] = {m: {s: [] for s in servers} for m in modes}
        for round_number in range(args.rounds):
            for model in modes:
                order = list(servers.items())
                for name, server in order if round_number % 2 == 0 else order[::-1]:
                    cells[model][name].append(run_cell(client, server, model, args.requests))
            print(f"  round {round_number + 1}/{args.rounds}", flush=True, file=sys.stderr)
        print(f"threads: {sorted(thread_cpu())}")
        for model in modes:
            report(model, cells[model], args.statements)


if __name__ == "__main__":
    threading.current_thread().name = "client"
    main()
