"""`serve --workers 2` beside `--workers 1`: passthrough requests/s at 10 connections.

Both on PostgreSQL + Redis (`--store postgres`, the default), or both on the
embedded default (`--store sqlite`: SQLite in the data folder, no Redis,
the limit counters in the supervisor), in front of the
instant upstream (`upstream.py`), on the same bench as `vs_litellm.py`
(`bench/solo:route`, one member). One server of each kind is started for
the whole run, each on a database and folder of its own; every round
drives one and then the other with the same load (the first alternating,
the other idle meanwhile), each cell after a second of untimed load. The
tables show medians, the median of the rounds' ratios and each round's.
Until 3 December every round started both servers afresh: a new server's
first seconds, and a new database's, spread the rounds' ratios further
(1.61x from rounds of 1.58-1.85 in one run of that script).

Two ways, both printed, each labelled:

- **uncapped**: the server takes what it can of the machine. On a small box
  this ratio is capped by the box, not by the design: the loader, the
  upstream, PostgreSQL and Redis share the same cores, so a second worker
  finds little to run on. The table says how many cores each group of
  processes kept busy (from /proc), so a ratio capped by the machine shows
  as such.
- **capped** (`--cap 0.45`, or several values for one table each): the
  server's whole process tree (the supervisor and its workers) runs in a
  cgroup (v1 `cpu` controller) whose quota, set before each cell, is the
  workers times the cap in cores, so the rest of the machine keeps free
  cores for the loader, the upstream and the databases. This ratio is how
  our design scales when the cores are there.

In both, the server's cgroup has a large `cpu.shares`, so other work on a
shared machine does not take its budget (or, uncapped, its cores) away.
That needs root and the controller at `/sys/fs/cgroup/cpu` (cgroup v1);
without it (cgroup v2, no root: most machines nobody prepared for this)
the capped run is skipped with one line saying why and the uncapped one
runs in the machine's own group, unless `--cap` was given, which then
stops the run; `--cap 0` asks for the uncapped run alone.

Beside requests/s, CPU per request and the cores each group kept busy,
each cell counts PostgreSQL transactions and Redis commands per request:
round trips a worker pays on its own (none on SQLite). On SQLite, once the
run is over and the servers stopped, the calls in each server's store are
counted against the requests the loader saw answered (every cell, warm-ups
and cells run again included): the log must hold every one, and may hold
a few more (those in flight when the loader stopped, which it does not
count).

A round's two cells (one worker, two) are run again together while the
hypervisor stole more than `--steal-limit` of the CPU wanted during
either (`common.unstolen`, as in `vs_litellm.py`), up to `--tries` runs,
the least stolen kept: on 3 December the capped ratio read 1.80x, 1.52x
and 1.86x in three runs minutes apart, the 1.52 with 34-40% stolen.

    .venv/bin/python benchmarks/workers.py [--seconds 5] [--rounds 5] [--connections 10] [--cap 0.45 ...]
        [--store postgres|sqlite]
        [--postgres postgresql://postgres@127.0.0.1:5432/test] [--redis redis://127.0.0.1:6379/0]
        [--steal-limit 0.05] [--tries 4]
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import resource
import shutil
import sqlite3
import statistics
import sys
import tempfile
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, replace
from functools import partial
from operator import attrgetter
from pathlib import Path

import asyncpg
from common import (
    Cell,
    Child,
    Load,
    add_steal_arguments,
    benchwarmers_command,
    cpu_seconds,
    free_port,
    machine_ticks,
    measure,
    unstolen,
)
from redis.asyncio import Redis
from redis.exceptions import RedisError
from vs_litellm import body, set_up_bench, start_upstream

MODEL = "bench/solo:route"
CGROUP_CPU = Path("/sys/fs/cgroup/cpu")
# The quota's period: short, so a capped server is held back often and briefly
# rather than for most of the kernel's default 100 ms.
CAP_PERIOD_US = 20_000
# The server's weight against the machine's other work (the default is 1024).
SERVER_SHARES = 8192
# PostgreSQL's backends report their transactions to pg_stat_database when
# idle for a second at most: read it after they have.
STATS_SETTLE = 1.2
# Load before each cell, untimed: the quota just set, and a server idle
# through the other's cell, settle into the load measured.
WARM_SECONDS = 1.0
GROUPS = ("server", "loader", "upstream", "PostgreSQL", "Redis", "other")
# The capped run's cores per worker when `--cap` is not given.
DEFAULT_CAP = 0.45


def cgroup_usable() -> bool:
    """Whether this process may make cgroups under the v1 cpu controller
    (`server_cgroup`): root, and the controller mounted where v1 mounts it."""
    return CGROUP_CPU.is_dir() and os.access(CGROUP_CPU, os.W_OK)


def caps_to_run(asked: list[float] | None) -> list[float]:
    """The capped runs' cores per worker. Not asked (`--cap` left out): the
    default one where the controller is there, else none, said in one line
    on stderr, so the script runs to its end (uncapped) on any machine.
    Asked for where it cannot be done: the run stops, saying why."""
    if asked is None:
        if cgroup_usable():
            return [DEFAULT_CAP]
        print(
            f"capped run skipped: it needs root and the cgroup v1 cpu controller at {CGROUP_CPU}; "
            "the uncapped run only",
            file=sys.stderr,
        )
        return []
    caps = [cap for cap in asked if cap]
    if caps and not cgroup_usable():
        raise SystemExit(f"--cap needs root and the cgroup v1 cpu controller at {CGROUP_CPU} (or --cap 0)")
    return caps


async def admin(url: str, statement: str) -> None:
    connection = await asyncpg.connect(url, timeout=5)
    try:
        await connection.execute(statement)
    finally:
        await connection.close()


async def transactions(url: str, database: str) -> int:
    """Transactions PostgreSQL has counted in `database` so far."""
    connection = await asyncpg.connect(url, timeout=5)
    try:
        query = "SELECT xact_commit + xact_rollback FROM pg_stat_database WHERE datname = $1"
        return int(await connection.fetchval(query, database))
    finally:
        await connection.close()


async def services_answer(postgres: str, redis: str) -> None:
    """Stop in one line, before any server starts, when PostgreSQL or Redis
    does not answer (`--store sqlite` needs neither)."""
    try:
        await admin(postgres, "SELECT 1")
    except (OSError, asyncpg.PostgresError) as exc:
        raise SystemExit(f"--store postgres: PostgreSQL at {postgres} does not answer ({exc})") from None
    try:
        await redis_commands(redis)
    except (OSError, RedisError) as exc:
        raise SystemExit(f"--store postgres: Redis at {redis} does not answer ({exc})") from None


async def redis_commands(url: str) -> int:
    """Commands Redis has processed so far (the INFO asking it included)."""
    client = Redis.from_url(url)
    try:
        return int((await client.info("stats"))["total_commands_processed"])
    finally:
        await client.aclose()


@contextlib.contextmanager
def server_cgroup() -> Iterator[tuple[Path, list[str]]]:
    """A cgroup with a large share of the machine (its quota set per cell,
    `set_cap`); yields it and the argv prefix that puts a command (and every
    process it starts) in it before the command runs."""
    group = CGROUP_CPU / f"bw-workers-{os.getpid()}-{uuid.uuid4().hex[:6]}"
    group.mkdir()
    try:
        (group / "cpu.shares").write_text(str(SERVER_SHARES))
        (group / "cpu.cfs_period_us").write_text(str(CAP_PERIOD_US))
        yield group, ["sh", "-c", f'echo $$ > {group / "cgroup.procs"} && exec "$@"', "sh"]
    finally:
        for _ in range(50):  # the workers may still be on their way out
            try:
                group.rmdir()
                break
            except OSError:
                time.sleep(0.1)


def set_cap(group: Path | None, cores: float) -> None:
    """The group's quota: `cores` CPUs, or none for 0."""
    if group is not None:
        (group / "cpu.cfs_quota_us").write_text(str(round(cores * CAP_PERIOD_US) if cores else -1))


@dataclass
class Server:
    """One `serve --workers N` for the whole run, on its own database and
    folder, in its own cgroup where there is one."""

    workers: int
    child: Child
    database: str  # its name on the PostgreSQL server; "" on SQLite
    group: Path | None
    load: Load
    home: Path
    # Requests the loader saw answered, every cell counted (warm-ups and cells run again too).
    answered: int = 0
    logged_before: int = 0  # calls in its SQLite log before the first cell


def logged_calls(home: Path) -> int:
    """The calls in a data folder's SQLite log (read past the program)."""
    with contextlib.closing(sqlite3.connect(home / "benchwarmers.db")) as connection:
        return int(connection.execute("SELECT count(*) FROM calls").fetchone()[0])


async def start_server(
    stack: contextlib.AsyncExitStack, folder: Path, workers: int, args: argparse.Namespace, upstream: str
) -> Server:
    home = folder / f"home-{workers}"
    env = {"BENCHWARMERS_HOME": str(home)}
    name = ""
    if args.store == "postgres":
        name = f"bw_bench_{uuid.uuid4().hex[:10]}"
        await admin(args.postgres, f'CREATE DATABASE "{name}"')
        stack.push_async_callback(admin, args.postgres, f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        database = args.postgres.rsplit("/", 1)[0] + f"/{name}"
        env["BENCHWARMERS_DATABASE_URL"] = database
        env["BENCHWARMERS_REDIS_URL"] = args.redis
        await set_up_bench(home, upstream, database_url=database)
    else:
        await set_up_bench(home, upstream)
    group, prefix = stack.enter_context(server_cgroup()) if cgroup_usable() else (None, [])
    port = free_port()
    child = Child(
        f"workers-{workers}",
        [*prefix, benchwarmers_command(), "serve", "--port", str(port), "--workers", str(workers)],
        env={**env, **({} if name else {"BENCHWARMERS_DATABASE_URL": "", "BENCHWARMERS_REDIS_URL": ""})},
        cwd=folder,
    )
    stack.callback(child.stop)
    url = f"http://127.0.0.1:{port}/v1/chat/completions"
    child.wait_ready(url, body(MODEL))
    server = Server(workers, child, name, group, Load(url, [body(MODEL)]), home)
    if not name:
        await asyncio.sleep(STATS_SETTLE)  # the readiness asks' calls committed behind their replies
        server.logged_before = logged_calls(home)
    return server


def busy_seconds() -> float:
    """CPU seconds the whole machine has run its own work (all cores,
    `common.machine_ticks`): not idle, not waiting for a disk, and not stolen
    (time another guest ran instead, which counted as "other" before)."""
    user, nice, system, _idle, _iowait, irq, softirq = machine_ticks()[:7]
    return (user + nice + system + irq + softirq) / os.sysconf("SC_CLK_TCK")


def named_cpu_seconds(name: str) -> float:
    """CPU seconds of every live process whose command name is `name`."""
    ticks = 0
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            comm, rest = (entry / "stat").read_text().split(" (", 1)[1].rsplit(")", 1)
        except (OSError, IndexError, ValueError):
            continue
        if comm == name:
            fields = rest.split()
            ticks += int(fields[11]) + int(fields[12])  # utime, stime
    return ticks / os.sysconf("SC_CLK_TCK")


def loader_seconds() -> float:
    """CPU of this script's finished children: the loader (wrk) is the only
    one that ends while a cell is measured."""
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def snapshot(server: int, upstream: int) -> dict[str, float]:
    return {
        "server": cpu_seconds(server),
        "loader": loader_seconds(),
        "upstream": cpu_seconds(upstream),
        "PostgreSQL": named_cpu_seconds("postgres"),
        "Redis": named_cpu_seconds("redis-server"),
        "machine": busy_seconds(),
    }


@dataclass(frozen=True)
class Result:
    cell: Cell
    cores: dict[str, float]  # cores each group kept busy, "machine" the whole
    transactions: float  # PostgreSQL transactions per request
    redis: float  # Redis commands per request
    reruns: int = 0  # how many times its round's pair was run again for a hypervisor that took too much


async def one_cell(server: Server, cap: float, args: argparse.Namespace, upstream: Child) -> Result:
    set_cap(server.group, server.workers * cap)
    warm = await measure(server.load, connections=args.connections, seconds=WARM_SECONDS)
    on_postgres = bool(server.database)
    if on_postgres:
        await asyncio.sleep(STATS_SETTLE)
        xacts = await transactions(args.postgres, server.database)
        commands = await redis_commands(args.redis)
    before = snapshot(server.child.pid, upstream.pid)
    cell = await measure(server.load, connections=args.connections, seconds=args.seconds)
    after = snapshot(server.child.pid, upstream.pid)
    server.answered += warm.operations - warm.errors + cell.operations - cell.errors
    if on_postgres:
        await asyncio.sleep(STATS_SETTLE)
        xacts = await transactions(args.postgres, server.database) - xacts
        commands = await redis_commands(args.redis) - commands - 1
    else:
        xacts = commands = 0
    spent = {group: after[group] - before[group] for group in before}
    spent["other"] = spent["machine"] - sum(spent[group] for group in GROUPS[:-1])
    cell = replace(cell, server_cpu_seconds=spent["server"])
    requests = max(cell.operations, 1)
    cores = {group: seconds / cell.seconds for group, seconds in spent.items()}
    return Result(cell, cores, xacts / requests, commands / requests)


async def one_pair(
    servers: list[Server], cap: float, args: argparse.Namespace, upstream: Child
) -> list[Result]:
    """A round's cells, one server after the other, the other idle meanwhile."""
    return [await one_cell(server, cap, args, upstream) for server in servers]


def table(title: str, results: dict[int, list[Result]], args: argparse.Namespace) -> list[str]:
    cores = os.cpu_count()
    store = "PostgreSQL + Redis" if args.store == "postgres" else "SQLite, no Redis"
    lines = [
        f"{title}: {store}, passthrough ({MODEL}), {args.connections} connections, {args.rounds} rounds of"
        f" {args.seconds:g} s, {cores} cores, {results[1][0].cell.tool}",
        "",
        "| workers | requests/s | p50 ms | p99 ms | server CPU ms/request | PostgreSQL xacts/request "
        "| Redis commands/request | "
        + " | ".join(f"cores: {group}" for group in GROUPS)
        + f" | cores: machine (of {cores}) | CPU stolen (`common.stolen_share`), most of a kept cell"
        " | cells run again | errors |",
        "|---|" + "--:|" * (10 + len(GROUPS)),
    ]
    for workers, runs in results.items():
        cells = [r.cell for r in runs]
        median = statistics.median
        busy = " | ".join(f"{median(r.cores[g] for r in runs):.2f}" for g in (*GROUPS, "machine"))
        lines.append(
            f"| {workers} | {median(c.rate for c in cells):.0f} | {median(c.p50_ms for c in cells):.1f} "
            f"| {median(c.p99_ms for c in cells):.1f} | {median(c.cpu_ms_per_op for c in cells):.2f} "
            f"| {median(r.transactions for r in runs):.2f} | {median(r.redis for r in runs):.2f} "
            f"| {busy} | {max(c.stolen for c in cells):.1%} | {sum(r.reruns for r in runs)} "
            f"| {sum(c.errors for c in cells)} |"
        )
    ratios = [two.cell.rate / one.cell.rate for one, two in zip(results[1], results[2], strict=True)]
    lines += [
        "",
        f"{title}: ratio 2 workers / 1 worker, requests/s: {statistics.median(ratios):.2f}x"
        f" (median of the rounds': {', '.join(f'{ratio:.2f}' for ratio in ratios)})",
    ]
    return lines


async def run(args: argparse.Namespace) -> str:
    caps = caps_to_run(args.cap)
    modes = {"uncapped": 0.0, **{f"capped at {cap:g} core per worker": cap for cap in caps}}
    results: dict[str, dict[int, list[Result]]] = {mode: {1: [], 2: []} for mode in modes}
    if args.store == "postgres":
        await services_answer(args.postgres, args.redis)
    folder = Path(tempfile.mkdtemp(prefix="bw-workers-"))
    async with contextlib.AsyncExitStack() as stack:
        stack.callback(shutil.rmtree, folder, ignore_errors=True)
        upstream, upstream_url = start_upstream(folder, 0.0)
        stack.callback(upstream.stop)
        servers = [await start_server(stack, folder, workers, args, upstream_url) for workers in (1, 2)]
        for index in range(args.rounds):
            order = servers if index % 2 == 0 else servers[::-1]
            for mode, cap in modes.items():
                pair = partial(one_pair, order, cap, args, upstream)
                kept, again = await unstolen(
                    pair, limit=args.steal_limit, tries=args.tries, stolen=attrgetter("cell.stolen")
                )
                for server, result in zip(order, kept, strict=True):
                    results[mode][server.workers].append(replace(result, reruns=again))
        logged: dict[int, int] = {}
        for server in servers if args.store == "sqlite" else []:
            server.child.stop()  # its last calls committed as it stops
            logged[server.workers] = logged_calls(server.home) - server.logged_before
    lines: list[str] = []
    for mode in modes:
        lines += [*table(mode, results[mode], args), ""]
    for server in servers if args.store == "sqlite" else []:
        count = logged[server.workers]
        lines.append(
            f"calls, {server.workers} worker(s): {server.answered} answered (as the loader counted), "
            f"{count} in the log ({count - server.answered:+d}: "
            f"{'every one logged' if count >= server.answered else 'SOME MISSING'})"
        )
    return "\n".join(lines)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seconds", type=float, default=5.0)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--connections", type=int, default=10)
    parser.add_argument(
        "--cap",
        type=float,
        nargs="+",
        default=None,
        help=f"cores per worker in the capped runs, one run per value (0: uncapped only; default "
        f"{DEFAULT_CAP:g} where the cgroup v1 cpu controller can be used, else uncapped only)",
    )
    default_pg = os.environ.get("BENCHWARMERS_TEST_POSTGRES_URL", "postgresql://postgres@127.0.0.1:5432/test")
    parser.add_argument("--postgres", default=default_pg, help="an admin URL; a database is made per server")
    parser.add_argument("--redis", default="redis://127.0.0.1:6379/0")
    parser.add_argument("--store", choices=("postgres", "sqlite"), default="postgres")
    add_steal_arguments(parser, "a round's two cells")
    print(asyncio.run(run(parser.parse_args())))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
