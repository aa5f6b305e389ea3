"""`serve --workers 2` beside `--workers 1`: passthrough requests/s at 10 connections.

Both on PostgreSQL + Redis (what `--workers` above 1 needs), in front of the
instant upstream (`upstream.py`), on the same bench as `vs_litellm.py`
(`bench/solo:route`, one member). Every round starts one server of each
kind in turn on a fresh database and drives it with the same load; the
table shows medians and the median of the rounds' ratios. The machine's
other load disturbs the absolute numbers; the ratio is what to read, and
it cannot beat the number of free cores (a 2-core machine shared with the
load generator and the upstream leaves little for a second worker): the
table says how many cores the server and the whole machine kept busy
during each cell (from /proc), so a ratio capped by the machine shows as
such.

    .venv/bin/python benchmarks/workers.py [--seconds 5] [--rounds 3] [--connections 10]
        [--postgres postgresql://postgres@127.0.0.1:5432/test] [--redis redis://127.0.0.1:6379/0]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import shutil
import statistics
import sys
import tempfile
import uuid
from pathlib import Path

import asyncpg
from common import Cell, Child, Load, free_port, measure
from vs_litellm import body, set_up_bench, start_upstream

MODEL = "bench/solo:route"


async def admin(url: str, statement: str) -> None:
    connection = await asyncpg.connect(url, timeout=5)
    try:
        await connection.execute(statement)
    finally:
        await connection.close()


def start_server(folder: Path, workers: int, database: str, redis: str) -> Child:
    port = free_port()
    command = Path(sys.executable).with_name("benchwarmers")
    env = {"BENCHWARMERS_HOME": str(folder / "home"), "BENCHWARMERS_DATABASE_URL": database}
    env["BENCHWARMERS_REDIS_URL"] = redis
    child = Child(
        f"workers-{workers}",
        [str(command), "serve", "--port", str(port), "--workers", str(workers)],
        env=env,
        cwd=folder,
    )
    child.base = f"http://127.0.0.1:{port}"  # type: ignore[attr-defined]
    child.wait_ready(f"{child.base}/v1/chat/completions", body(MODEL))  # type: ignore[attr-defined]
    return child


def busy_seconds() -> float:
    """CPU seconds the whole machine has spent busy (all cores, from /proc/stat):
    beside the server's own, it says whether a second worker had a core to run on."""
    fields = [int(x) for x in Path("/proc/stat").read_text().splitlines()[0].split()[1:]]
    idle = fields[3] + fields[4]  # idle, iowait
    return (sum(fields[:8]) - idle) / os.sysconf("SC_CLK_TCK")


async def one_round(
    folder: Path, workers: int, args: argparse.Namespace, upstream: str
) -> tuple[Cell, float]:
    """The cell, and how many cores the machine as a whole kept busy meanwhile."""
    name = f"bw_bench_{uuid.uuid4().hex[:10]}"
    await admin(args.postgres, f'CREATE DATABASE "{name}"')
    database = args.postgres.rsplit("/", 1)[0] + f"/{name}"
    try:
        os.environ["BENCHWARMERS_DATABASE_URL"] = database
        await set_up_bench(folder / "home", upstream)
        child = start_server(folder, workers, database, args.redis)
        try:
            load = Load(f"{child.base}/v1/chat/completions", [body(MODEL)])  # type: ignore[attr-defined]
            await measure(load, connections=args.connections, seconds=1.0)  # warm every worker
            busy = busy_seconds()
            cell = await measure(
                load, connections=args.connections, seconds=args.seconds, server_pid=child.pid
            )
            return cell, (busy_seconds() - busy) / cell.seconds
        finally:
            child.stop()
    finally:
        os.environ.pop("BENCHWARMERS_DATABASE_URL", None)
        await admin(args.postgres, f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


async def run(args: argparse.Namespace) -> str:
    folder = Path(tempfile.mkdtemp(prefix="bw-workers-"))
    upstream_child, upstream = start_upstream(folder, 0.0)
    cells: dict[int, list[Cell]] = {1: [], 2: []}
    machine: dict[int, list[float]] = {1: [], 2: []}
    try:
        for index in range(args.rounds):
            order = (1, 2) if index % 2 == 0 else (2, 1)
            for workers in order:
                round_folder = folder / f"r{index}-w{workers}"
                round_folder.mkdir()
                cell, cores = await one_round(round_folder, workers, args, upstream)
                cells[workers].append(cell)
                machine[workers].append(cores)
    finally:
        upstream_child.stop()
        shutil.rmtree(folder, ignore_errors=True)
    ratios = [two.rate / one.rate for one, two in zip(cells[1], cells[2], strict=True) if one.rate]
    lines = [
        f"passthrough ({MODEL}), {args.connections} connections, {args.rounds} rounds of {args.seconds:g} s,"
        f" {os.cpu_count()} cores, {cells[1][0].tool}",
        "",
        "| workers | requests/s | p50 ms | p99 ms | server CPU ms/request | server cores busy "
        f"| machine cores busy (of {os.cpu_count()}) | errors |",
        "|---|--:|--:|--:|--:|--:|--:|--:|",
    ]
    for workers, runs in cells.items():
        rate, cpu = statistics.median(c.rate for c in runs), statistics.median(c.cpu_ms_per_op for c in runs)
        p50, p99 = statistics.median(c.p50_ms for c in runs), statistics.median(c.p99_ms for c in runs)
        server_cores = statistics.median(c.server_cpu_seconds / c.seconds for c in runs)
        errors = sum(c.errors for c in runs)
        lines.append(
            f"| {workers} | {rate:.0f} | {p50:.1f} | {p99:.1f} | {cpu:.2f} | {server_cores:.2f} "
            f"| {statistics.median(machine[workers]):.2f} | {errors} |"
        )
    lines += ["", f"ratio 2 workers / 1 worker, requests/s: {statistics.median(ratios):.2f}x"]
    return "\n".join(lines)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seconds", type=float, default=5.0)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--connections", type=int, default=10)
    default_pg = os.environ.get("BENCHWARMERS_TEST_POSTGRES_URL", "postgresql://postgres@127.0.0.1:5432/test")
    parser.add_argument("--postgres", default=default_pg, help="an admin URL; a database is made per round")
    parser.add_argument("--redis", default="redis://127.0.0.1:6379/0")
    print(asyncio.run(run(parser.parse_args())))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
