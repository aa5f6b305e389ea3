"""What a budget on the gateway key costs a request: the server's CPU per
request with a key that has budgets (USD and tokens, per day and per
month, far above the load, so none refuses) beside one that has none, on
one server, in alternating cells of one run (issue 41's bound: at most 5%
more).

Three asks, each on the instant upstream (`upstream.py`, no delay):
passthrough in route mode (`bench/solo:route`), a one-seat panel
(`bench/solo`) and a three-seat panel (`bench/trio`). Each round measures
the plain key, then the budgeted one, then the plain one again (so drift
of the box during a round lands on both sides); the ratio is of the
medians over rounds. The machine may be busy: the figure is CPU time of
the server process, which waiting for a core does not add to, and the
rounds are taken back to back.

    flock /tmp/bench.lock .venv/bin/python benchmarks/budgets.py [--rounds 5] [--seconds 4]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import tempfile
from pathlib import Path

from common import Cell, Child, Load, measure, serve_benchwarmers
from vs_litellm import THREE, body, start_upstream

from benchwarmers.identity.keys import create_key
from benchwarmers.limits.budgets import set_budget
from benchwarmers.runtime import Runtime
from benchwarmers.store.collections import add_collection
from benchwarmers.store.endpoints import add_endpoint
from benchwarmers.store.models import add_model
from benchwarmers.store.settings import MAX_PANELS, MAX_PANELS_PER_KEY, Settings

CONNECTIONS = 10
ASKS = (
    ("passthrough, route mode (bench/solo:route)", "bench/solo:route"),
    ("one-seat panel (bench/solo)", "bench/solo"),
    ("three-seat panel (bench/trio)", "bench/trio"),
)


async def set_up(home: Path, upstream: str) -> tuple[str, str]:
    """The bench; the secrets of the key without budgets and the key with them."""
    async with Runtime.open(home) as runtime:
        store = runtime.store
        await add_endpoint(store, "instant", upstream, "openai", needs_key=False)
        for alias in THREE:
            await add_model(store, alias, "instant", alias, price_in=0.15, price_out=0.6)
        await add_collection(store, "solo", ["alpha"])
        await add_collection(store, "trio", list(THREE))
        # Panels per key above the connections, so no ask is refused by the caps (8 a key by default).
        await Settings(store).set(MAX_PANELS, 1000)
        await Settings(store).set(MAX_PANELS_PER_KEY, 1000)
        _info, plain = await create_key(store, "plain", requests_per_minute=100_000_000)
        _info, budgeted = await create_key(store, "budgeted", requests_per_minute=100_000_000)
        for period in ("day", "month"):
            await set_budget(store, "key", "budgeted", period, usd=1_000_000.0, tokens=10**14)
    return plain, budgeted


def start_server(folder: Path, upstream: str) -> tuple[Child, str, str, str]:
    home = folder / "home"
    plain, budgeted = asyncio.run(set_up(home, upstream))
    child, base = serve_benchwarmers(folder, home)
    child.wait_ready(
        f"{base}/v1/chat/completions", body("bench/solo"), headers={"authorization": f"Bearer {plain}"}
    )
    return child, base, plain, budgeted


async def cells(base: str, pid: int, model: str, secret: str, seconds: float) -> Cell:
    load = Load(f"{base}/v1/chat/completions", [body(model)], {"authorization": f"Bearer {secret}"})
    return await measure(load, connections=CONNECTIONS, seconds=seconds, prefer_wrk=False, server_pid=pid)


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--seconds", type=float, default=4.0)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="bw-budgets-") as temp:
        folder = Path(temp)
        upstream_child, upstream = start_upstream(folder, 0.0)
        server, base, plain, budgeted = start_server(folder, upstream)
        try:
            rows = []
            for label, model in ASKS:
                asyncio.run(cells(base, server.pid, model, plain, 1.0))  # warm up
                asyncio.run(cells(base, server.pid, model, budgeted, 1.0))
                without: list[float] = []
                with_budget: list[float] = []
                errors = 0
                for _ in range(args.rounds):
                    for secret, into in ((plain, without), (budgeted, with_budget), (plain, without)):
                        cell = asyncio.run(cells(base, server.pid, model, secret, args.seconds))
                        errors += cell.errors
                        into.append(cell.cpu_ms_per_op)
                a, b = statistics.median(without), statistics.median(with_budget)
                rows.append((label, a, b, b / a, errors))
        finally:
            server.stop()
            upstream_child.stop()
    load = os.getloadavg()
    print(
        f"\nServer CPU per request at {CONNECTIONS} connections, median of {args.rounds} rounds "
        f"({args.seconds:g} s cells; load average {load[0]:.1f} {load[1]:.1f} {load[2]:.1f})\n"
    )
    print("| ask | no budget (ms CPU/req) | budget on the key (ms CPU/req) | ratio | errors |")
    print("|---|---|---|---|---|")
    for label, a, b, ratio, errors in rows:
        print(f"| {label} | {a:.3f} | {b:.3f} | {ratio:.3f} ({(ratio - 1) * 100:+.1f}%) | {errors} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
