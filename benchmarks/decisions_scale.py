"""Does ranking get slower as the call log grows?

`bench.decisions.rank` runs on every seat-by-record panel ask, merged reply
and route turn, so its cost must follow the bench (members, verdicts), not
the months of calls behind it. For each call-log size this builds a fresh
store (through the real migration, so with the statistics refreshed at
start), the way `vs_litellm.py --history` fills one: seats of `bench/trio`
(alpha, beta, gamma) over the last 90 days, one in 20 with a verdict, plus
as many calls again of other aliases and collections that ranking must not
read. Then per operation it prints the median CPU time of this process
(`time.process_time`: other people's load on the machine does not count)
and the SQL statements it ran. Ranking's reads are cached per bench, so a
warm rank sends none; "caches emptied" is the refresh that runs after a
write to what it reads (a verdict, a probe) or once per time-to-live;
the two refreshes that read what grows with the log (the verdict tallies,
the recent first bytes) are also timed alone.

    .venv/bin/python benchmarks/decisions_scale.py [--sizes 1000,10000,100000] [--repeat 40] [--models 200]

`--models N` puts N models on the bench (the five above and N - 5 more that
never sat): "seat_plan" is one panel ask's seating on bench/trio with its
explorer seat (`decisions.seat_plan`, what the panel engine calls), over the
whole bench: every model's evidence, the decider, the explorer draw, the
untried models' seat counts; "seat_plan (bench/solo, one member)" is a
one-seat panel's, where the record decides nothing (the hot path's case).

To compare with another version of `bench/decisions.py` (and of the cached
reads it decides on, `bench/facts.py`, `evidence.py`, `pair_reads.py` and
`seated.py`, in one module before the split), run the same script with
`PYTHONPATH` pointing at that version's `src`.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import tempfile
import time
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from common import insert_verdicts
from sqlalchemy import event, insert

from benchwarmers.bench import decisions
from benchwarmers.runtime import Runtime
from benchwarmers.store import schema

try:
    from benchwarmers.store.collections import add_collection, get_collection
    from benchwarmers.store.endpoints import add_endpoint
    from benchwarmers.store.models import add_model
except ImportError:  # a version from before the registry's split
    from benchwarmers.store.registry import add_collection, add_endpoint, add_model, get_collection

try:  # the refreshes timed alone live beside the evidence they read
    from benchwarmers.bench import evidence as loaders
except ImportError:  # a version from before decisions' split: they lived in decisions.py
    loaders = decisions

THREE = ("alpha", "beta", "gamma")
OTHERS = ("delta", "epsilon")
BATCH = 20_000


async def fill(runtime: Runtime, calls: int) -> None:
    """`calls` seats of bench/trio and `calls` calls of other aliases; a
    verdict on one in 20 of each, written as `record_verdict` writes it."""
    now = datetime.now(UTC)
    rows: list[dict[str, Any]] = []
    verdicts: list[dict[str, Any]] = []
    verdict_columns = set(schema.Verdict.__table__.columns.keys())
    for index in range(2 * calls):
        ours = index < calls
        alias = THREE[index % 3] if ours else OTHERS[index % 2]
        collection, shape = ("trio", "short") if ours else ("other", ("short", "code")[index % 2])
        call_id = f"c{index:09d}"
        at = now - timedelta(seconds=(index % calls) * 90 * 86400 / calls)
        rows.append(
            {
                "id": call_id,
                "at": at,
                "kind": "seat",
                "alias": alias,
                "endpoint": "instant",
                "served": alias,
                "task": f"panel seat (bench/{collection}, {shape})",
                "collection": collection,
                "shape": shape,
                "status": "ok",
                "seconds": 1.0,
                "first_byte_seconds": 0.1 + (index % 7) / 100,
            }
        )
        if index % 20 == 0:
            verdict = {"call_id": call_id, "useful": index % 40 == 0, "note": "", "at": at}
            facts = {"alias": alias, "kind": "seat", "collection": collection, "shape": shape}
            # A version from before verdicts carried their call's facts has no such columns.
            verdicts.append(verdict | {k: v for k, v in facts.items() if k in verdict_columns})
    async with runtime.store.write() as session:
        for start in range(0, len(rows), BATCH):
            await session.execute(insert(schema.Call), rows[start : start + BATCH])
        await insert_verdicts(session, verdicts, BATCH)


async def measure(
    operation: Callable[[], Awaitable[Any]], runtime: Runtime, repeat: int
) -> tuple[float, int]:
    """Median CPU milliseconds of one run, and the statements one run sends."""
    statements = 0

    def count(*_: Any) -> None:
        nonlocal statements
        statements += 1

    await operation()  # warm: compiled statements cached, pages in memory
    event.listen(runtime.store.engine.sync_engine, "before_cursor_execute", count)
    await operation()
    event.remove(runtime.store.engine.sync_engine, "before_cursor_execute", count)
    times = []
    for _ in range(repeat):
        start = time.process_time()
        await operation()
        times.append((time.process_time() - start) * 1000)
    return statistics.median(times), statements


async def cold(operation: Awaitable[Any]) -> Any:
    """`operation` after emptying ranking's caches (`decisions.RANKING_CACHES`;
    a version without them reads the store every time anyway): what a refresh
    costs, once per write to the tables read or per time-to-live."""
    for cache in getattr(decisions, "RANKING_CACHES", ()):
        cache.forget()
    return await operation


async def one_size(calls: int, repeat: int, models: int) -> list[tuple[str, float, int]]:
    with tempfile.TemporaryDirectory() as tmp:
        home = Path(tmp) / "home"
        async with Runtime.open(home) as runtime:
            await add_endpoint(runtime.store, "instant", "http://127.0.0.1:9/v1", "openai", needs_key=False)
            for alias in THREE + OTHERS + tuple(f"m{i:03d}" for i in range(max(models - 5, 0))):
                await add_model(runtime.store, alias, "instant", alias)
            await add_collection(runtime.store, "trio", list(THREE), seats=2, explorer_seats=1)
            await add_collection(runtime.store, "solo", ["alpha"])
            await fill(runtime, calls)
        # Reopen, as a restart would: the store refreshes its statistics at start.
        async with Runtime.open(home) as runtime:
            store = runtime.store
            trio = await get_collection(store, "trio")
            solo = await get_collection(store, "solo")
            operations: dict[str, Callable[[], Awaitable[Any]]] = {
                "rank (3 members)": lambda: decisions.rank(store, "trio", "short", list(THREE)),
                "rank (whole bench)": lambda: decisions.rank(store, "trio", "short"),
                "pick_explorers": lambda: decisions.pick_explorers(store, "trio", "short", 1),
                "rank (3 members), caches emptied": lambda: cold(
                    decisions.rank(store, "trio", "short", list(THREE))
                ),
            }
            if hasattr(decisions, "seat_plan"):
                operations["seat_plan (explorer seat, whole bench)"] = lambda: decisions.seat_plan(
                    store, trio, "short", spares=5
                )
                operations["seat_plan, caches emptied"] = lambda: cold(
                    decisions.seat_plan(store, trio, "short", spares=5)
                )
                # A one-member panel: the record decides nothing (no cap, no explorer).
                operations["seat_plan (bench/solo, one member)"] = lambda: decisions.seat_plan(
                    store, solo, "short"
                )
            operations |= {}
            # The refreshes of the two caches that read what grows with the log, alone.
            for name, load in (
                ("refresh: verdict tallies", "_load_tallies"),
                ("refresh: recent first bytes", "_load_first_bytes"),
            ):
                if hasattr(loaders, load):
                    operations[name] = lambda load=getattr(loaders, load): load(store)
            return [(name, *await measure(op, runtime, repeat)) for name, op in operations.items()]


async def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "--sizes", default="1000,10000,100000", help="bench/trio seats in the log (as many again of others)"
    )
    parser.add_argument("--repeat", type=int, default=40)
    parser.add_argument("--models", type=int, default=5, help="models on the bench (at least the five)")
    args = parser.parse_args()
    print(f"bench/decisions.py from {decisions.__file__}")
    print("| bench/trio seats in the log | operation | CPU ms (median) | SQL statements |")
    print("|--:|---|--:|--:|")
    for size in (int(s) for s in args.sizes.split(",")):
        for name, cpu_ms, statements in await one_size(size, args.repeat, args.models):
            print(f"| {size:,} | {name} | {cpu_ms:.2f} | {statements} |", flush=True)


if __name__ == "__main__":
    asyncio.run(main())
