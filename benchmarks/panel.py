"""What the panel adds on top of its slowest (or fastest) seat.

Three fake seats answer after a known delay (100, 200 and 300 ms before
their first byte) from the fake provider on loopback; the real server
answers `bench/trio` in front of them. Whatever the gateway costs (parsing,
seating, the store, the fan-out, recording every seat, rendering) shows as:

* panel overhead: the whole reply's wall time minus the slowest seat
  (issue 15's goals: at most 5 ms at p50 and 15 ms at p99);
* stream overhead: the first content byte of a stream (the fastest seat's
  section) minus the fastest seat's (goal: at most 5 ms at p50).

"The slowest seat" is measured two ways, each its own row. Against its
delay alone (300 ms), the fake's own work and the loopback HTTP a client
would pay asking that seat itself count as the gateway's. Against the seat
asked directly, right before each ask (the slowest seat's whole reply; the
fastest seat's first content byte, streamed), that is what a client would
wait for without the panel, and the difference is what the panel adds; the
pairs are taken back to back so a busy moment of the machine lands in both
halves. The direct calls' own rows (minus the delay) are the floor.

The engine alone (in-process, no gateway HTTP) is measured beside them, to
tell the costs apart.

By default the gateway and the fake seats are threads of this process (quick
to start); `--processes` runs each as its own command (`benchwarmers serve`,
`benchwarmers fake-provider`), as deployed: then the gateway does not share
the interpreter lock with the fake and the client, and its figures are its
own. The machine may be busy: compare runs made back to back, look at min
as well as p50, and count what an ask does with `benchmarks/panel_costs.py`.

    .venv/bin/python benchmarks/panel.py [--runs 30] [--processes]

With `--runs 100` or more the p99 is a real percentile; with fewer it is the
slowest run.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
from common import Child, bench_writers, free_port

from benchwarmers.panel.engine import PanelEngine
from benchwarmers.runtime import Runtime
from benchwarmers.testing.fake_provider import FakeProvider
from benchwarmers.testing.live_server import live_server
from benchwarmers.testing.script import FakeModel
from benchwarmers.types import Ask, PanelDone, Request, user

DELAYS = {"fast": 0.1, "mid": 0.2, "slow": 0.3}
BODY = {"model": "bench/trio", "messages": [{"role": "user", "content": "one word please"}]}


SEATS = [{"served": alias, "answer": f"{alias} says hello", "ttfb": delay} for alias, delay in DELAYS.items()]
CLI = [sys.executable, "-c", "from benchwarmers.cli.main import run; run()"]


async def set_up(home: Path, openai_base: str) -> None:
    add_endpoint, add_model, add_collection = bench_writers()
    async with Runtime.open(home) as runtime:
        await add_endpoint(runtime.store, "fake", openai_base, "openai", needs_key=False)
        for alias in DELAYS:
            await add_model(runtime.store, alias, "fake", alias)
        await add_collection(runtime.store, "trio", list(DELAYS))


@dataclass
class Pairs:
    """Each run's overhead against the seat's delay and against the same
    seat asked directly just before; and that direct call minus its delay."""

    vs_delay: list[float] = field(default_factory=list)
    vs_direct: list[float] = field(default_factory=list)
    direct: list[float] = field(default_factory=list)

    def add(self, panel: float, direct: float, delay: float) -> None:
        self.vs_delay.append(panel - delay)
        self.vs_direct.append(panel - direct)
        self.direct.append(direct - delay)


def panel_overheads(url: str, openai_base: str, runs: int) -> Pairs:
    """The whole reply, beside the slowest seat's whole reply asked directly."""
    pairs = Pairs()
    slowest = max(DELAYS, key=DELAYS.__getitem__)
    with httpx.Client(timeout=30) as client:
        client.post(f"{url}/v1/chat/completions", json=BODY).raise_for_status()  # warm up
        for _ in range(runs):
            started = time.perf_counter()
            client.post(f"{openai_base}/chat/completions", json={**BODY, "model": slowest}).raise_for_status()
            direct = time.perf_counter() - started
            started = time.perf_counter()
            client.post(f"{url}/v1/chat/completions", json=BODY).raise_for_status()
            pairs.add(time.perf_counter() - started, direct, DELAYS[slowest])
    return pairs


def stream_overheads(url: str, openai_base: str, runs: int) -> Pairs:
    """A stream's first content byte, beside the fastest seat's own first
    content byte, streamed directly."""
    pairs = Pairs()
    fastest = min(DELAYS, key=DELAYS.__getitem__)
    with httpx.Client(timeout=30) as client:
        for _ in range(runs):
            direct = first_content(client, f"{openai_base}/chat/completions", {**BODY, "model": fastest})
            pairs.add(first_content(client, f"{url}/v1/chat/completions", BODY), direct, DELAYS[fastest])
    return pairs


def first_content(client: httpx.Client, url: str, body: dict[str, object]) -> float:
    """Seconds from sending a streamed ask to the first chunk with text in
    it (read to the end)."""
    started = time.perf_counter()
    first = None
    with client.stream("POST", url, json={**body, "stream": True}) as response:
        for line in response.iter_lines():
            if first is None and line.startswith("data: {") and _has_text(json.loads(line[6:])):
                first = time.perf_counter() - started
    assert first is not None, f"no text in the stream from {url}"
    return first


def _has_text(chunk: dict[str, Any]) -> bool:
    return any((choice.get("delta") or {}).get("content") for choice in chunk.get("choices") or ())


async def engine_overheads(home: Path, runs: int) -> list[float]:
    out = []
    async with Runtime.open(home) as runtime:
        engine = PanelEngine(runtime)
        the_ask = Ask("trio", "panel", Request((user("one word please"),)))
        for index in range(runs + 1):
            started = time.perf_counter()
            async for event in engine.run(the_ask):
                if isinstance(event, PanelDone):
                    break
            if index:  # the first run warms up
                out.append(time.perf_counter() - started - max(DELAYS.values()))
    return out


def row(name: str, samples: list[float], p50_goal: float | None, p99_goal: float | None = None) -> str:
    """min shows what the code costs when nothing else gets in the way (the
    machine may be busy with other work); p50 and p99 are what the goals are about."""
    ordered = sorted(samples)
    low = ordered[0] * 1000
    p50 = statistics.median(ordered) * 1000
    p99 = ordered[min(len(ordered) - 1, round(0.99 * (len(ordered) - 1)))] * 1000
    goals = [(p50, p50_goal, "p50"), (p99, p99_goal, "p99")]
    goal = ", ".join(f"{label} ≤ {g:g}" for _v, g, label in goals if g is not None) or "-"
    met = (
        ", ".join(f"{label} {'met' if v <= g else 'MISSED'}" for v, g, label in goals if g is not None) or "-"
    )
    figures = f"{len(samples):>4} | {low:>8.1f} | {p50:>8.1f} | {p99:>8.1f}"
    return f"| {name:<56} | {figures} | {goal:>18} | {met:>22} |"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=30)
    parser.add_argument(
        "--processes", action="store_true", help="gateway and fake seats as their own processes"
    )
    args = parser.parse_args()
    runs = args.runs
    with tempfile.TemporaryDirectory() as folder:
        measure = in_processes if args.processes else in_threads
        panel, stream, engine = measure(Path(folder), runs)
    delays = ", ".join(f"{d * 1000:g} ms" for d in DELAYS.values())
    load = ", ".join(f"{x:.1f}" for x in os.getloadavg())
    print(
        f"3 seats, first byte after {delays}; {runs} runs each; load average {load} on {os.cpu_count()} CPUs"
    )
    print(f"| {'measure':<56} | runs | min (ms) | p50 (ms) | p99 (ms) | {'goal (ms)':>18} | {'':>22} |")
    print(f"|{'-' * 58}|-----:|---------:|---------:|---------:|{'-' * 20}|{'-' * 24}|")
    print(row("panel reply: wall time - slowest seat's delay", panel.vs_delay, 5, 15))
    print(row("panel reply: wall time - slowest seat asked directly", panel.vs_direct, 5, 15))
    print(row("stream: first content byte - fastest seat's delay", stream.vs_delay, 5))
    print(row("stream: first content byte - fastest seat asked directly", stream.vs_direct, 5))
    print(row("engine alone (in-process): wall - slowest seat's delay", engine, None))
    print(row("floor: slowest seat asked directly - its delay", panel.direct, None))
    print(row("floor: fastest seat's first text, directly - its delay", stream.direct, None))
    return 0


Samples = tuple[Pairs, Pairs, list[float]]


def in_threads(folder: Path, runs: int) -> Samples:
    home = folder / "home"
    with FakeProvider([FakeModel(**seat) for seat in SEATS]) as fake:  # type: ignore[arg-type]
        asyncio.run(set_up(home, fake.openai_base))
        engine = asyncio.run(engine_overheads(home, runs))
        with live_server(home) as server:
            base = fake.openai_base
            return panel_overheads(server.url, base, runs), stream_overheads(server.url, base, runs), engine


def in_processes(folder: Path, runs: int) -> Samples:
    home = folder / "home"
    home.mkdir()
    models = folder / "seats.json"
    models.write_text(json.dumps({"models": SEATS}))
    fake_port, gateway_port = free_port(), free_port()
    fake = Child(
        "fake", [*CLI, "fake-provider", "--port", str(fake_port), "--models", str(models)], cwd=folder
    )
    gateway: Child | None = None
    try:
        openai_base = f"http://127.0.0.1:{fake_port}/v1"
        fake.wait_ready(f"{openai_base}/chat/completions", {**BODY, "model": "fast"})
        asyncio.run(set_up(home, openai_base))
        engine = asyncio.run(engine_overheads(home, runs))
        env = {"BENCHWARMERS_HOME": str(home)}
        gateway = Child("gateway", [*CLI, "serve", "--port", str(gateway_port)], env=env, cwd=folder)
        url = f"http://127.0.0.1:{gateway_port}"
        gateway.wait_ready(f"{url}/v1/chat/completions", BODY)
        return panel_overheads(url, openai_base, runs), stream_overheads(url, openai_base, runs), engine
    finally:
        if gateway is not None:
            gateway.stop()
        fake.stop()


if __name__ == "__main__":
    sys.exit(main())
