"""What the gateway holds over time and at once: open streams, memory, a long call log.

Three measures, each ours alone on the instant upstream (`upstream.py`),
printed as tables beside issue 15's targets:

* **open streams**: `--streams` (500) streaming requests sent at once,
  route mode (`bench/solo:route`) and a one-seat panel (`bench/solo`), to
  an upstream that waits `--hold` seconds before it answers, so every
  stream is open at the same moment. All served at once means none waited
  for another's upstream connection: such a stream would end a whole hold
  after the first ones, so the ends must all fall within one hold.
  Resident memory (the server's process tree, sampled every 50 ms) must
  stay ≤ 200 MB. The `max_panels` setting is raised to the streams asked
  first: at its default (64) the other panels are refused with 429, by
  design, which would measure the cap.
* **memory over requests**: resident memory after 5,000 and after 50,000
  requests (wrk, 10 connections, turns of route mode, a one-seat panel and
  a 3-seat panel in slices): within 5%.
* **CPU per request against the call log's length**: two servers side by
  side, one fresh and one whose call log holds `--history` (300,000) past
  seats (one in 20 judged, as `vs_litellm.py --history`), driven in
  alternation on every mode at 1 connection; the server CPU per request
  (from /proc) at 300k must be within 10% of at 0. CPU time is not immune
  to a shared box: one store's cell against the other's beside it moves by
  0.80-1.41x with nothing changed (`request_scale.py`, in one process), so
  many short rounds (8 of 2 s), who goes first rotating, and the middle
  half of the rounds' ratios printed beside their median; `--control`
  adds a second empty store, whose ratio to the first is the measure's
  own noise.

    .venv/bin/python benchmarks/capacity.py [--streams 500] [--hold 5] [--requests 50000]
        [--history 300000] [--seconds 2] [--rounds 8] [--control] [--only streams,memory,history]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path

import aiohttp
from common import Cell, Load, cpu_seconds, measure, peak_rss_mb, rss_mb
from vs_litellm import Server, body, start_ours, start_upstream

from benchwarmers.runtime import Runtime
from benchwarmers.store.settings import MAX_PANELS, Settings

MODES = (
    ("route mode, one member", "bench/solo:route"),
    ("one-seat panel", "bench/solo"),
    ("panel of 3", "bench/trio"),
    ("seating 2 of 3 by record", "bench/pick"),
    ("merged panel of 3", "bench/trio:merged"),
    ("route mode over 3", "bench/trio:route"),
)
RSS_LIMIT_MB = 200.0


# ---------------------------------------------------------------- streams


async def open_streams(server: Server, model: str, count: int) -> dict[str, float]:
    """`count` streams at once; seconds to each first byte and end, and peak RSS."""
    peak = rss_mb(server.child.pid)
    sampling = True

    async def sample() -> None:
        nonlocal peak
        while sampling:
            peak = max(peak, rss_mb(server.child.pid))
            await asyncio.sleep(0.05)

    connector = aiohttp.TCPConnector(limit=0)
    timeout = aiohttp.ClientTimeout(total=120)
    first: list[float] = []
    done: list[float] = []
    errors = 0
    async with aiohttp.ClientSession(connector=connector, timeout=timeout) as session:
        started = time.perf_counter()

        async def one() -> None:
            nonlocal errors
            try:
                async with session.post(server.chat_url, json={**body(model), "stream": True}) as reply:
                    if reply.status != 200:
                        errors += 1
                        return
                    seen = False
                    async for _chunk in reply.content.iter_any():
                        if not seen:
                            first.append(time.perf_counter() - started)
                            seen = True
                    done.append(time.perf_counter() - started)
            except (aiohttp.ClientError, TimeoutError):
                errors += 1

        sampler = asyncio.create_task(sample())
        cpu_before = _cpu(server)
        await asyncio.gather(*(one() for _ in range(count)))
        cpu = _cpu(server) - cpu_before
        sampling = False
        await sampler
    return {
        "ok": len(done),
        "errors": errors,
        "first_min": min(first, default=float("nan")),
        "first_p50": statistics.median(first) if first else float("nan"),
        "first_max": max(first, default=float("nan")),
        "done_min": min(done, default=float("nan")),
        "done_max": max(done, default=float("nan")),
        "peak_rss": peak,
        "cpu_ms": cpu * 1e3 / max(len(done), 1),
    }


def _cpu(server: Server) -> float:
    return cpu_seconds(server.child.pid)


async def raise_panel_cap(home: Path, panels: int) -> None:
    """`max_panels` (64 by default: past it an ask gets 429, by design) up to
    the streams asked, so the panel row measures capacity, not the cap."""
    async with Runtime.open(home) as runtime:
        await Settings(runtime.store).set(MAX_PANELS, panels)


def streams_table(folder: Path, count: int, hold: float) -> str:
    upstream, base = start_upstream(folder / "held", hold)
    ours = start_ours(folder / "held", base)
    asyncio.run(raise_panel_cap(folder / "held" / "home", count + 20))
    time.sleep(3)  # the server re-reads settings written by another process within 2 s
    try:
        rows = [
            "| mode | streams | answered | errors | first byte min / p50 / max s | ends first / last s "
            "| all at once (ends within one hold) | CPU ms/stream | peak RSS MB (≤200) |",
            "|---|--:|--:|--:|--:|--:|---|--:|--:|",
        ]
        for label, model in MODES[:2]:
            asyncio.run(open_streams(ours, model, 20))  # warm up
            got = asyncio.run(open_streams(ours, model, count))
            # A stream queued behind another's connection would end a whole hold after the first ones.
            at_once = got["ok"] == count and got["done_max"] - got["done_min"] < hold
            rows.append(
                f"| {label} ({model}) | {count} | {got['ok']:.0f} | {got['errors']:.0f} "
                f"| {got['first_min']:.2f} / {got['first_p50']:.2f} / {got['first_max']:.2f} "
                f"| {got['done_min']:.2f} / {got['done_max']:.2f} | {'yes' if at_once else 'NO'} "
                f"| {got['cpu_ms']:.2f} "
                f"| {got['peak_rss']:.1f} {'met' if got['peak_rss'] <= RSS_LIMIT_MB else 'MISSED'} |"
            )
    finally:
        ours.child.stop()
        upstream.stop()
    title = f"{count} streams at once, upstream holding each {hold:g} s before it answers"
    return title + "\n\n" + "\n".join(rows)


# ----------------------------------------------------------------- memory


def memory_table(folder: Path, total: int) -> str:
    upstream, base = start_upstream(folder / "memory", 0.0)
    ours = start_ours(folder / "memory", base)
    try:
        loads = [Load(ours.chat_url, [body(model)]) for _label, model in MODES[:3]]
        checkpoints = sorted({total // 10, total})
        sent, marks, turn = 0, {}, 0
        started = time.monotonic()
        while sent < total:
            cell = asyncio.run(measure(loads[turn % len(loads)], connections=10, seconds=3))
            sent += cell.operations
            turn += 1
            for mark in checkpoints:
                if sent >= mark and mark not in marks:
                    marks[mark] = (sent, rss_mb(ours.child.pid))
        elapsed = time.monotonic() - started
        (low_sent, low_rss), (high_sent, high_rss) = marks[checkpoints[0]], marks[checkpoints[-1]]
        growth = (high_rss - low_rss) / low_rss
        verdict = "met" if abs(growth) <= 0.05 else "MISSED"
        rows = [
            "| requests so far | RSS MB |",
            "|--:|--:|",
            f"| {low_sent:,} | {low_rss:.1f} |",
            f"| {high_sent:,} | {high_rss:.1f} |",
            f"| growth (≤5%) | {growth:+.1%} {verdict} |",
            f"| peak RSS MB | {peak_rss_mb(ours.child.pid):.1f} |",
        ]
    finally:
        ours.child.stop()
        upstream.stop()
    return (
        f"memory over {sent:,} requests in {elapsed:.0f} s (wrk, 10 connections, slices of "
        f"{', '.join(m for _l, m in MODES[:3])} in turn)\n\n" + "\n".join(rows)
    )


# ---------------------------------------------------------------- history


def history_table(folder: Path, history: int, seconds: float, rounds: int, control: bool) -> str:
    upstream, base = start_upstream(folder / "history", 0.0)
    servers = {
        "fresh": start_ours(folder / "history" / "fresh", base),
        "long": start_ours(folder / "history" / "long", base, history),
    }
    if control:
        servers["control"] = start_ours(folder / "history" / "control", base)
    try:
        cells: dict[tuple[str, str], list[Cell]] = {}
        for _label, model in MODES:
            for server in servers.values():
                asyncio.run(
                    measure(
                        Load(server.chat_url, [body(model)]), connections=2, seconds=1.5, prefer_wrk=False
                    )
                )
        order = list(servers)
        for round_number in range(rounds):
            for _label, model in MODES:
                # Each mode's cells back to back, who goes first rotating round by round: a
                # busy moment of the box falls on every store alike.
                shift = round_number % len(order)
                for name in order[shift:] + order[:shift]:
                    server = servers[name]
                    load = Load(server.chat_url, [body(model)])
                    cell = asyncio.run(
                        measure(load, connections=1, seconds=seconds, server_pid=server.child.pid)
                    )
                    cells.setdefault((model, name), []).append(cell)
            print(f"  history round {round_number + 1}/{rounds}", file=sys.stderr, flush=True)
        rows = [
            f"| mode | CPU ms/req, 0 past calls | CPU ms/req, {history:,} past calls | ratio (≤1.10x) "
            "| rounds' ratios, middle half | "
            + ("control: another empty store ÷ the first | " if control else "")
            + "req/s 0 / long | errors |",
            "|---|--:|--:|--:|--:|" + ("--:|" if control else "") + "--:|--:|",
        ]
        for label, model in MODES:
            a, b = cells[model, "fresh"], cells[model, "long"]
            ratios = [y.cpu_ms_per_op / x.cpu_ms_per_op for x, y in zip(a, b, strict=True)]
            ratio = statistics.median(ratios)
            extra = ""
            if control:
                again = cells[model, "control"]
                same = statistics.median(
                    z.cpu_ms_per_op / x.cpu_ms_per_op for x, z in zip(a, again, strict=True)
                )
                extra = f"| {same:.2f}x "
            rows.append(
                f"| {label} ({model}) | {statistics.median(c.cpu_ms_per_op for c in a):.2f} "
                f"| {statistics.median(c.cpu_ms_per_op for c in b):.2f} "
                f"| {ratio:.2f}x {'met' if ratio <= 1.10 else 'MISSED'} | {_middle_half(ratios)} {extra}"
                f"| {statistics.median(c.rate for c in a):.0f} / {statistics.median(c.rate for c in b):.0f} "
                f"| {sum(c.errors for c in a + b)} |"
            )
    finally:
        for server in servers.values():
            server.child.stop()
        upstream.stop()
    return (
        f"CPU per request, a fresh call log beside one of {history:,} past seats; {rounds} rounds of "
        f"{seconds:g} s per cell at 1 connection, alternating; ratio = median of the rounds' ratios\n\n"
        + "\n".join(rows)
    )


def _middle_half(ratios: list[float]) -> str:
    """The rounds' ratios between their first and third quartiles: how far
    the box moved one store's cell against the other's beside it."""
    if len(ratios) < 4:
        return " / ".join(f"{r:.2f}" for r in sorted(ratios))
    low, _middle, high = statistics.quantiles(ratios, n=4)
    return f"{low:.2f}-{high:.2f}"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--streams", type=int, default=500)
    parser.add_argument("--hold", type=float, default=5.0, help="upstream delay for the streams, seconds")
    parser.add_argument("--requests", type=int, default=50_000, help="memory: requests in all")
    parser.add_argument("--history", type=int, default=300_000)
    parser.add_argument("--seconds", type=float, default=2.0, help="history: per cell and round")
    parser.add_argument("--rounds", type=int, default=8, help="history")
    parser.add_argument("--only", default="streams,memory,history")
    parser.add_argument(
        "--control",
        action="store_true",
        help="history: a second empty store as well, the measure's own noise",
    )
    args = parser.parse_args()
    parts = set(args.only.split(","))
    started = time.monotonic()
    load_before = os.getloadavg()[0]
    out: list[str] = []
    with tempfile.TemporaryDirectory(prefix="bench-capacity-") as tmp:
        folder = Path(tmp)
        for sub in ("held", "memory", "history/fresh", "history/long", "history/control"):
            (folder / sub).mkdir(parents=True)
        if "streams" in parts:
            out.append(streams_table(folder, args.streams, args.hold))
        if "memory" in parts:
            out.append(memory_table(folder, args.requests))
        if "history" in parts:
            out.append(history_table(folder, args.history, args.seconds, args.rounds, args.control))
    when = datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC")
    print(
        f"{when}; {os.cpu_count()} CPUs, load average {load_before:.1f} at start, "
        f"{os.getloadavg()[0]:.1f} at end; total {time.monotonic() - started:.0f} s"
    )
    for part in out:
        print()
        print(part)
    return 0


if __name__ == "__main__":
    sys.exit(main())
