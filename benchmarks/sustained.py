"""A sustained run: one load for a minute or more, measured in slices.

A cost that grows with time (a window summed whole on every call, a cache
that only fills) hides in a 4 s cell and shows over a minute: this drives
the load in back-to-back slices of `SLICE_SECONDS` (one loader run each)
and prints requests/s and the server's CPU per request for each, then the
last `ENDS_SECONDS`' CPU per request against the first's (issue 37: within
10%). `vs_litellm.py --sustained 60` runs its configured scenario so.
"""

from __future__ import annotations

import asyncio
import math

from common import Cell, Load, measure

SLICE_SECONDS = 5.0
# The run's ends compared: its first and last this many seconds.
ENDS_SECONDS = 10.0
# How far the last seconds' CPU per request may stray above the first's.
DRIFT_BOUND = 1.1
# The shortest run the bound is judged on (issue 37: "over a 60 s sustained
# run"); a shorter one's first and last seconds overlap or nearly so, and
# would read "met" whatever the cost did over time.
JUDGED_SECONDS = 60.0


def _cpu_ms_per_request(cells: list[Cell]) -> float:
    return sum(c.server_cpu_seconds for c in cells) * 1000 / max(sum(c.operations for c in cells), 1)


def verdict(drift: float, seconds: float) -> str:
    """The last seconds' CPU per request over the first's against the
    bound, judged only on a run of `JUDGED_SECONDS` or more."""
    if seconds < JUDGED_SECONDS:
        return f"not judged (a run of {seconds:g} s; the bound is read over {JUDGED_SECONDS:g} s or more)"
    return "met" if drift <= DRIFT_BOUND else "MISSED"


def sustained(server_pid: int, load: Load, seconds: float, connections: int, prefer_wrk: bool) -> str:
    """Drive `load` for `seconds` at `connections`; the table as Markdown."""
    slices = [
        asyncio.run(
            measure(
                load,
                connections=connections,
                seconds=SLICE_SECONDS,
                prefer_wrk=prefer_wrk,
                server_pid=server_pid,
            )
        )
        for _ in range(max(math.ceil(seconds / SLICE_SECONDS), 2))
    ]
    out = [
        "| slice (s) | req/s | CPU ms/req | p50 ms | p99 ms | errors | CPU stolen |",
        "|---|--:|--:|--:|--:|--:|--:|",
    ]
    for index, cell in enumerate(slices):
        start = index * SLICE_SECONDS
        out.append(
            f"| {start:g}-{start + SLICE_SECONDS:g} | {cell.rate:,.1f} | {cell.cpu_ms_per_op:.3f} | "
            f"{cell.p50_ms:.2f} | {cell.p99_ms:.2f} | {cell.errors} | {cell.stolen:.1%} |"
        )
    ends = max(int(ENDS_SECONDS / SLICE_SECONDS), 1)
    first, last = _cpu_ms_per_request(slices[:ends]), _cpu_ms_per_request(slices[-ends:])
    drift = last / first if first else float("nan")
    judged = verdict(drift, len(slices) * SLICE_SECONDS)
    out += [
        "",
        f"CPU per request, first {ENDS_SECONDS:g} s: {first:.3f} ms; last {ENDS_SECONDS:g} s: {last:.3f} ms; "
        f"last/first {drift:.3f}x {judged} (≤{DRIFT_BOUND:g}x); "
        f"{sum(c.operations for c in slices)} requests, {sum(c.errors for c in slices)} errors",
    ]
    return "\n".join(out)
