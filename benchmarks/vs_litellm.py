"""Our gateway beside LiteLLM's proxy: requests/s, latency and memory.

Both stand in front of the same instant upstream (`upstream.py`: a fixed
completion straight from asyncio), each as one server process, so what is
measured is each gateway's own cost per request. Shared machines make
absolute numbers noise; the ratios (ours / LiteLLM) are what to read.

Scenarios, each at 1 and 10 connections (`--connections`):

* passthrough: one model behind the gateway, twice: route mode
  `bench/solo:route` (one member) and a one-seat panel `bench/solo`;
  LiteLLM's is its model `alpha`, the floor's any body.
* panel of 3: our `bench/trio` (three seats on the upstream). LiteLLM has no
  panel; what a client would do instead is ask three models in turn, so a
  later row times exactly that (three sequential calls as one operation)
  against `bench/trio`, both driven by the same Python loader, since wrk
  cannot time several requests as one.
* a panel seating 2 of its 3 members by their record (`bench/pick`), a
  merged reply (`bench/trio:merged`: three seats, then a merger), and
  route mode over 3 members (`bench/trio:route`), ours alone: each ranks
  members by their record, which is where a long call log shows
  (`--history`).

Beside both runs **the floor** (`floor.py`: a raw Starlette app forwarding
to the upstream through our own outbound client, `providers/outbound.py`;
no routing, keys, formats or store), started in the same run on the same
upstream: the passthrough rows also say how our CPU per request compares
with the least a Python gateway on this stack can cost. Issue 37 adds the
configured scenario (a key with a rate, endpoint, model and learned
limits, beside the same server without them), TensorZero's and Portkey's
gateways beside the passthrough when installed (`peers.py`; one line on
stderr for each that is not, or does not come up) and `--sustained`. A
last table holds the targets: issue 15's (≥10x LiteLLM's requests/s,
≤1/10 its CPU per request, ≤1/5 its p99) and issue 37's (CPU ≤2x the
floor's, ≤1.3x TensorZero's, ≤1/3 Portkey's; configured ≤1.2x ours
without limits and ≥20x LiteLLM's requests/s), each ratio from this one run.

Every cell runs `--rounds` times, ours, LiteLLM's and the floor's back to
back, ours and the floor's always next to each other (`_unit`), and the
table shows medians, the ratios being medians of each round's ratio. Beside
wall times it shows the server's own CPU per request (from /proc), which
other people's load on the machine disturbs far less. Resident memory is
read from /proc (the whole process tree) after start-up and after all the
load. A cell during which the hypervisor stole more than `--steal-limit` of
the CPU wanted (`common.stolen_share`) is run again, up to `--tries` runs
in all, the least stolen kept: the same rule for every server, shown in the
targets table. A round's cells of a scenario (ours, the floor's and
LiteLLM's) are run again together, so every ratio a target reads is of
cells taken within seconds of each other.

    .venv/bin/python benchmarks/vs_litellm.py [--seconds 4] [--rounds 3] [--connections 1,10]
        [--litellm /work/litellm-venv/bin/litellm | $LITELLM_BIN] [--history 300000] [--no-wrk]
        [--only passthrough] [--steal-limit 0.05] [--tries 4]

LiteLLM runs from its own environment (it is not one of our dependencies):
its column is skipped, saying so in one line, when the command is not
found or its proxy does not come up.
"""

from __future__ import annotations

import argparse
import asyncio
import math
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime, timedelta
from functools import partial
from operator import attrgetter
from pathlib import Path
from typing import Any

from common import (
    Cell,
    Child,
    Load,
    add_steal_arguments,
    bench_writers,
    free_port,
    insert_verdicts,
    measure,
    peak_rss_mb,
    rss_mb,
    serve_benchwarmers,
    unstolen,
    wrk_path,
    wrk_times,
)
from peers import Peer, start_portkey, start_tensorzero
from sqlalchemy import insert
from sustained import SLICE_SECONDS, sustained

from benchwarmers.calls.call_ids import new_ask_id, new_call_id
from benchwarmers.identity.keys import create_key
from benchwarmers.limits.user_limits import set_limits
from benchwarmers.runtime import Runtime
from benchwarmers.store import schema

HERE = Path(__file__).resolve().parent
MESSAGES = [{"role": "user", "content": "Say hello in five words."}]
THREE = ("alpha", "beta", "gamma")
LITELLM_ENV = {
    "LITELLM_LOCAL_MODEL_COST_MAP": "True",  # no cost-map download: the machine may be offline
    "LITELLM_DANGEROUSLY_PERMIT_WEAK_OR_UNSET_MASTER_KEY": "true",
    "LITELLM_LOG": "ERROR",
}
WARM_UP_SECONDS = 2.0


def body(model: str) -> dict[str, Any]:
    return {"model": model, "messages": MESSAGES}


@dataclass
class Server:
    name: str
    child: Child
    base: str
    ready_seconds: float
    rss_start: float = 0.0
    rss_end: float = 0.0
    rss_peak: float = 0.0
    # Ours: the gateway key with a rate the configured scenario sends.
    key: str = ""

    @property
    def chat_url(self) -> str:
        return f"{self.base}/v1/chat/completions"


@dataclass
class Row:
    scenario: str
    connections: int
    ours: list[Cell]  # one per round
    theirs: list[Cell] | None
    floor: list[Cell] | None = None
    # Other servers in the same unit, by name: the compiled and Node peers
    # beside a passthrough, ours without limits beside the configured scenario.
    beside: dict[str, list[Cell]] = field(default_factory=dict)


# ------------------------------------------------------------------ servers


# Limits set far above any load here, so none refuses and what shows is what
# keeping them costs: on the endpoint and on the model, as a user sets them.
ENDPOINT_LIMITS = {"rpm": 100_000_000, "tpm": 2_000_000_000, "rpd": 1_000_000_000}
MODEL_LIMITS = {"rpm": 100_000_000, "tpm": 2_000_000_000}
KEY_RATE = 100_000_000  # the gateway key's requests a minute


async def set_up_bench(home: Path, upstream: str, history: int = 0, database_url: str | None = None) -> str:
    """The bench every scenario asks; returns the secret of the gateway key
    with a rate that the configured scenario sends. Configured: endpoint
    `limited` on the upstream's `/limited/v1` (its replies carry rate-limit
    headers, which the limiter learns), model `delta` on it, collection
    `kept`, the user's limits on both, far above the load."""
    add_endpoint, add_model, add_collection = bench_writers()
    async with Runtime.open(home, database_url) as runtime:
        await add_endpoint(runtime.store, "instant", upstream, "openai", needs_key=False)
        for alias in THREE:
            await add_model(runtime.store, alias, "instant", alias)
        await add_collection(runtime.store, "solo", ["alpha"])
        await add_collection(runtime.store, "trio", list(THREE))
        await add_collection(runtime.store, "pick", list(THREE), seats=2)
        limited = upstream.removesuffix("/v1") + "/limited/v1"
        await add_endpoint(runtime.store, "limited", limited, "openai", needs_key=False)
        await add_model(runtime.store, "delta", "limited", "alpha")
        await add_collection(runtime.store, "kept", ["delta"])
        await set_limits(runtime.store, "limited", "", ENDPOINT_LIMITS)
        await set_limits(runtime.store, "limited", "alpha", MODEL_LIMITS)
        _info, secret = await create_key(runtime.store, "bench", requests_per_minute=KEY_RATE)
        if history:
            await add_history(runtime, history)
    return secret


async def add_history(runtime: Runtime, calls: int) -> None:
    """A bench in use for a while: `calls` past panel seats of bench/trio over
    the last 90 days, one in 20 with a verdict (what a gateway's per-ask
    queries over the call log have to get through)."""
    now = datetime.now(UTC)
    rows, verdicts = [], []
    ask_id = ""
    for index in range(calls):
        at = now - timedelta(seconds=index * 90 * 86400 / calls)
        # Ids as the call log makes them, so its indexes take them as a real log's.
        call_id = new_call_id()
        ask_id = new_ask_id() if index % 3 == 0 else ask_id
        rows.append(
            {
                "id": call_id,
                "at": at,
                "kind": "seat",
                "alias": THREE[index % 3],
                "endpoint": "instant",
                "served": THREE[index % 3],
                "task": "panel seat (bench/trio, short)",
                "collection": "trio",
                "shape": "short",
                "seat": f"seat {index % 3 + 1}",
                "ask_id": ask_id,
                "status": "ok",
                "seconds": 1.0,
                "tokens_in": 9,
                "tokens_out": 6,
            }
        )
        if index % 20 == 0:
            verdicts.append(
                {
                    "call_id": call_id,
                    "useful": index % 40 == 0,
                    "note": "",
                    "at": at,
                    # The judged call's facts, as `record_verdict` copies them.
                    "alias": THREE[index % 3],
                    "kind": "seat",
                    "collection": "trio",
                    "shape": "short",
                }
            )
    async with runtime.store.write() as session:
        for start in range(0, calls, 20_000):
            await session.execute(insert(schema.Call), rows[start : start + 20_000])
        await insert_verdicts(session, verdicts)


def start_ours(folder: Path, upstream: str, history: int = 0) -> Server:
    home = folder / "home"
    secret = asyncio.run(set_up_bench(home, upstream, history))
    child, base = serve_benchwarmers(folder, home)
    ready = child.wait_ready(f"{base}/v1/chat/completions", body("bench/solo"))
    return Server("benchwarmers", child, base, ready, key=secret)


def start_litellm(folder: Path, command: str, upstream: str) -> Server:
    config = folder / "litellm.yaml"
    lines = ["model_list:"]
    for name in THREE:
        lines += [
            f"  - model_name: {name}",
            "    litellm_params:",
            f"      model: openai/{name}",
            f"      api_base: {upstream}",
            "      api_key: x",
        ]
    config.write_text("\n".join(lines) + "\n")
    port = free_port()
    child = Child(
        "litellm",
        [command, "--config", str(config), "--host", "127.0.0.1", "--port", str(port)],
        env=LITELLM_ENV,
        cwd=folder,
    )
    base = f"http://127.0.0.1:{port}"
    try:
        ready = child.wait_ready(f"{base}/v1/chat/completions", body("alpha"), timeout=120)
    except BaseException:
        child.stop()
        raise
    return Server("litellm", child, base, ready)


def start_litellm_or_skip(folder: Path, command: str, upstream: str) -> Server | None:
    """LiteLLM's proxy, or None with one line on stderr when it does not come
    up (an install missing its proxy extras exits at once): the run goes on
    without its column, as when it is not installed, not into a traceback."""
    try:
        return start_litellm(folder, command, upstream)
    except RuntimeError as exc:
        first = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
        print(f"LiteLLM did not start ({first}): its column is skipped", file=sys.stderr)
        return None


def start_floor(folder: Path, upstream: str) -> Server:
    port = free_port()
    argv = [sys.executable, str(HERE / "floor.py"), "--port", str(port), "--upstream", upstream]
    child = Child("floor", argv, cwd=folder)
    base = f"http://127.0.0.1:{port}"
    ready = child.wait_ready(f"{base}/v1/chat/completions", body("alpha"), timeout=30)
    return Server("floor", child, base, ready)


def start_upstream(folder: Path, delay: float) -> tuple[Child, str]:
    port = free_port()
    argv = [sys.executable, str(HERE / "upstream.py"), "--port", str(port), "--delay", str(delay)]
    child = Child("upstream", argv, cwd=folder)
    base = f"http://127.0.0.1:{port}/v1"
    child.wait_ready(f"{base}/chat/completions", body("alpha"), timeout=30)
    return child, base


def litellm_version(command: str) -> str:
    python = Path(command).resolve().with_name("python")
    if not python.exists():
        return "?"
    probe = "import importlib.metadata as m; print(m.version('litellm'))"
    done = subprocess.run([str(python), "-c", probe], capture_output=True, text=True, timeout=60)
    return done.stdout.strip() or "?"


# -------------------------------------------------------------------- runs


PASSTHROUGH = "passthrough"
CONFIGURED = "configured"
# The configured scenario's cells beside ours without limits or key rate.
PLAIN = "ours, no limits"


@dataclass
class Scenario:
    name: str
    ours: Load
    theirs: Load | None
    prefer_wrk: bool
    # Other servers run in the same unit: name -> (load, server pid).
    beside: dict[str, tuple[Load, int]] = field(default_factory=dict)


def configured_load(ours: Server) -> Load:
    """The configured scenario: collection `kept` (endpoint and model limits
    set, limits learned from the upstream's headers), in route mode, sent
    with the gateway key that has a rate."""
    return Load(ours.chat_url, [body("bench/kept:route")], {"authorization": f"Bearer {ours.key}"})


def scenarios_for(ours: Server, theirs: Server | None, peers: list[Peer], use_wrk: bool) -> list[Scenario]:
    litellm = Load(theirs.chat_url, [body("alpha")]) if theirs else None
    plain = Load(ours.chat_url, [body("bench/solo:route")])
    compared = {p.name: (Load(p.chat_url, [body(p.model)], p.headers or None), p.child.pid) for p in peers}
    return [
        Scenario(f"{PASSTHROUGH}, route mode (bench/solo:route vs alpha)", plain, litellm, use_wrk, compared),
        Scenario(
            f"{PASSTHROUGH}, one-seat panel (bench/solo vs alpha)",
            Load(ours.chat_url, [body("bench/solo")]),
            litellm,
            use_wrk,
            dict(compared),
        ),
        Scenario(
            f"{CONFIGURED}: key rate, endpoint, model and learned limits (bench/kept:route vs alpha)",
            configured_load(ours),
            litellm,
            use_wrk,
            {PLAIN: (plain, ours.child.pid)},
        ),
        Scenario("panel of 3 (bench/trio)", Load(ours.chat_url, [body("bench/trio")]), None, use_wrk),
        Scenario(
            "panel seating 2 of 3 by record (bench/pick)",
            Load(ours.chat_url, [body("bench/pick")]),
            None,
            use_wrk,
        ),
        Scenario(
            "merged panel of 3 (bench/trio:merged)",
            Load(ours.chat_url, [body("bench/trio:merged")]),
            None,
            use_wrk,
        ),
        Scenario(
            "route mode over 3 members (bench/trio:route)",
            Load(ours.chat_url, [body("bench/trio:route")]),
            None,
            use_wrk,
        ),
        Scenario(
            "bench/trio vs 3 sequential calls (httpx loader)",
            Load(ours.chat_url, [body("bench/trio")]),
            Load(theirs.chat_url, [body(m) for m in THREE]) if theirs else None,
            False,
        ),
    ]


def run_cells(
    ours: Server,
    theirs: Server | None,
    floor: Server | None,
    seconds: float,
    connections: list[int],
    rounds: int,
    use_wrk: bool,
    only: str = "",
    *,
    steal_limit: float,
    tries: int,
    peers: list[Peer] | None = None,
) -> list[Row]:
    floor_load = Load(floor.chat_url, [body("alpha")]) if floor else None
    wanted = tuple(part.strip() for part in only.split(","))
    scenarios = [s for s in scenarios_for(ours, theirs, peers or [], use_wrk) if s.name.startswith(wanted)]
    # Warm all up on every kind of request first: first calls pay imports and connection set-up.
    for scenario in scenarios:
        for load in (scenario.ours, scenario.theirs, *(load for load, _pid in scenario.beside.values())):
            if load is not None:
                asyncio.run(measure(load, connections=4, seconds=WARM_UP_SECONDS, prefer_wrk=False))
    if floor_load is not None:
        asyncio.run(measure(floor_load, connections=4, seconds=WARM_UP_SECONDS, prefer_wrk=False))
    rows = {
        (s.name, conns): Row(
            s.name,
            conns,
            [],
            [] if s.theirs else None,
            [] if floor_load is not None and s.name.startswith(PASSTHROUGH) else None,
            {name: [] for name in s.beside},
        )
        for s in scenarios
        for conns in connections
    }
    for round_number in range(rounds):
        for scenario in scenarios:
            for conns in connections:
                row = rows[scenario.name, conns]
                floor_pair = (floor_load, floor.child.pid) if floor_load is not None and floor else None
                unit = _unit(row, scenario, ours, theirs, floor_pair, round_number)
                loads, cells = zip(*unit, strict=True)
                run = partial(_back_to_back, loads, conns, seconds, scenario.prefer_wrk)
                kept, again = asyncio.run(
                    unstolen(run, limit=steal_limit, tries=tries, stolen=attrgetter("stolen"))
                )
                for cell, into in zip(kept, cells, strict=True):
                    into.append(replace(cell, reruns=again))
                print(
                    f"  round {round_number + 1}/{rounds}: {scenario.name} at {conns} connection(s)",
                    file=sys.stderr,
                    flush=True,
                )
    return list(rows.values())


Unit = list[tuple[tuple[Load, int], list[Cell]]]


def _unit(
    row: Row,
    scenario: Scenario,
    ours: Server,
    theirs: Server | None,
    floor: tuple[Load, int] | None,
    round_number: int,
) -> Unit:
    """A round's cells of a scenario in the order they run, as one unit
    that is run again together (`common.unstolen`): every ratio a target
    reads is then of cells taken seconds apart under one host's load, steal
    included. With LiteLLM's cell run again apart from ours, a ratio could
    read ours kept from a try under a steal spell against theirs kept from
    a quiet one: a p99 at 1 connection, which a spell stretches by the
    host's time slice whatever the server, read 0.10-0.22x over the runs
    of 3 December that way. Ours and the floor's (and the servers run
    beside: the peers, ours without limits) always run next to each other
    (their order turns each round), and every other pair of rounds LiteLLM
    goes first, so a burst of other work on the machine falls on all alike."""
    unit: Unit = [((scenario.ours, ours.child.pid), row.ours)]
    if floor is not None and row.floor is not None:
        unit.append((floor, row.floor))
    unit += [(scenario.beside[name], cells) for name, cells in row.beside.items()]
    turn = round_number % len(unit)
    unit = unit[turn:] + unit[:turn]
    if scenario.theirs is not None and theirs is not None and row.theirs is not None:
        theirs_cell: Unit = [((scenario.theirs, theirs.child.pid), row.theirs)]
        unit = unit + theirs_cell if (round_number // 2) % 2 == 0 else theirs_cell + unit
    return unit


async def _back_to_back(
    loads: tuple[tuple[Load, int], ...], connections: int, seconds: float, prefer_wrk: bool
) -> list[Cell]:
    return [
        await measure(load, connections=connections, seconds=seconds, prefer_wrk=prefer_wrk, server_pid=pid)
        for load, pid in loads
    ]


# ------------------------------------------------------------------- table

MEASURES: tuple[tuple[str, Callable[[Cell], float], int], ...] = (
    ("req/s", lambda c: c.rate, 1),
    ("p50 ms", lambda c: c.p50_ms, 2),
    ("p99 ms", lambda c: c.p99_ms, 2),
    ("server CPU ms/op", lambda c: c.cpu_ms_per_op, 2),
)


def median_of(cells: list[Cell] | None, get: Callable[[Cell], float]) -> float | None:
    return statistics.median(get(c) for c in cells) if cells else None


def median_ratio(ours: list[Cell], theirs: list[Cell] | None, get: Callable[[Cell], float]) -> str:
    """The median of each round's ratio, as text ("-" when there is none)."""
    value = median_ratio_value(ours, theirs, get)
    return "-" if value is None else f"{value:.2f}x"


def median_ratio_value(
    ours: list[Cell], theirs: list[Cell] | None, get: Callable[[Cell], float]
) -> float | None:
    """The median of each round's ratio: steadier than a ratio of medians
    when the machine's speed drifts between rounds."""
    if not theirs:
        return None
    ratios = [get(a) / get(b) for a, b in zip(ours, theirs, strict=True) if get(b)]
    ratios = [r for r in ratios if not math.isnan(r)]
    return statistics.median(ratios) if ratios else None


def verdict(value: float | None, bound: float, kind: str) -> str:
    """A target's ratio and whether it is met, judged on the ratio itself,
    not on its rounded text: shown to three places where two would round
    it onto the bound."""
    if value is None:
        return "-"
    text = f"{value:.2f}x"
    if f"{value:.2f}" == f"{bound:.2f}" and value != bound:
        text = f"{value:.3f}x"
    return text + (" met" if (value >= bound if kind == "min" else value <= bound) else " MISSED")


def ratio(a: float, b: float | None) -> str:
    if b is None or not b or math.isnan(a) or math.isnan(b):
        return "-"
    return f"{a / b:.2f}x"


def num(value: float | None, digits: int = 1) -> str:
    return "-" if value is None or math.isnan(value) else f"{value:,.{digits}f}"


def render(rows: list[Row], ours: Server, theirs: Server | None) -> str:
    head = ["scenario", "conns"]
    for label, _get, _digits in MEASURES:
        head += [f"{label} ours", f"{label} LiteLLM", "ours/LiteLLM"]
    head += ["errors ours/LiteLLM", "loader"]
    out = ["| " + " | ".join(head) + " |", "|---|--:|" + "--:|" * (3 * len(MEASURES) + 1) + "---|"]
    for row in rows:
        cells = [row.scenario, str(row.connections)]
        for _label, get, digits in MEASURES:
            mine = median_of(row.ours, get)
            other = median_of(row.theirs, get)
            cells += [num(mine, digits), num(other, digits), median_ratio(row.ours, row.theirs, get)]
        their_errors = sum(c.errors for c in row.theirs) if row.theirs is not None else "-"
        cells += [f"{sum(c.errors for c in row.ours)}/{their_errors}", row.ours[0].tool]
        out.append("| " + " | ".join(cells) + " |")
    out += [
        "",
        "| memory (MB, process tree) | ours | LiteLLM | ours/LiteLLM |",
        "|---|--:|--:|--:|",
    ]
    for label, attr in (
        ("RSS after start", "rss_start"),
        ("RSS after load", "rss_end"),
        ("peak RSS", "rss_peak"),
    ):
        mine = getattr(ours, attr)
        other = getattr(theirs, attr) if theirs else None
        out.append(f"| {label} | {num(mine)} | {num(other)} | {ratio(mine, other)} |")
    other_ready = theirs.ready_seconds if theirs else None
    out.append(
        f"| seconds to first answer after launch | {num(ours.ready_seconds)} | {num(other_ready)} | "
        f"{ratio(ours.ready_seconds, other_ready)} |"
    )
    return "\n".join(out)


# Targets, each (label, scenarios it applies to, measure, against, bound,
# "min" when ours/theirs must reach it): issue 15's against LiteLLM on the
# passthrough, issue 37's against the floor on our own client, the peers,
# and the configured scenario against ours without limits and against LiteLLM.
TARGETS: tuple[tuple[str, str, Callable[[Cell], float], str, float, str], ...] = (
    ("req/s vs LiteLLM", PASSTHROUGH, lambda c: c.rate, "theirs", 10.0, "min"),
    ("CPU/req vs LiteLLM", PASSTHROUGH, lambda c: c.cpu_ms_per_op, "theirs", 0.1, "max"),
    ("p99 vs LiteLLM", PASSTHROUGH, lambda c: c.p99_ms, "theirs", 0.2, "max"),
    ("CPU/req vs floor", PASSTHROUGH, lambda c: c.cpu_ms_per_op, "floor", 2.0, "max"),
    ("CPU/req vs TensorZero", PASSTHROUGH, lambda c: c.cpu_ms_per_op, "TensorZero", 1.3, "max"),
    ("CPU/req vs Portkey", PASSTHROUGH, lambda c: c.cpu_ms_per_op, "Portkey", 1 / 3, "max"),
    ("CPU/req vs no limits", CONFIGURED, lambda c: c.cpu_ms_per_op, PLAIN, 1.2, "max"),
    ("req/s vs LiteLLM, configured", CONFIGURED, lambda c: c.rate, "theirs", 20.0, "min"),
)


def _against(row: Row, name: str) -> list[Cell] | None:
    if name == "theirs":
        return row.theirs
    if name == "floor":
        return row.floor
    return row.beside.get(name) or None


def render_beside(rows: list[Row]) -> str:
    """Every server measured beside ours, row by row: the floor, the peers,
    ours without limits (medians of the rounds)."""
    out = [
        "| scenario | conns | server | req/s | CPU ms/req | p50 ms | p99 ms | errors |",
        "|---|--:|---|--:|--:|--:|--:|--:|",
    ]
    for row in rows:
        groups = {"ours": row.ours, "floor": row.floor, **row.beside, "LiteLLM": row.theirs}
        for name, cells in groups.items():
            if not cells:
                continue
            figures = [
                num(median_of(cells, lambda c: c.rate)),
                num(median_of(cells, lambda c: c.cpu_ms_per_op), 3),
                num(median_of(cells, lambda c: c.p50_ms), 2),
                num(median_of(cells, lambda c: c.p99_ms), 2),
                str(sum(c.errors for c in cells)),
            ]
            out.append(f"| {row.scenario} | {row.connections} | {name} | " + " | ".join(figures) + " |")
    return "\n".join(out)


def render_targets(rows: list[Row]) -> str:
    """The passthrough and configured rows against the targets: each ratio
    the median of its rounds' ratios (ours over the other), and whether it
    is met; "-" where a target does not apply or its server did not run."""
    head = ["scenario", "conns"]
    head += [
        f"{label} ({'≥' if kind == 'min' else '≤'}{bound:.3g}x)" for label, _s, _g, _a, bound, kind in TARGETS
    ]
    head += ["CPU stolen, most of a kept cell", "cells run again"]
    out = ["| " + " | ".join(head) + " |", "|---|--:|" + "--:|" * (len(head) - 2)]
    for row in rows:
        if not row.scenario.startswith((PASSTHROUGH, CONFIGURED)):
            continue
        cells = [row.scenario, str(row.connections)]
        for _label, applies, get, against, bound, kind in TARGETS:
            other = _against(row, against) if row.scenario.startswith(applies) else None
            cells.append(verdict(median_ratio_value(row.ours, other, get), bound, kind))
        kept = [
            c for group in (row.ours, row.theirs, row.floor, *row.beside.values()) if group for c in group
        ]
        cells += [f"{max(c.stolen for c in kept):.1%}", str(sum(c.reruns for c in kept))]
        out.append("| " + " | ".join(cells) + " |")
    return "\n".join(out)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seconds", type=float, default=4.0, help="per measured cell and round")
    parser.add_argument("--rounds", type=int, default=3, help="rounds of every cell; medians are shown")
    parser.add_argument("--connections", default="1,10", help="comma-separated concurrency levels")
    parser.add_argument(
        "--litellm", default=os.environ.get("LITELLM_BIN", "litellm"), help="LiteLLM's command"
    )
    parser.add_argument("--delay", type=float, default=0.0, help="upstream delay per reply, seconds")
    parser.add_argument(
        "--history",
        type=int,
        default=0,
        help="past seat calls put in our call log first",
    )
    parser.add_argument("--no-wrk", action="store_true", help="use the httpx loader even if wrk is installed")
    parser.add_argument("--no-floor", action="store_true", help="no floor (floor.py)")
    parser.add_argument(
        "--only", default="", help="only scenarios starting so (comma-separated): passthrough,configured"
    )
    parser.add_argument(
        "--tensorzero-python",
        default=os.environ.get("TENSORZERO_PYTHON", ""),
        help="a Python with the tensorzero wheel installed (its gateway runs beside ours)",
    )
    parser.add_argument(
        "--portkey",
        default=os.environ.get("PORTKEY_GATEWAY", ""),
        help="the folder of the npm package @portkey-ai/gateway (its gateway runs beside ours)",
    )
    parser.add_argument(
        "--sustained",
        type=float,
        default=0.0,
        help="then the configured scenario for this many seconds at the highest --connections, per 5 s slice",
    )
    parser.add_argument("--no-cells", action="store_true", help="only the sustained run")
    add_steal_arguments(parser, "a round's cells of a scenario")
    args = parser.parse_args()
    connections = [int(c) for c in args.connections.split(",") if c.strip()]
    litellm = shutil.which(args.litellm)
    use_wrk = not args.no_wrk and wrk_path() is not None
    started = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="bench-vs-litellm-") as tmp:
        folder = Path(tmp)
        upstream, upstream_base = start_upstream(folder, args.delay)
        children = [upstream]
        try:
            ours = start_ours(folder, upstream_base, args.history)
            children.append(ours.child)
            theirs = None
            if litellm is None:
                print(f"LiteLLM not found ({args.litellm!r}): its column is skipped", file=sys.stderr)
            else:
                theirs = start_litellm_or_skip(folder, litellm, upstream_base)
                if theirs is not None:
                    children.append(theirs.child)
            floor = None if args.no_floor else start_floor(folder, upstream_base)
            if floor is not None:
                children.append(floor.child)
            peers = [
                peer
                for peer in (
                    start_tensorzero(folder, upstream_base, args.tensorzero_python),
                    start_portkey(folder, upstream_base, args.portkey),
                )
                if peer is not None
            ]
            children += [peer.child for peer in peers]
            servers = [s for s in (ours, theirs) if s is not None]
            for server in servers:
                server.rss_start = rss_mb(server.child.pid)
            peer_rss = {peer.name: rss_mb(peer.child.pid) for peer in peers}
            rows = []
            if not args.no_cells:
                rows = run_cells(
                    ours,
                    theirs,
                    floor,
                    args.seconds,
                    connections,
                    args.rounds,
                    use_wrk,
                    args.only,
                    steal_limit=args.steal_limit,
                    tries=args.tries,
                    peers=peers,
                )
            for server in servers:
                server.rss_end = rss_mb(server.child.pid)
                server.rss_peak = peak_rss_mb(server.child.pid)
            peer_rss = {peer.name: (peer_rss[peer.name], peak_rss_mb(peer.child.pid)) for peer in peers}
            steady = ""
            if args.sustained > 0:
                steady = sustained(
                    ours.child.pid, configured_load(ours), args.sustained, max(connections), use_wrk
                )
        finally:
            for child in reversed(children):
                child.stop()
    when = datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC")
    version = f"LiteLLM {litellm_version(litellm)}" if litellm else "LiteLLM absent"
    loader = "wrk" if use_wrk and wrk_times(args.seconds) else "httpx"
    print(
        f"{when}; {os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.1f}; {version}; "
        f"{args.rounds} rounds of {args.seconds:g} s per cell (medians), loader {loader}; "
        f"upstream delay {args.delay:g} s; "
        f"our call log pre-filled with {args.history} calls; "
        f"a cell run again (up to {args.tries} runs) when over {args.steal_limit:.0%} of the CPU was stolen; "
        f"total {time.monotonic() - started:.0f} s"
    )
    print(
        "peers: "
        + (
            "; ".join(
                f"{p.name} {p.version} (RSS after start {peer_rss[p.name][0]:.1f} MB, "
                f"peak {peer_rss[p.name][1]:.1f} MB)"
                for p in peers
            )
            or "none installed"
        )
    )
    if rows:
        print()
        print(render(rows, ours, theirs))
        print()
        print(render_beside(rows))
    if any(row.scenario.startswith((PASSTHROUGH, CONFIGURED)) for row in rows):
        print()
        print(render_targets(rows))
    if steady:
        print()
        print(
            f"Sustained: {CONFIGURED} scenario (bench/kept:route with the key) for {args.sustained:g} s "
            f"at {max(connections)} connections, per {SLICE_SECONDS:g} s slice"
        )
        print()
        print(steady)
    return 0


if __name__ == "__main__":
    sys.exit(main())
