"""What each index on `calls` costs the call log's writer.

The writer (`calls/log.py`) commits every batch of ended calls in one
SQLite transaction from a thread of its own, on the reply's path: BEGIN
IMMEDIATE, the calls' insert, the usage ledger's upsert, COMMIT. Under load
most batches hold one call, and each index on `calls` is one more B-tree
written per row. This times N one-row transactions of those statements on
a store filled with `--past` calls (ids made as the writer makes them), for
several sets of indexes on the same data: the table as revision 0001 made
it, as head makes it, and head less each of its indexes in turn (what each
one costs, whichever reads would miss it). The sets take turns, round after
round, so a busy moment of the machine falls on all of them; the table is
the median over rounds of each one's mean per transaction.

CPU is this thread's (`time.thread_time`: the driver and SQLite, not other
people's load); wall includes the WAL's writes (`synchronous=NORMAL`, so
no fsync per commit, as in the product). The WAL is checkpointed between
rounds, untimed, as the writer's checkpointer does between batches.

    .venv/bin/python benchmarks/call_log_insert.py [--past 300000] [--batches 300] [--rounds 7]
"""

from __future__ import annotations

import argparse
import asyncio
import shutil
import sqlite3
import statistics
import tempfile
import time
from collections.abc import Callable, Sequence
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any, cast

from sqlalchemy import Table
from sqlalchemy.dialects.sqlite.pysqlite import SQLiteDialect_pysqlite

from benchwarmers.calls.call_ids import new_ask_id, new_call_id
from benchwarmers.store.db import Store, sqlite_connect, sqlite_url
from benchwarmers.store.migrate import migrate
from benchwarmers.store.schema import Call

# Revision 0001's index that head no longer has (migrations/versions/0002_fewer_call_indexes.py).
DROPPED = {"ix_calls_collection_shape": "CREATE INDEX ix_calls_collection_shape ON calls (collection, shape)"}
LEDGER_UPSERT = (
    "INSERT INTO usage_ledger (month, endpoint, served, requests, tokens_in, tokens_out)"
    " VALUES (?, ?, ?, 1, ?, ?) ON CONFLICT (month, endpoint, served) DO UPDATE SET"
    " requests = requests + excluded.requests, tokens_in = tokens_in + excluded.tokens_in,"
    " tokens_out = tokens_out + excluded.tokens_out"
)
ALIASES = ("alpha", "beta", "gamma", "delta", "epsilon", "zeta")
FILL_BATCH = 20_000


def call_values(at: datetime, n: int) -> dict[str, Any]:
    """A call as the writer hands it over: a panel seat with its own ids."""
    alias = ALIASES[n % len(ALIASES)]
    return {
        "id": new_call_id(),
        "at": at,
        "kind": "seat",
        "alias": alias,
        "endpoint": "instant",
        "served": alias,
        "task": "panel seat (bench/trio, short)",
        "collection": ("trio", "duo", "solo")[n % 3],
        "shape": ("short", "code")[n % 2],
        "seat": f"seat-{n % 3}",
        "ask_id": new_ask_id(),
        "conversation": "",
        "status": "ok",
        "seconds": 1.0,
        "first_byte_seconds": 0.1,
        "tokens_in": 120,
        "tokens_out": 80,
        "error": "",
        "explorer": False,
    }


def compiled_insert() -> tuple[str, Callable[[dict[str, Any]], list[Any]]]:
    """The calls' insert compiled for SQLite, and a row's positional values in
    their stored form (a datetime as its text), as the writer sends them."""
    dialect = SQLiteDialect_pysqlite()
    table = cast(Table, Call.__table__)
    compiled = table.insert().compile(dialect=dialect, column_keys=list(call_values(datetime.now(UTC), 0)))
    order = tuple(compiled.positiontup or ())
    processors = [table.c[name].type.dialect_impl(dialect).bind_processor(dialect) for name in order]

    def row(values: dict[str, Any]) -> list[Any]:
        return [p(values[n]) if p else values[n] for n, p in zip(order, processors, strict=True)]

    return compiled.string, row


async def migrated(folder: Path) -> Path:
    """A store at head, as the server's start leaves it."""
    store = Store(sqlite_url(folder))
    await migrate(store)
    await store.close()
    return folder / "benchwarmers.db"


def fill(file: Path, past: int) -> None:
    sql, row = compiled_insert()
    start = datetime.now(UTC) - timedelta(days=90)
    connection = sqlite3.connect(file)
    for first in range(0, past, FILL_BATCH):
        rows = [
            row(call_values(start + timedelta(seconds=n * 90 * 86400 / past), n))
            for n in range(first, min(first + FILL_BATCH, past))
        ]
        connection.executemany(sql, rows)
        connection.commit()
    connection.execute("ANALYZE")
    connection.commit()
    connection.close()


def head_indexes(file: Path) -> list[str]:
    connection = sqlite3.connect(file)
    names = [
        name
        for (name,) in connection.execute(
            "SELECT name FROM sqlite_master WHERE type = 'index' AND tbl_name = 'calls' AND sql IS NOT NULL"
        )
    ]
    connection.close()
    return sorted(names)


def variants(folder: Path, base: Path) -> dict[str, Path]:
    """Copies of the filled store, each with one set of indexes on `calls`."""
    head = head_indexes(base)
    changes: dict[str, list[str]] = {
        f"revision 0001 ({len(head) + len(DROPPED)} indexes)": list(DROPPED.values()),
        f"head ({len(head)} indexes)": [],
    }
    changes |= {f"head less {name}": [f"DROP INDEX {name}"] for name in head}
    changes["no secondary index"] = [f"DROP INDEX {name}" for name in head]
    made = {}
    for n, (label, statements) in enumerate(changes.items()):
        file = folder / f"variant{n}.db"
        shutil.copy(base, file)
        connection = sqlite3.connect(file)
        for statement in statements:
            connection.execute(statement)
        connection.commit()
        connection.close()
        made[label] = file
    return made


def one_round(connection: sqlite3.Connection, batches: int, start: int) -> tuple[float, float]:
    """`batches` one-row transactions: mean CPU and wall microseconds each."""
    sql, row = compiled_insert()
    now = datetime.now(UTC)
    rows = [row(call_values(now + timedelta(microseconds=start + n), start + n)) for n in range(batches)]
    lines = [(f"{now:%Y-%m}", "instant", r[5], 120, 80) for r in rows]
    cpu, wall = time.thread_time(), time.perf_counter()
    for values, line in zip(rows, lines, strict=True):
        connection.execute("BEGIN IMMEDIATE")
        connection.executemany(sql, [values])
        connection.executemany(LEDGER_UPSERT, [line])
        connection.execute("COMMIT")
    cpu, wall = time.thread_time() - cpu, time.perf_counter() - wall
    connection.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    return cpu / batches * 1e6, wall / batches * 1e6


def measure(files: dict[str, Path], batches: int, rounds: int) -> dict[str, tuple[float, float]]:
    connections = {label: sqlite_connect(str(file)) for label, file in files.items()}
    for connection in connections.values():
        connection.execute("PRAGMA wal_autocheckpoint=0")  # as the writer's connection
        one_round(connection, batches // 4 or 1, 0)  # warm: pages in the cache
    samples: dict[str, list[tuple[float, float]]] = {label: [] for label in files}
    for n in range(rounds):
        order: Sequence[str] = list(files) if n % 2 == 0 else list(reversed(files))
        for label in order:
            samples[label].append(one_round(connections[label], batches, (n + 1) * batches))
    for connection in connections.values():
        connection.close()
    return {
        label: (statistics.median(c for c, _ in got), statistics.median(w for _, w in got))
        for label, got in samples.items()
    }


HEADER = """\
| past calls | indexes on calls | CPU µs/transaction | wall µs/transaction | CPU vs revision 0001 |
|--:|---|--:|--:|--:|"""


async def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--past", default="0,300000", help="calls already in the log, one run per size")
    parser.add_argument("--batches", type=int, default=300, help="one-row transactions per round")
    parser.add_argument("--rounds", type=int, default=7)
    args = parser.parse_args()
    print(f"SQLite {sqlite3.sqlite_version}; rounds of {args.batches} one-row transactions: {args.rounds}")
    print(HEADER)
    for past in map(int, args.past.split(",")):
        with tempfile.TemporaryDirectory() as tmp:
            base = await migrated(Path(tmp))
            fill(base, past)
            results = measure(variants(Path(tmp), base), args.batches, args.rounds)
        reference = next(iter(results.values()))[0]
        for label, (cpu, wall) in results.items():
            print(f"| {past:,} | {label} | {cpu:.1f} | {wall:.1f} | {cpu / reference:.2f}x |", flush=True)


if __name__ == "__main__":
    asyncio.run(main())
