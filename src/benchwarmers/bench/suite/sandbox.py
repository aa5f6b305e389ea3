"""Run a model's code against tests, walled off, on a machine with a network.

The code is untrusted: a model wrote it. It runs under bubblewrap (`bwrap`,
Debian's `bubblewrap`) in new user, network, PID, IPC, UTS and cgroup
namespaces: the network namespace has only its own loopback, so no socket
reaches this machine's loopback or anything beyond. The child sees a
read-only view of the system (`/usr`, the library folders and the Python it
runs on; no `/etc`, no `/proc`, no home folders), a private writable folder
(the task's files, `/work`, and `/tmp`, both deleted afterwards) and an
empty environment. The data folder and llm's key folder are never mounted;
if either lies under a mounted folder an empty one covers it.

Limits: address space (memory), CPU seconds, file size, open files and
processes per run, no core dumps, and a wall-clock kill of the whole
process group (the PID namespace dies with it). When we are root the run
drops to a uid of its own, so the process limit counts this run only and
nothing outside is readable by permission either; otherwise the limit is
the user's current count plus the run's allowance.

The verdict is the parent's: `harness.py` runs the tests inside and writes
one record, sealed with an HMAC under a per-run secret sent on stdin, to a
pipe. The parent ignores exit codes, stdout and files; a run without a
validly sealed record that names every test as passed fails (see
`harness.py` for how the code under test is kept from the seal). stdout
goes to /dev/null and stderr is read as it comes (its last 64 KB kept), so
no amount of either blocks the code on a full pipe.

Where isolation cannot be had (no `bwrap`, or namespaces refused), code
tasks are not run at all: `unavailable()` says why, and the suite skips
them with that reason.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import hmac
import json
import os
import resource
import secrets
import shutil
import signal
import stat
import subprocess
import sys
import sysconfig
import tempfile
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path

from benchwarmers.config.home import HOME_ENV
from benchwarmers.config.keys import keys_path

HARNESS = Path(__file__).with_name("harness.py")
BOOTSTRAP = (
    "exec(compile(open('/harness/harness.py').read(), '/harness/harness.py', 'exec'),"
    " {'__name__': 'benchwarmers_harness', '__builtins__': dict(vars(__import__('builtins')))})"
)
RESULT_FD_READ_MAX = 1024 * 1024
STDERR_KEPT = 64 * 1024
SYSTEM_FOLDERS = ("/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32")
# bwrap outside, bwrap as PID 1 inside, the interpreter: not the code's to spend.
OWN_PROCESSES = 3
RUN_UIDS = (1_000_000, 2_000_000_000)


class SandboxUnavailable(Exception):
    """No isolation here; the reason says what is missing."""


@dataclass(frozen=True, slots=True)
class Limits:
    timeout: float = 10.0  # wall clock, seconds; CPU seconds are one more
    memory_mb: int = 256
    processes: int = 8  # beyond the interpreter itself
    file_mb: int = 16
    open_files: int = 64


@dataclass(frozen=True, slots=True)
class TestOutcome:
    passed: bool
    detail: str
    timed_out: bool = False
    out_of_memory: bool = False
    results: Mapping[str, bool] = field(default_factory=dict)  # per test id, from the sealed record


@dataclass(frozen=True, slots=True)
class Interpreter:
    executable: str
    prefix: str  # mounted read-only at the same path


def hidden_paths() -> list[Path]:
    """Folders the code must never see: the data folder and llm's key folder."""
    paths = [keys_path().parent]
    if os.environ.get(HOME_ENV, "").strip():
        paths.append(Path(os.environ[HOME_ENV]).expanduser())
    return [p.resolve() for p in paths]


@cache
def unavailable() -> str | None:
    """Why code cannot be run isolated here, or None when it can (checked once)."""
    if shutil.which("bwrap") is None:
        return "bubblewrap (bwrap) is not installed: code tasks need it (apt-get install bubblewrap)"
    interpreter = _interpreter()
    if interpreter is None:
        return "no Python the sandbox user can read (the interpreter sits in a private folder)"
    with tempfile.TemporaryDirectory(prefix="bench-sandbox-probe-") as folder:
        uid = _run_uid()
        root = Path(folder)
        _prepare(root, uid)
        argv = _bwrap_argv(root, interpreter, [], ["-c", "pass"])
        try:
            done = subprocess.run(
                argv,
                stdin=subprocess.DEVNULL,
                capture_output=True,
                timeout=30,
                preexec_fn=_limits(Limits(), uid),
                check=False,
            )
        except (OSError, subprocess.TimeoutExpired) as exc:
            return f"bubblewrap could not start: {exc}"
    if done.returncode != 0:
        said = done.stderr.decode(errors="replace").strip().splitlines()
        return "bubblewrap cannot create namespaces here" + (f": {said[-1][:200]}" if said else "")
    return None


async def run_tests(
    files: Mapping[str, str],
    tests: Sequence[str],
    *,
    limits: Limits = Limits(),
    hidden: Sequence[Path] | None = None,
) -> TestOutcome:
    """Write `files` (relative path -> text) into a fresh folder and run the
    test ids there (`path.py`, `path.py::name`, `path.py::Class::method`).
    Raises SandboxUnavailable rather than run unisolated."""
    reason = unavailable()
    if reason is not None:
        raise SandboxUnavailable(reason)
    interpreter = _interpreter()
    assert interpreter is not None
    with tempfile.TemporaryDirectory(prefix="bench-suite-") as folder:
        root = Path(folder)
        uid = _run_uid()
        _prepare(root, uid, files)
        secret = secrets.token_bytes(32)
        read_end, write_end = os.pipe()
        (root / "harness" / "plan.json").write_text(
            json.dumps({"work": "/work", "tests": list(tests), "fd": write_end}), encoding="utf-8"
        )
        # `_run` owns both ends from here and closes each once: a number closed
        # twice closes whatever the process opened on it meanwhile (the call
        # log's database, once).
        outcome = await _run(root, interpreter, hidden, limits, uid, secret, (read_end, write_end), tests)
        if uid is not None:
            _reclaim(root)
        return outcome


async def run_unit_tests(
    code: str, tests: str, *, module: str = "solution", timeout: float = 10.0, memory_mb: int = 256
) -> TestOutcome:
    """A single-file answer against a single test file (the `unit_tests` checker)."""
    files = {f"{module}.py": code, "tests.py": tests}
    return await run_tests(files, ["tests.py"], limits=Limits(timeout=timeout, memory_mb=memory_mb))


async def _run(
    root: Path,
    interpreter: Interpreter,
    hidden: Sequence[Path] | None,
    limits: Limits,
    uid: int | None,
    secret: bytes,
    pipe: tuple[int, int],
    tests: Sequence[str],
) -> TestOutcome:
    read_end, write_end = pipe
    argv = _bwrap_argv(
        root,
        interpreter,
        hidden_paths() if hidden is None else hidden,
        ["-c", BOOTSTRAP, "/harness/plan.json"],
    )
    try:
        process = await asyncio.create_subprocess_exec(
            *argv,
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.DEVNULL,
            stderr=asyncio.subprocess.PIPE,
            start_new_session=True,
            pass_fds=(write_end,),
            preexec_fn=_limits(limits, uid),
        )
    except BaseException:
        os.close(read_end)
        raise
    finally:
        os.close(write_end)  # the child has its own; ours open, the record's read would never end
    # Submitted now, not when a task first runs: from here the reading thread owns the read end.
    record = asyncio.get_running_loop().run_in_executor(None, _read_all, read_end, RESULT_FD_READ_MAX)
    assert process.stdin is not None and process.stderr is not None
    stderr = asyncio.ensure_future(_drained(process.stderr, STDERR_KEPT))
    timed_out = False
    try:  # whatever ends the wait (a cancelled run too), the sandbox's processes end with it
        process.stdin.write(secret.hex().encode() + b"\n")
        with contextlib.suppress(ConnectionError):
            await process.stdin.drain()
        process.stdin.close()
        await asyncio.wait_for(process.wait(), limits.timeout)
    except TimeoutError:
        timed_out = True
    finally:
        _kill_group(process.pid)
        await process.wait()
    data = await record
    said = (await stderr).decode(errors="replace")
    return verdict(data, secret, said, process.returncode, timed_out, limits, tests)


def verdict(
    data: bytes,
    secret: bytes,
    stderr: str,
    returncode: int | None,
    timed_out: bool,
    limits: Limits,
    tests: Sequence[str],
) -> TestOutcome:
    """The outcome from what came back: only a validly sealed record that
    names every test asked for counts."""
    record = _unseal(data, secret)
    if record is None:
        if timed_out:
            return TestOutcome(False, f"timed out after {limits.timeout:g}s", timed_out=True)
        if returncode in (128 + signal.SIGXCPU, 128 + signal.SIGKILL, -signal.SIGXCPU, -signal.SIGKILL):
            return TestOutcome(False, f"used more than {limits.timeout:g}s of CPU", timed_out=True)
        if "MemoryError" in stderr:
            return TestOutcome(False, f"over the memory limit ({limits.memory_mb} MB)", out_of_memory=True)
        return TestOutcome(
            False, f"the run ended before the tests finished (exit {returncode}){_tail(stderr)}"
        )
    head, *lines = record.split("\n")
    if head.startswith("tampered"):
        return TestOutcome(False, head.partition("\t")[2] or "the code changed the test harness")
    results: dict[str, bool] = {}
    ran = failed = 0
    first = ""
    for line in lines:
        status, test_id, count, bad, detail = ([*line.split("\t", 4), "", "", "", ""])[:5]
        results[test_id] = status == "passed"
        ran, failed = ran + int(count or 0), failed + int(bad or 0)
        if status != "passed" and not first:
            first = f"{test_id}: {detail}" if len(lines) > 1 else detail
    missing = [t for t in tests if t not in results]
    if missing:
        return TestOutcome(False, f"the record does not name {missing[0]}", results=results)
    oom = "MemoryError" in record
    if oom and not all(results.values()):
        return TestOutcome(False, f"over the memory limit ({limits.memory_mb} MB)", out_of_memory=True)
    if all(results.values()) and results:
        return TestOutcome(True, f"{ran} tests passed", results=results)
    counted = f"{failed} of {ran} tests failed; " if ran else ""
    return TestOutcome(False, counted + first, results=results)


def _unseal(data: bytes, secret: bytes) -> str | None:
    """The record the harness sealed, if the pipe holds one. Anything the
    code wrote to the pipe before it is ignored: it cannot carry the seal."""
    text = data.decode("utf-8", "replace")
    body, _, tail = text.rstrip("\n").rpartition("\n")
    mac = tail.strip()
    starts = [0] + [i + 1 for i, char in enumerate(body) if char == "\n"]
    for start in starts:
        payload = body[start:]
        if not payload.startswith(("clean", "tampered")):
            continue
        expected = hmac.new(secret, payload.encode("utf-8", "replace"), hashlib.sha256).hexdigest()
        if hmac.compare_digest(expected, mac):
            return payload
    return None


async def _drained(stream: asyncio.StreamReader, kept: int) -> bytes:
    """Read `stream` to its end as it comes, keeping its last `kept` bytes
    (where a traceback or a MemoryError ends up). Read continuously, so code
    that writes a lot to stderr never blocks on a full pipe and spends its
    time limit waiting (stdout goes to /dev/null: nothing to read)."""
    tail = bytearray()
    while chunk := await stream.read(65536):
        tail += chunk
        del tail[:-kept]
    return bytes(tail)


def _read_all(fd: int, cap: int) -> bytes:
    """Read `fd` to its end, keeping `cap` bytes, then close it. The reading
    thread closes it because only it knows when its last read is done: a run
    cancelled meanwhile that closed it instead would free the number while
    the thread may read it again, from whatever the process opened there next."""
    chunks: list[bytes] = []
    size = 0
    try:
        while True:
            chunk = os.read(fd, 65536)
            if not chunk:
                return b"".join(chunks)
            if size < cap:
                chunks.append(chunk[: cap - size])
                size += len(chunk)
    finally:
        os.close(fd)


# ------------------------------------------------------------------ the walls


def _bwrap_argv(
    root: Path,
    interpreter: Interpreter,
    hidden: Sequence[Path],
    args: list[str],
) -> list[str]:
    argv = [
        "bwrap",
        "--unshare-all",
        "--die-with-parent",
        "--new-session",
        "--hostname",
        "sandbox",
        "--clearenv",
        "--setenv",
        "PATH",
        "/usr/bin:/bin",
        "--setenv",
        "HOME",
        "/work",
        "--setenv",
        "TMPDIR",
        "/tmp",
        "--setenv",
        "LANG",
        "C.UTF-8",
        "--ro-bind",
        "/usr",
        "/usr",
    ]
    for folder in SYSTEM_FOLDERS:
        path = Path(folder)
        if path.is_symlink():
            argv += ["--symlink", os.readlink(path), folder]
        elif path.is_dir():
            argv += ["--ro-bind", folder, folder]
    mounted = ["/usr", *SYSTEM_FOLDERS]
    if not interpreter.prefix.startswith("/usr/"):
        argv += ["--ro-bind", interpreter.prefix, interpreter.prefix]
        mounted.append(interpreter.prefix)
    argv += ["--dev", "/dev"]
    argv += ["--bind", str(root / "work"), "/work", "--bind", str(root / "tmp"), "/tmp"]
    argv += ["--ro-bind", str(root / "harness"), "/harness", "--chdir", "/work"]
    for path in hidden:
        if any(path == Path(m) or Path(m) in path.parents for m in mounted):
            argv += ["--tmpfs", str(path)] if path.is_dir() else ["--ro-bind", "/dev/null", str(path)]
    argv += ["--remount-ro", "/"]  # the root bwrap builds is a tmpfs: no files in memory outside /work
    return [*argv, interpreter.executable, "-I", "-S", "-B", *args]


def _prepare(root: Path, uid: int | None, files: Mapping[str, str] | None = None) -> None:
    """root/work and root/tmp writable by the run's uid; root/harness readable."""
    for name in ("work", "tmp", "harness"):
        (root / name).mkdir()
    for relative, text in (files or {}).items():
        target = (root / "work" / relative).resolve()
        if root / "work" not in target.parents:
            raise ValueError(f"a task file must stay inside its folder: {relative}")
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text, encoding="utf-8")
    shutil.copyfile(HARNESS, root / "harness" / "harness.py")
    if uid is not None:
        root.chmod(0o711)
        (root / "harness").chmod(0o755)
        for path in [root / "work", root / "tmp", *(root / "work").rglob("*")]:
            os.lchown(path, uid, uid)


def _reclaim(root: Path) -> None:
    """Files the run's uid made, back to us so the folder can be deleted."""
    me = os.getuid()
    for path in [root / "work", root / "tmp", *(root / "work").rglob("*"), *(root / "tmp").rglob("*")]:
        with contextlib.suppress(OSError):
            os.lchown(path, me, me)
            if path.is_dir() and not path.is_symlink():
                path.chmod(0o700)


def _run_uid() -> int | None:
    """As root, each run gets a uid of its own; otherwise runs keep ours."""
    return secrets.randbelow(RUN_UIDS[1] - RUN_UIDS[0]) + RUN_UIDS[0] if os.geteuid() == 0 else None


@cache
def _interpreter() -> Interpreter | None:
    """This Python when the sandbox user can read it, else the system's python3."""
    ours = Interpreter(os.path.realpath(sys.executable), os.path.realpath(sys.base_prefix))
    candidates = [ours]
    system = shutil.which("python3", path="/usr/bin:/bin")
    if system:
        real = os.path.realpath(system)
        candidates.append(Interpreter(real, str(Path(real).parent.parent)))
    for candidate in candidates:
        if os.geteuid() != 0 or _world_readable(candidate):
            return candidate
    return None


def _world_readable(interpreter: Interpreter) -> bool:
    """A fresh uid without groups reads only what "other" may."""
    stdlib = Path(sysconfig.get_paths()["stdlib"])
    if interpreter.executable != os.path.realpath(sys.executable):
        stdlib = Path(interpreter.prefix) / "lib"
    for path in (Path(interpreter.executable), stdlib):
        for part in [path, *path.parents]:
            mode = part.stat().st_mode
            if not mode & stat.S_IXOTH or (part == path and not mode & stat.S_IROTH):
                return False
    return True


def _limits(limits: Limits, uid: int | None) -> Callable[[], None]:
    cpu = max(1, int(limits.timeout) + 1)
    memory = limits.memory_mb * 1024 * 1024
    size = limits.file_mb * 1024 * 1024
    processes = limits.processes + OWN_PROCESSES + (0 if uid is not None else _own_processes())

    def apply() -> None:
        resource.setrlimit(resource.RLIMIT_AS, (memory, memory))
        resource.setrlimit(resource.RLIMIT_CPU, (cpu, cpu + 1))
        resource.setrlimit(resource.RLIMIT_FSIZE, (size, size))
        resource.setrlimit(resource.RLIMIT_NOFILE, (limits.open_files, limits.open_files))
        resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
        resource.setrlimit(resource.RLIMIT_NPROC, (processes, processes))
        if uid is not None:
            os.setgroups([])
            os.setresgid(uid, uid, uid)
            os.setresuid(uid, uid, uid)

    return apply


def _own_processes() -> int:
    """How many processes our uid runs now (RLIMIT_NPROC counts them all)."""
    me = os.getuid()
    count = 0
    for entry in os.scandir("/proc"):
        if entry.name.isdigit():
            with contextlib.suppress(OSError):
                count += entry.stat().st_uid == me
    return count


def _kill_group(pid: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pid, signal.SIGKILL)


def _tail(stderr: str) -> str:
    lines = [line for line in stderr.strip().splitlines() if line.strip()]
    return f": {lines[-1][:200]}" if lines else ""
