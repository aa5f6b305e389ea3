"""What gateway benchmarks share: free ports, child servers, resident
memory, and a load generator (wrk when installed, else httpx).

wrk is preferred because it is written in C and costs the machine far less
per request than any Python client: on a small box the load generator
competes with the servers for the same cores, and a cheap one disturbs the
measurement least. The httpx loader exists for machines without wrk and
for what wrk cannot express: an "operation" of several requests in a row
(a client asking three models one after the other), timed as one.

    cell = await measure(Load(url, [body]), connections=10, seconds=10)
    cell.rate, cell.p50_ms, cell.p99_ms, cell.errors
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, TypeVar

import httpx

WRK_TIMEOUT = "30s"
T = TypeVar("T")


@dataclass(frozen=True)
class Load:
    """POST each body in turn to `url`; the run of them is one operation."""

    url: str
    bodies: list[dict[str, Any]]
    headers: dict[str, str] | None = None


@dataclass(frozen=True)
class Cell:
    operations: int
    seconds: float
    p50_ms: float
    p99_ms: float
    errors: int
    tool: str
    # CPU time the measured server spent (all its threads and children), when a pid was given.
    server_cpu_seconds: float = float("nan")
    # Of the CPU time the machine's processes wanted meanwhile, the share the
    # hypervisor gave to other guests instead (`stolen_share`).
    stolen: float = float("nan")
    # How many times this cell was run again for a hypervisor that took too much (`unstolen`).
    reruns: int = 0

    @property
    def rate(self) -> float:
        return self.operations / self.seconds if self.seconds else 0.0

    @property
    def cpu_ms_per_op(self) -> float:
        """The server's CPU per operation: far steadier than wall times when
        other work shares the machine, since waiting for a core costs none."""
        return self.server_cpu_seconds * 1e3 / self.operations if self.operations else float("nan")


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


# ------------------------------------------------------------ child servers


class Child:
    """A server in its own process group (so its children stop with it),
    its output in a log file that is shown when it fails to come up."""

    def __init__(self, name: str, argv: list[str], *, env: dict[str, str] | None = None, cwd: Path) -> None:
        self.name = name
        self.log_path = cwd / f"{name}.log"
        self._log = self.log_path.open("wb")
        self.process = subprocess.Popen(
            argv,
            cwd=cwd,
            env={**os.environ, **(env or {})},
            stdout=self._log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )

    @property
    def pid(self) -> int:
        return self.process.pid

    def log_tail(self, lines: int = 30) -> str:
        self._log.flush()
        return "\n".join(self.log_path.read_text(errors="replace").splitlines()[-lines:])

    def wait_ready(
        self, url: str, body: dict[str, Any], timeout: float = 90.0, headers: dict[str, str] | None = None
    ) -> float:
        """Seconds until a POST of `body` answers 200; raises with the log tail if never."""
        started = time.monotonic()
        last = ""
        with httpx.Client(timeout=10) as client:
            while time.monotonic() - started < timeout:
                if self.process.poll() is not None:
                    raise RuntimeError(f"{self.name} exited ({self.process.returncode}):\n{self.log_tail()}")
                try:
                    response = client.post(url, json=body, headers=headers)
                    if response.status_code == 200:
                        return time.monotonic() - started
                    last = f"{response.status_code} {response.text[:300]}"
                except httpx.HTTPError as exc:
                    last = repr(exc)
                time.sleep(0.25)
        raise RuntimeError(f"{self.name} not ready after {timeout:g} s ({last}):\n{self.log_tail()}")

    def stop(self) -> None:
        if self.process.poll() is None:
            os.killpg(self.process.pid, signal.SIGTERM)
            try:
                self.process.wait(10)
            except subprocess.TimeoutExpired:
                os.killpg(self.process.pid, signal.SIGKILL)
                self.process.wait(10)
        self._log.close()


RUN_CLI = "from benchwarmers.cli.main import run; run()"


def benchwarmers_command() -> str:
    """The `benchwarmers` command of this interpreter's environment (not
    another install's), else the one on PATH; the run stops in one line
    when there is none."""
    beside = Path(sys.executable).with_name("benchwarmers")
    command = str(beside) if beside.exists() else shutil.which("benchwarmers")
    if command is None:
        raise SystemExit("the benchwarmers command is not installed: run this with the project's .venv")
    return command


def serve_benchwarmers(
    folder: Path, home: Path, *, under: list[str] | None = None, env: dict[str, str] | None = None
) -> tuple[Child, str]:
    """`benchwarmers serve` on a free port over `home`, from this venv (not
    another install's), and its base URL; the caller waits for it as its
    load needs (`Child.wait_ready`). `under` runs it inside another command
    (`valgrind ...`), which is then handed this venv's interpreter and the
    CLI's entry point rather than the console script; `env` adds to the
    environment (`PYTHONPATH` for another checkout's code)."""
    argv = [*under, sys.executable, "-c", RUN_CLI] if under else [benchwarmers_command()]
    port = free_port()
    child = Child(
        "benchwarmers",
        [*argv, "serve", "--port", str(port)],
        env={"BENCHWARMERS_HOME": str(home), **(env or {})},
        cwd=folder,
    )
    return child, f"http://127.0.0.1:{port}"


def rss_mb(pid: int) -> float:
    """Resident memory of `pid` and all its descendants, in MB (from /proc)."""
    return sum(_status_kb(p, "VmRSS") for p in _tree(pid)) / 1024


def peak_rss_mb(pid: int) -> float:
    """The high-water mark of resident memory (VmHWM), summed over the tree."""
    return sum(_status_kb(p, "VmHWM") for p in _tree(pid)) / 1024


def cpu_seconds(pid: int) -> float:
    """User and system CPU time of `pid` and its descendants so far (from /proc)."""
    ticks = 0
    for each in _tree(pid):
        try:
            fields = Path(f"/proc/{each}/stat").read_text().rsplit(")", 1)[1].split()
        except (OSError, IndexError):
            continue
        ticks += int(fields[11]) + int(fields[12])  # utime, stime: fields 14 and 15 of stat(5)
    return ticks / os.sysconf("SC_CLK_TCK")


def machine_ticks() -> tuple[int, ...]:
    """The machine's CPU ticks so far, by kind (the first line of /proc/stat:
    user, nice, system, idle, iowait, irq, softirq, steal, ...)."""
    with open("/proc/stat") as handle:
        return tuple(int(field) for field in handle.readline().split()[1:])


def stolen_share(before: tuple[int, ...], after: tuple[int, ...]) -> float:
    """Of the CPU time this machine's processes wanted between two readings
    (`machine_ticks`), the share the hypervisor ran other guests instead.

    A virtual machine's cores are the host's to lend: on a busy host a
    guest's runnable thread waits while another guest runs, and that wait
    is "steal". Seen here on 3 December, 4-second cells at 1 connection,
    one after another within 70 s: our one-seat panel 697 requests/s with
    5.5% stolen and 496 with 25.3%, the floor 1,311 with 15.5% and 713 with
    38.9%. A cell measured while the host is busy measures the host, not
    the server."""
    spent = [b - a for a, b in zip(before[:8], after[:8], strict=True)]
    user, nice, system, _idle, _iowait, irq, softirq, steal = spent
    wanted = user + nice + system + irq + softirq + steal
    return steal / wanted if wanted > 0 else 0.0


def _tree(root: int) -> list[int]:
    parents: dict[int, list[int]] = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            # The command name may hold spaces and parentheses: the ppid follows the last ')'.
            ppid = int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1])
        except (OSError, IndexError, ValueError):
            continue
        parents.setdefault(ppid, []).append(int(entry.name))
    found, todo = [], [root]
    while todo:
        pid = todo.pop()
        found.append(pid)
        todo.extend(parents.get(pid, []))
    return found


def _status_kb(pid: int, field: str) -> int:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith(field + ":"):
                return int(line.split()[1])
    except OSError:
        pass
    return 0


# ------------------------------------------------------------------- load

WRK_SCRIPT = """
wrk.method = "POST"
wrk.body = %s
%s
done = function(summary, latency, requests)
  local e = summary.errors
  io.write(string.format("BENCH %%d %%d %%d %%d %%d %%d\\n", summary.requests, summary.duration,
    latency:percentile(50), latency:percentile(99), e.status, e.connect + e.read + e.write + e.timeout))
end
"""


def wrk_path() -> str | None:
    return shutil.which("wrk")


async def measure(
    load: Load, *, connections: int, seconds: float, prefer_wrk: bool = True, server_pid: int | None = None
) -> Cell:
    """Drive `load` with `connections` concurrent clients for `seconds`;
    with `server_pid`, also how much CPU that server spent meanwhile."""
    cpu_before = cpu_seconds(server_pid) if server_pid else 0.0
    ticks_before = machine_ticks()
    if prefer_wrk and len(load.bodies) == 1 and wrk_times(seconds) and wrk_path():
        cell = await asyncio.to_thread(_wrk, load, connections, seconds)
    else:
        cell = await _httpx_load(load, connections, seconds)
    cell = replace(cell, stolen=stolen_share(ticks_before, machine_ticks()))
    if server_pid:
        cell = replace(cell, server_cpu_seconds=cpu_seconds(server_pid) - cpu_before)
    return cell


def add_steal_arguments(parser: argparse.ArgumentParser, runs_of: str) -> None:
    """`--steal-limit` and `--tries`, what `unstolen` is given, alike in
    every script; `runs_of` names what is run again ("a cell")."""

    def at_least_one(text: str) -> int:
        value = int(text)
        if value < 1:
            raise argparse.ArgumentTypeError("must be at least 1")
        return value

    parser.add_argument(
        "--steal-limit",
        type=float,
        default=0.05,
        help=f"run {runs_of} again when the hypervisor took more than this share of the CPU (1: never)",
    )
    parser.add_argument("--tries", type=at_least_one, default=4, help=f"runs of {runs_of} at most")


async def unstolen(
    run: Callable[[], Awaitable[list[T]]],
    *,
    limit: float,
    tries: int,
    stolen: Callable[[T], float],
    pause: float = 10.0,
) -> tuple[list[T], int]:
    """Results taken back to back (`run()`: cells, or what holds them)
    during each of which the hypervisor took at most `limit` of the
    machine's CPU (`stolen` reads a result's `stolen_share`): all run
    again, `pause` seconds apart, while any took more, up to `tries` times
    in all, else the run whose most stolen result was least stolen; and how
    many times it was run again. Results whose ratio is read are taken in
    one run, so a re-run never compares a cell of now with one of a minute
    ago; and the same rule holds for every server measured, so no ratio
    compares one server on a quiet host with another on a busy one."""
    best: list[T] | None = None
    least = float("inf")  # the most stolen result of `best`
    for attempt in range(tries):
        results = await run()
        worst = max(stolen(result) for result in results)
        if worst <= limit:
            return results, attempt
        if worst < least:
            best, least = results, worst
        if attempt + 1 < tries:
            await asyncio.sleep(pause)
    assert best is not None, "tries must be at least 1"
    return best, tries - 1


def wrk_times(seconds: float) -> bool:
    """Whether wrk can run for `seconds`: it takes whole seconds only (given
    `-d0.5s` it prints its usage and exits 1, which ended a run asked for
    `--seconds 0.5` in a traceback); other durations go to the httpx loader,
    which the tables name in their loader column."""
    return seconds >= 1 and seconds == int(seconds)


def _wrk(load: Load, connections: int, seconds: float) -> Cell:
    headers = {"Content-Type": "application/json", **(load.headers or {})}
    header_lines = "\n".join(f"wrk.headers[{json.dumps(k)}] = {json.dumps(v)}" for k, v in headers.items())
    script = WRK_SCRIPT % (_lua_string(json.dumps(load.bodies[0])), header_lines)
    with tempfile.NamedTemporaryFile("w", suffix=".lua", delete=False) as handle:
        handle.write(script)
    try:
        threads = min(connections, 2)
        argv = [wrk_path() or "wrk", f"-t{threads}", f"-c{connections}", f"-d{seconds:g}s"]
        argv += [f"--timeout={WRK_TIMEOUT}", "-s", handle.name, load.url]
        out = subprocess.run(argv, capture_output=True, text=True, check=True, timeout=seconds + 60).stdout
    finally:
        os.unlink(handle.name)
    line = next((ln for ln in out.splitlines() if ln.startswith("BENCH ")), None)
    if line is None:
        raise RuntimeError(f"wrk printed no summary:\n{out}")
    requests, duration_us, p50_us, p99_us, status_errors, socket_errors = map(int, line.split()[1:])
    return Cell(requests, duration_us / 1e6, p50_us / 1e3, p99_us / 1e3, status_errors + socket_errors, "wrk")


def _lua_string(text: str) -> str:
    """A Lua long string holding `text` verbatim (no escapes to get wrong)."""
    level = 0
    while f"]{'=' * level}]" in text:
        level += 1
    return f"[{'=' * level}[{text}]{'=' * level}]"


async def send_count(client: httpx.AsyncClient, load: Load, *, connections: int, count: int) -> int:
    """POST `load`'s first body `count` times over `connections` concurrent
    workers of `client` (a fixed number of requests, not a time: what a
    count of work done per request divides by), reading every reply whole;
    returns how many were not a 200."""
    left = count
    errors = 0

    async def worker() -> None:
        nonlocal left, errors
        while left > 0:
            left -= 1
            try:
                response = await client.post(load.url, json=load.bodies[0], headers=load.headers)
                errors += response.status_code != 200
            except httpx.HTTPError:
                errors += 1

    await asyncio.gather(*(worker() for _ in range(connections)))
    return errors


async def _httpx_load(load: Load, connections: int, seconds: float) -> Cell:
    latencies: list[float] = []
    errors = 0
    limits = httpx.Limits(max_connections=connections, max_keepalive_connections=connections)
    async with httpx.AsyncClient(limits=limits, timeout=30, headers=load.headers) as client:
        stop_at = time.perf_counter() + seconds

        async def worker() -> None:
            nonlocal errors
            while time.perf_counter() < stop_at:
                started = time.perf_counter()
                ok = True
                for body in load.bodies:
                    try:
                        response = await client.post(load.url, json=body)
                        ok = ok and response.status_code == 200
                    except httpx.HTTPError:
                        ok = False
                if ok:
                    latencies.append(time.perf_counter() - started)
                else:
                    errors += 1

        began = time.perf_counter()
        await asyncio.gather(*(worker() for _ in range(connections)))
        elapsed = time.perf_counter() - began
    if not latencies:
        return Cell(0, elapsed, float("nan"), float("nan"), errors, "httpx")
    ordered = sorted(latencies)
    p99 = ordered[min(len(ordered) - 1, round(0.99 * (len(ordered) - 1)))]
    return Cell(len(ordered), elapsed, statistics.median(ordered) * 1e3, p99 * 1e3, errors, "httpx")


def bench_writers() -> tuple[Any, Any, Any]:
    """`add_endpoint`, `add_model` and `add_collection` of the checkout this
    process imports (in one module, `store.registry`, before it was split),
    so a benchmark sets an older checkout's bench up as it does its own."""
    try:
        from benchwarmers.store.collections import add_collection
        from benchwarmers.store.endpoints import add_endpoint
        from benchwarmers.store.models import add_model
    except ImportError:  # a checkout from before the registry's split
        from benchwarmers.store.registry import add_collection, add_endpoint, add_model
    return add_endpoint, add_model, add_collection


async def insert_verdicts(session: Any, verdicts: list[dict[str, Any]], batch: int = 20_000) -> None:
    """Verdicts written past `record_verdict` (a pre-filled history), with the
    counts it keeps beside them in `verdict_tallies`, where the checkout
    measured has that table (an older one counted verdicts as it read)."""
    from sqlalchemy import insert

    from benchwarmers.store import schema

    for start in range(0, len(verdicts), batch):
        await session.execute(insert(schema.Verdict), verdicts[start : start + batch])
    tally = getattr(schema, "VerdictTally", None)
    if tally is None or not verdicts:
        return
    groups = Counter(
        (v.get("alias", ""), v.get("kind", ""), v.get("collection", ""), v.get("shape", ""), v["useful"])
        for v in verdicts
    )
    rows = [
        {"alias": a, "kind": k, "collection": c, "shape": s, "useful": u, "count": n}
        for (a, k, c, s, u), n in groups.items()
    ]
    await session.execute(insert(tally), rows)
