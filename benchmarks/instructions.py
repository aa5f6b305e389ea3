"""The server's instructions per request, counted under callgrind: a figure
the machine's load does not move, where CPU and wall times on a shared box
move the same cell by ten points between runs (docs/benchmarks.md, issue 41).

Only `benchwarmers serve` runs under `valgrind --tool=callgrind`; the instant
upstream (`upstream.py`) and the client (httpx, a fixed count of requests)
run outside it, so they cost the count nothing. Valgrind starts the server
uninstrumented (`--instr-atstart=no`): start-up and the warm-up are not
counted. Per ask, each key's client warms up, the server goes idle, and
then each window zeroes the counters and turns instrumentation on
(`callgrind_control -z`, `-i on`), sends `--requests` requests over
`--connections` connections, waits `--settle` (the server's) seconds for
their trailing work (the call log's commit), dumps and turns it off. A
cell's figure is the instructions of every server thread in its window
over its requests; the main thread (the event loop) is shown apart.

The server's clocks run slow (libfaketime, `--speed`, its sleeps and
timeouts alike), as valgrind slows the server (50-200 times on a loaded
box). With them at full speed, what the server does by the clock (a
cache's read every 2 s, the budget spend's write every second, the call
log's commit 50 ms after a call) fell on a few requests instead of
hundreds: it was half of a passthrough's count, and moved a cell by 5-30%
with the box's load, a slower window holding more of it. Slowed, a cell
mostly repeats within 0.3%, and the clock's work falls on a request about
as it does at full speed. Cells of one ask run A B B A, so a drift of the server over
the run (its call log grows) falls on both keys alike.

The asks, each with the gateway key required (`require_key` on, as a server
beyond loopback runs): passthrough in route mode (`bench/solo:route`), a
one-seat panel (`bench/solo`), a three-seat panel (`bench/trio`) and that
panel streamed; each with a key with no budget and a key with budgets (USD
and tokens, per day and per month, far above the load: issue 41's bound is
at most 5% more a request). `--tree PATH` (repeatable) measures another
checkout's `src` the same way (`git archive 3fd40b0 | tar -x -C /tmp/base`),
on the key with no budget where the tree has no budgets.

The configured ask (`--asks configured`, issue 37) is `vs_litellm.py`'s
configured scenario counted: a gateway key with a per-minute rate asking
`bench/kept:route` (endpoint `limited` on the upstream's `/limited/v1`,
whose replies carry rate-limit headers the limiter learns; the user's
limits on that endpoint and model, far above the load), its cells
alternated with the plain key asking `bench/solo:route` on the same server.

`--conversation KB` asks every cell (the floor's too) with an agent's
conversation of about KB kilobytes of prose instead of one line, as an
agent resends its whole conversation every turn: what a request costs per
byte of it.

`--floor` counts `floor.py` (the same Starlette app on our own outbound
client: the least this stack costs) the same way, under callgrind with its
clocks slowed, asked as `vs_litellm.py` asks it: how many of our
instructions a request are above what the stack itself spends.

    .venv/bin/python benchmarks/instructions.py [--requests 100] [--rounds 2]
        [--asks route,solo,trio,stream,configured] [--tree /tmp/base] [--no-self] [--floor] [--keep DIR]
        [--conversation KB]

Needs valgrind and libfaketime (`apt-get install valgrind faketime`). No
lock is needed (load does not change the counts); run one at a time
(valgrind is heavy).
"""

from __future__ import annotations

import argparse
import asyncio
import inspect
import json
import os
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import httpx
from common import Child, Load, bench_writers, free_port, send_count, serve_benchwarmers

ASKS = {
    "route": ("passthrough, route mode (bench/solo:route)", "bench/solo:route", False),
    "solo": ("one-seat panel (bench/solo)", "bench/solo", False),
    "trio": ("three-seat panel (bench/trio)", "bench/trio", False),
    "stream": ("three-seat panel, streamed (bench/trio)", "bench/trio", True),
    "configured": (
        "configured (rate key: bench/kept:route; plain: bench/solo:route)",
        "",
        False,
    ),
}
PLAIN, BUDGETED, CONFIGURED = "no budget", "budget on the key", "rate on the key"
# The configured ask: each key and what it asks (`vs_litellm.set_up_bench`'s
# limited model), every other ask sending its own model with PLAIN and BUDGETED.
CONFIGURED_LOADS = ((PLAIN, "bench/solo:route"), (CONFIGURED, "bench/kept:route"))
FAKETIME = "/usr/lib/x86_64-linux-gnu/faketime/libfaketimeMT.so.1"
# vs_litellm's models; its module is imported only in this process, not by
# `set_up`'s child, where an older checkout lacks what it imports.
THREE = ("alpha", "beta", "gamma")
HERE = Path(__file__).resolve().parent
SELF = HERE.parent
FLOOR = "floor"  # the floor's one ask, and its one key's name


async def set_up(home: Path, upstream: str) -> dict[str, str]:
    """The bench, in the checkout this process imports: models on the
    instant upstream (priced, where the checkout prices models), keys
    required, a key with no budget, the configured ask's key with a rate
    and its limited model and, where the checkout has budgets, a key with
    them; the secrets by key."""
    from benchwarmers.identity.keys import create_key
    from benchwarmers.runtime import Runtime
    from benchwarmers.store.settings import MAX_PANELS, MAX_PANELS_PER_KEY, REQUIRE_KEY, Settings

    add_endpoint, add_model, add_collection = bench_writers()
    priced = "price_in" in inspect.signature(add_model).parameters
    prices = {"price_in": 0.15, "price_out": 0.6} if priced else {}
    async with Runtime.open(home) as runtime:
        store = runtime.store
        await add_endpoint(store, "instant", upstream, "openai", needs_key=False)
        for alias in THREE:
            await add_model(store, alias, "instant", alias, **prices)  # type: ignore[arg-type]
        await add_collection(store, "solo", ["alpha"])
        await add_collection(store, "trio", list(THREE))
        settings = Settings(store)
        await settings.set(REQUIRE_KEY, True)
        # Panels a key may hold at once above the connections, so no cap refuses an ask.
        await settings.set(MAX_PANELS, 1000)
        await settings.set(MAX_PANELS_PER_KEY, 1000)
        secrets = {PLAIN: (await create_key(store, "plain"))[1]}
        await _set_up_configured(store, upstream, secrets)
        try:
            from benchwarmers.limits.budgets import set_budget
        except ImportError:  # a checkout from before budgets
            return secrets
        secrets[BUDGETED] = (await create_key(store, "budgeted"))[1]
        for period in ("day", "month"):
            await set_budget(store, "key", "budgeted", period, usd=1_000_000.0, tokens=10**14)
    return secrets


async def _set_up_configured(store: Any, upstream: str, secrets: dict[str, str]) -> None:
    """`vs_litellm.set_up_bench`'s configured scenario (its limits, its key's
    rate), where the checkout has user limits."""
    from benchwarmers.identity.keys import create_key

    add_endpoint, add_model, add_collection = bench_writers()
    try:
        from benchwarmers.limits.user_limits import set_limits
    except ImportError:  # a checkout from before user limits
        return
    from vs_litellm import ENDPOINT_LIMITS, KEY_RATE, MODEL_LIMITS

    limited = upstream.removesuffix("/v1") + "/limited/v1"
    await add_endpoint(store, "limited", limited, "openai", needs_key=False)
    await add_model(store, "delta", "limited", "alpha")
    await add_collection(store, "kept", ["delta"])
    await set_limits(store, "limited", "", ENDPOINT_LIMITS)
    await set_limits(store, "limited", "alpha", MODEL_LIMITS)
    secrets[CONFIGURED] = (await create_key(store, "configured", requests_per_minute=KEY_RATE))[1]


def tree_env(tree: Path | None) -> dict[str, str]:
    return {} if tree is None else {"PYTHONPATH": str(tree / "src")}


def set_up_in(tree: Path | None, home: Path, upstream: str) -> dict[str, str]:
    """`set_up` run by the checkout measured (its schema, its code), in a child."""
    done = subprocess.run(
        [sys.executable, __file__, "--set-up", str(home), upstream],
        env={**os.environ, **tree_env(tree)},
        capture_output=True,
        text=True,
        check=False,
    )
    if done.returncode:
        raise SystemExit(f"set-up failed in {tree or SELF}:\n{done.stderr[-3000:]}")
    secrets: dict[str, str] = json.loads(done.stdout.strip().splitlines()[-1])
    return secrets


@dataclass
class Count:
    """One cell: instructions in its window (all threads, and the main one), per request."""

    requests: int
    total: int
    main: int
    errors: int
    seconds: float  # the window's wall time

    @property
    def per_request(self) -> float:
        return self.total / max(self.requests, 1)

    @property
    def main_per_request(self) -> float:
        return self.main / max(self.requests, 1)


@dataclass
class Tree:
    label: str
    name: str  # in the kept dumps' names
    path: Path | None  # None: this checkout
    counts: dict[tuple[str, str], list[Count]] = field(default_factory=dict)
    commit: str = ""


class Counted:
    """`benchwarmers serve` under callgrind, uninstrumented until a window opens."""

    def __init__(
        self, folder: Path, tree: Path | None, upstream: str, *, speed: float, keep: Path | None = None
    ) -> None:
        self.folder = folder
        self.keep = keep
        self.speed = speed
        home = folder / "home"
        self.secrets = set_up_in(tree, home, upstream)
        self.out = folder / "callgrind.out"
        self.child, base = serve_benchwarmers(
            folder, home, under=self.valgrind(), env={**tree_env(tree), **self.slowed()}
        )
        self.url = f"{base}/v1/chat/completions"
        from vs_litellm import body

        self.child.wait_ready(self.url, body("bench/solo"), timeout=600, headers=self.auth(PLAIN))
        self.dumps = 0

    def valgrind(self) -> list[str]:
        return [
            "valgrind",
            "--tool=callgrind",
            "--instr-atstart=no",
            "--separate-threads=yes",
            f"--callgrind-out-file={self.out}",
        ]

    def slowed(self) -> dict[str, str]:
        """The server's clocks, sleeps and timeouts slowed as valgrind slows it (the docstring)."""
        return {"LD_PRELOAD": FAKETIME, "FAKETIME": f"+0 x{self.speed:g}"}

    def auth(self, key: str) -> dict[str, str]:
        return {"authorization": f"Bearer {self.secrets[key]}"}

    def control(self, *args: str) -> None:
        subprocess.run(
            ["callgrind_control", *args, str(self.child.pid)], check=True, capture_output=True, timeout=120
        )

    async def cells(
        self,
        loads: list[tuple[str, Load]],
        *,
        rounds: int,
        connections: int,
        requests: int,
        warm_up: int,
        settle: float,
        name: str,
    ) -> list[tuple[str, Count]]:
        """Each load (by key) `rounds` times, in the order A B B A A B ...
        (a drift of the server over the run, such as its call log growing,
        falls on both sides alike); one client per load, warmed up once."""
        settle /= self.speed  # the server's seconds, in ours
        limits = httpx.Limits(max_connections=connections, max_keepalive_connections=connections)
        clients = [httpx.AsyncClient(limits=limits, timeout=600) for _ in loads]
        counts = []
        try:
            errors = [
                await send_count(c, load, connections=connections, count=warm_up)
                for c, (_k, load) in zip(clients, loads, strict=True)
            ]
            await asyncio.sleep(settle)  # the warm-up's trailing work, uncounted
            for round_ in range(rounds):
                order = list(zip(clients, loads, strict=True))
                for client, (key, load) in order if round_ % 2 == 0 else order[::-1]:
                    cell = f"{name}-{key.replace(' ', '_')}-{round_ + 1}"
                    count = await self.window(client, load, connections, requests, settle, cell)
                    counts.append((key, count))
        finally:
            for client in clients:
                await client.aclose()
        if any(errors):
            raise RuntimeError(f"the warm-up had errors: {errors}")
        return counts

    async def window(
        self, client: httpx.AsyncClient, load: Load, connections: int, requests: int, settle: float, name: str
    ) -> Count:
        """Instructions while `requests` are answered and their trailing work done."""
        self.control("-z")
        self.control("-i", "on")
        opened = time.monotonic()
        errors = await send_count(client, load, connections=connections, count=requests)
        await asyncio.sleep(settle)
        self.control("-d")
        seconds = time.monotonic() - opened
        self.control("-i", "off")
        self.dumps += 1
        total = main = 0
        for path in self.folder.glob(f"callgrind.out.{self.dumps}-*"):
            spent = _summary(path)
            total += spent
            if path.name.endswith("-01"):
                main = spent
            if self.keep is not None:  # for callgrind_annotate
                self.keep.mkdir(parents=True, exist_ok=True)
                shutil.move(path, self.keep / f"{name}.thread{path.name.rsplit('-', 1)[1]}.callgrind")
            else:
                path.unlink()
        if not total:
            raise RuntimeError(f"callgrind wrote no dump {self.dumps}:\n{self.child.log_tail()}")
        return Count(requests, total, main, errors, seconds)

    def stop(self) -> None:
        self.child.stop()


class CountedFloor(Counted):
    """`floor.py` under callgrind, as `Counted` runs ours: no store, no key."""

    def __init__(self, folder: Path, upstream: str, *, speed: float, keep: Path | None = None) -> None:
        self.folder = folder
        self.keep = keep
        self.speed = speed
        self.secrets = {FLOOR: ""}
        self.out = folder / "callgrind.out"
        port = free_port()
        script = [sys.executable, str(HERE / "floor.py"), "--port", str(port), "--upstream", upstream]
        self.child = Child(FLOOR, [*self.valgrind(), *script], env=self.slowed(), cwd=folder)
        self.url = f"http://127.0.0.1:{port}/v1/chat/completions"
        from vs_litellm import body

        self.child.wait_ready(self.url, body("alpha"), timeout=600)
        self.dumps = 0

    def auth(self, key: str) -> dict[str, str]:
        return {}


def conversation(kilobytes: int) -> list[dict[str, str]]:
    """An agent's conversation of about `kilobytes` KB, as a client resends
    it every turn: a system prompt and turns of prose, 15 words a line and
    15 lines a turn, from a fixed seed. Prose, no code: every rule that
    reads a request's text (its shape: `panel/shapes.py`) reads all of it."""
    rng = random.Random(37)
    words = [
        "the",
        "quick",
        "brown",
        "fox",
        "jumps",
        "over",
        "a",
        "lazy",
        "dog",
        "and",
        "writes",
        "some",
        "prose",
        "about",
        "nothing",
        "much",
    ]

    def lines(count: int) -> str:
        return "\n".join(" ".join(rng.choice(words) for _ in range(15)) for _ in range(count))

    messages = [{"role": "system", "content": lines(20)}]
    while sum(len(m["content"]) for m in messages) < kilobytes * 1024:
        role = "user" if len(messages) % 2 else "assistant"
        messages.append({"role": role, "content": lines(15)})
    messages.append({"role": "user", "content": "Say hello in five words."})
    return messages


def asked(model: str, args: argparse.Namespace) -> dict[str, Any]:
    """`vs_litellm.py`'s request body, or with `--conversation` a long one."""
    from vs_litellm import body

    if not args.conversation:
        return body(model)
    return {"model": model, "messages": conversation(args.conversation)}


def measure_floor(upstream: str, args: argparse.Namespace) -> list[Count]:
    """The floor's instructions a request, asked as `vs_litellm.py` asks it."""

    with tempfile.TemporaryDirectory(prefix="bw-counted-floor-") as temp:
        server = CountedFloor(Path(temp), upstream, speed=args.speed, keep=args.keep)
        try:
            counted = asyncio.run(
                server.cells(
                    [(FLOOR, Load(server.url, [asked("alpha", args)], {}))],
                    rounds=args.rounds,
                    connections=args.connections,
                    requests=args.requests,
                    warm_up=args.warm_up,
                    settle=args.settle,
                    name=FLOOR,
                )
            )
        finally:
            server.stop()
    for _key, count in counted:
        print(
            f"floor | {count.per_request:,.0f} instructions/request "
            f"(main thread {count.main_per_request:,.0f}) | errors {count.errors}",
            file=sys.stderr,
            flush=True,
        )
    return [count for _key, count in counted]


def _summary(path: Path) -> int:
    for line in path.read_text(errors="replace").splitlines():
        if line.startswith("summary:"):
            return int(line.split()[1])
    return 0


def commit_of(tree: Path | None) -> str:
    where = str(tree or SELF)
    done = subprocess.run(
        ["git", "-C", where, "rev-parse", "--short", "HEAD"], capture_output=True, text=True
    )
    dirty = subprocess.run(
        ["git", "-C", where, "status", "--porcelain", "src"], capture_output=True, text=True
    )
    if done.returncode or (tree is not None and not (tree / ".git").exists()):
        return "(archive)"
    return done.stdout.strip() + (" + changes" if dirty.stdout.strip() else "")


def measure_tree(tree: Tree, upstream: str, args: argparse.Namespace) -> None:
    with tempfile.TemporaryDirectory(prefix="bw-counted-") as temp:
        server = Counted(Path(temp), tree.path, upstream, speed=args.speed, keep=args.keep)
        try:
            for ask in args.asks:
                label, model, stream = ASKS[ask]
                if ask == "configured":
                    if CONFIGURED not in server.secrets:
                        print(
                            f"{tree.label}: no user limits in this checkout, configured skipped",
                            file=sys.stderr,
                        )
                        continue
                    sent = list(CONFIGURED_LOADS)
                else:
                    sent = [(key, model) for key in server.secrets if key in args.keys and key != CONFIGURED]
                loads = [
                    (
                        key,
                        Load(
                            server.url,
                            [{**asked(m, args), "stream": True} if stream else asked(m, args)],
                            server.auth(key),
                        ),
                    )
                    for key, m in sent
                ]
                counted = asyncio.run(
                    server.cells(
                        loads,
                        rounds=args.rounds,
                        connections=args.connections,
                        requests=args.requests,
                        warm_up=args.warm_up,
                        settle=args.settle,
                        name=f"{tree.name}-{ask}",
                    )
                )
                for key, count in counted:
                    tree.counts.setdefault((ask, key), []).append(count)
                    print(
                        f"{tree.label} | {label} | {key} | "
                        f"{count.per_request:,.0f} instructions/request "
                        f"(main thread {count.main_per_request:,.0f}) | "
                        f"{count.total:,} in {count.seconds:.1f} s | errors {count.errors}",
                        file=sys.stderr,
                        flush=True,
                    )
        finally:
            server.stop()


def spread(counts: list[Count]) -> str:
    values = [c.per_request for c in counts]
    if len(values) < 2:
        return "-"
    return f"{(max(values) - min(values)) / statistics.mean(values) * 100:.2f}%"


def render(trees: list[Tree], args: argparse.Namespace, floor: list[Count] | None = None) -> str:
    lines = []
    if floor:
        mean = statistics.mean(c.per_request for c in floor)
        main = statistics.mean(c.main_per_request for c in floor)
        lines += [
            f"\nThe floor (floor.py): {mean:,.0f} instructions per request (main thread {main:,.0f}), "
            f"spread {spread(floor)}, errors {sum(c.errors for c in floor)}",
        ]
    for tree in trees:
        lines += [
            f"\n{tree.label} ({tree.commit}): instructions per request, mean of {args.rounds} rounds "
            f"of {args.requests} requests at {args.connections} connections "
            "(spread: max - min over the mean)\n",
            "| ask | key | all threads | main thread | spread | errors | / no budget (plain key) |",
            "|---|---|---:|---:|---:|---:|---:|",
        ]
        for ask in args.asks:
            plain = tree.counts.get((ask, PLAIN))
            for key in (PLAIN, BUDGETED, CONFIGURED):
                counts = tree.counts.get((ask, key))
                if not counts:
                    continue
                mean = statistics.mean(c.per_request for c in counts)
                main = statistics.mean(c.main_per_request for c in counts)
                versus = "-"
                if key != PLAIN and plain:
                    ratio = mean / statistics.mean(c.per_request for c in plain)
                    versus = f"{ratio:.4f} ({(ratio - 1) * 100:+.2f}%)"
                errors = sum(c.errors for c in counts)
                figures = f"{mean:,.0f} | {main:,.0f} | {spread(counts)} | {errors} | {versus}"
                lines.append(f"| {ASKS[ask][0]} | {key} | {figures} |")
        if floor:
            floor_mean = statistics.mean(c.per_request for c in floor)
            over = [
                f"{ask} {statistics.mean(c.per_request for c in tree.counts[(ask, PLAIN)]) / floor_mean:.2f}x"
                for ask in args.asks
                if (ask, PLAIN) in tree.counts
            ]
            lines.append(f"\nNo budget, against the floor: {', '.join(over)}")
    if len(trees) > 1:
        first = trees[0]
        lines += [
            f"\nNo budget, against {first.label} ({first.commit}): instructions per request\n",
            "| ask | "
            + " | ".join(t.label for t in trees)
            + " | "
            + " | ".join(f"{t.label} / {first.label}" for t in trees[1:])
            + " |",
            "|---|" + "---:|" * (2 * len(trees) - 1),
        ]
        for ask in [a for a in args.asks if all((a, PLAIN) in t.counts for t in trees)]:
            means = [statistics.mean(c.per_request for c in t.counts[(ask, PLAIN)]) for t in trees]
            ratios = [f"{m / means[0]:.4f} ({(m / means[0] - 1) * 100:+.2f}%)" for m in means[1:]]
            lines.append(
                f"| {ASKS[ask][0]} | "
                + " | ".join(f"{m:,.0f}" for m in means)
                + " | "
                + " | ".join(ratios)
                + " |"
            )
    return "\n".join(lines)


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--requests", type=int, default=100, help="requests counted per cell")
    parser.add_argument("--warm-up", type=int, default=30, help="requests before each cell, not counted")
    parser.add_argument("--rounds", type=int, default=2, help="cells per ask and key (their spread is shown)")
    parser.add_argument("--connections", type=int, default=10)
    parser.add_argument(
        "--settle", type=float, default=0.06, help="the server's seconds for trailing work after a window"
    )
    parser.add_argument(
        "--speed",
        type=float,
        default=0.002,
        help="how fast the server's clocks run (libfaketime; 1: as ours)",
    )
    parser.add_argument("--asks", default="route,solo,trio", help=f"of {','.join(ASKS)}")
    parser.add_argument(
        "--keys",
        default=f"{PLAIN},{BUDGETED}",
        help="of the keys, by name (the budget's where the tree has it)",
    )
    parser.add_argument("--tree", type=Path, action="append", default=[], help="another checkout (its src/)")
    parser.add_argument("--no-self", action="store_true", help="measure only the --tree checkouts")
    parser.add_argument("--floor", action="store_true", help="count floor.py too")
    parser.add_argument("--keep", type=Path, help="keep each cell's callgrind dumps in this folder")
    parser.add_argument(
        "--conversation",
        type=int,
        default=0,
        metavar="KB",
        help="ask with an agent's conversation of about this many KB of prose (0: vs_litellm.py's one line)",
    )
    parser.add_argument("--set-up", nargs=2, metavar=("HOME", "UPSTREAM"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.set_up:
        print(json.dumps(asyncio.run(set_up(Path(args.set_up[0]), args.set_up[1]))))
        return 0
    args.asks = [a.strip() for a in args.asks.split(",") if a.strip()]
    args.keys = [k.strip() for k in args.keys.split(",") if k.strip()]
    if unknown := [a for a in args.asks if a not in ASKS]:
        parser.error(f"unknown ask {', '.join(unknown)}: pick from {', '.join(ASKS)}")
    if not shutil.which("valgrind") or not shutil.which("callgrind_control"):
        raise SystemExit("valgrind (with callgrind_control) is not installed: apt-get install valgrind")
    if not Path(FAKETIME).exists():
        raise SystemExit(f"{FAKETIME} is not installed: apt-get install faketime")
    trees = [] if args.no_self else [Tree("this checkout", "self", None)]
    trees += [Tree(str(path), path.resolve().name, path.resolve()) for path in args.tree]
    started = datetime.now(UTC)
    with tempfile.TemporaryDirectory(prefix="bw-counted-up-") as temp:
        upstream_child: Child
        from vs_litellm import start_upstream

        upstream_child, upstream = start_upstream(Path(temp), 0.0)
        floor = None
        try:
            if args.floor:
                floor = measure_floor(upstream, args)
            for tree in trees:
                tree.commit = commit_of(tree.path)
                measure_tree(tree, upstream, args)
        finally:
            upstream_child.stop()
    load = os.getloadavg()
    print(
        f"{started:%Y-%m-%d %H:%M} UTC, {(datetime.now(UTC) - started).total_seconds() / 60:.0f} min; "
        f"load average at the end {load[0]:.1f} (counts do not depend on it)"
    )
    print(render(trees, args, floor))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
