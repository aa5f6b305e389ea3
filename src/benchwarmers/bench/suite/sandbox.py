"""Run a model's code against a task's unit tests, walled off.

The code is untrusted: it was written by a model. It runs in a child
process (`python -I`: no user site, no PYTHON* variables, no current folder
on the path) inside a fresh temporary folder that is deleted afterwards,
with an empty environment (no endpoint keys can leak into it), its own
process group (so a fork bomb or a stuck child dies with it), and resource
limits: address space (memory), CPU seconds, file size, open files, no core
dumps. A wall-clock timeout kills the group whatever it is doing. This
machine has no network beyond loopback; the sandbox does not rely on that
for anything but network access.

The harness runs every `test_*` function of the task's tests (no pytest:
it would load plugins and take seconds) and writes the outcome to a file,
not stdout, so a chatty solution cannot forge it by printing.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import resource
import signal
import sys
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

HARNESS = r"""
import json, sys, traceback
sys.path.insert(0, sys.argv[1])
sys.setrecursionlimit(10000)
out = {"passed": [], "failed": {}, "error": ""}
try:
    namespace = {"__name__": "suite_tests"}
    with open(sys.argv[2], encoding="utf-8") as handle:
        source = handle.read()
    exec(compile(source, "tests.py", "exec"), namespace)
    for name, test in list(namespace.items()):
        if name.startswith("test_") and callable(test):
            try:
                test()
                out["passed"].append(name)
            except MemoryError:
                out["failed"][name] = "MemoryError"
            except BaseException as exc:
                out["failed"][name] = (type(exc).__name__ + ": " + str(exc))[:300]
except MemoryError:
    out["error"] = "MemoryError"
except BaseException as exc:
    out["error"] = (type(exc).__name__ + ": " + str(exc))[:300]
with open(sys.argv[3], "w", encoding="utf-8") as handle:
    json.dump(out, handle)
"""

OUTPUT_LIMIT = 16 * 1024 * 1024
OPEN_FILES = 64


@dataclass(frozen=True, slots=True)
class TestOutcome:
    passed: bool
    detail: str
    timed_out: bool = False
    out_of_memory: bool = False


async def run_unit_tests(
    code: str, tests: str, *, module: str = "solution", timeout: float = 10.0, memory_mb: int = 256
) -> TestOutcome:
    with tempfile.TemporaryDirectory(prefix="bench-suite-") as folder:
        work = Path(folder)
        (work / f"{module}.py").write_text(code, encoding="utf-8")
        (work / "tests.py").write_text(tests, encoding="utf-8")
        (work / "harness.py").write_text(HARNESS, encoding="utf-8")
        result_file = work / "result.json"
        process = await asyncio.create_subprocess_exec(
            sys.executable,
            "-I",
            str(work / "harness.py"),
            str(work),
            str(work / "tests.py"),
            str(result_file),
            cwd=work,
            env={"PATH": "/usr/bin:/bin", "HOME": str(work), "PYTHONDONTWRITEBYTECODE": "1"},
            stdin=asyncio.subprocess.DEVNULL,
            stdout=asyncio.subprocess.DEVNULL,
            stderr=asyncio.subprocess.PIPE,
            start_new_session=True,
            preexec_fn=_limits(timeout, memory_mb),
        )
        try:
            _, stderr = await asyncio.wait_for(process.communicate(), timeout)
        except TimeoutError:
            _kill_group(process.pid)
            await process.wait()
            return TestOutcome(False, f"timed out after {timeout:g}s", timed_out=True)
        finally:
            _kill_group(process.pid)
        return _read(result_file, process.returncode, stderr.decode(errors="replace"), timeout, memory_mb)


def _read(
    result_file: Path, returncode: int | None, stderr: str, timeout: float, memory_mb: int
) -> TestOutcome:
    if returncode == -signal.SIGXCPU or (returncode == -signal.SIGKILL and not result_file.exists()):
        return TestOutcome(False, f"used more than {timeout:g}s of CPU", timed_out=True)
    if not result_file.exists():
        oom = "MemoryError" in stderr
        reason = f"over the memory limit ({memory_mb} MB)" if oom else f"crashed (exit {returncode})"
        return TestOutcome(False, reason + _tail(stderr), out_of_memory=oom)
    out = json.loads(result_file.read_text(encoding="utf-8"))
    failed: dict[str, str] = out["failed"]
    if out["error"] == "MemoryError" or "MemoryError" in failed.values():
        return TestOutcome(False, f"over the memory limit ({memory_mb} MB)", out_of_memory=True)
    if out["error"]:
        return TestOutcome(False, f"could not run the tests: {out['error']}")
    if not out["passed"] and not failed:
        return TestOutcome(False, "the tests define no test_ functions")
    if failed:
        first = next(iter(failed.items()))
        return TestOutcome(
            False, f"{len(failed)} of {len(failed) + len(out['passed'])} tests failed; {first[0]}: {first[1]}"
        )
    return TestOutcome(True, f"{len(out['passed'])} tests passed")


def _limits(timeout: float, memory_mb: int) -> Callable[[], None]:
    cpu = max(1, int(timeout) + 1)
    memory = memory_mb * 1024 * 1024

    def apply() -> None:
        resource.setrlimit(resource.RLIMIT_AS, (memory, memory))
        resource.setrlimit(resource.RLIMIT_CPU, (cpu, cpu + 1))
        resource.setrlimit(resource.RLIMIT_FSIZE, (OUTPUT_LIMIT, OUTPUT_LIMIT))
        resource.setrlimit(resource.RLIMIT_NOFILE, (OPEN_FILES, OPEN_FILES))
        resource.setrlimit(resource.RLIMIT_CORE, (0, 0))

    return apply


def _kill_group(pid: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pid, signal.SIGKILL)


def _tail(stderr: str) -> str:
    lines = [line for line in stderr.strip().splitlines() if line.strip()]
    return f": {lines[-1][:200]}" if lines else ""
