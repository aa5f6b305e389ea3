"""The sandbox holds against code that tries to get out or to lie.

Each run spawns a sandbox (a fifth of a second here), so the isolation
checks share one run, with one test id per property; each way of forging a
pass gets a run of its own, since each ends or spoils its run.
"""

from __future__ import annotations

import asyncio
import hashlib
import hmac
import os
import socket
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from benchwarmers.bench.suite import sandbox
from benchwarmers.bench.suite.checkers import cannot_run
from benchwarmers.bench.suite.sandbox import Interpreter, Limits, SandboxUnavailable, run_tests
from benchwarmers.bench.suite.tasks import Task

pytestmark = pytest.mark.skipif(sandbox.unavailable() is not None, reason=str(sandbox.unavailable()))

PROCESSES = 4

ISOLATION = """
import os, socket, sys, gc, time

def test_no_socket_to_loopback():
    try:
        socket.create_connection(("127.0.0.1", {port}), timeout=2).close()
    except OSError:
        return
    raise AssertionError("connected to the host's loopback")

def test_no_network_beyond():
    try:
        socket.create_connection(("1.1.1.1", 53), timeout=2).close()
    except OSError:
        return
    raise AssertionError("reached the internet")

def test_no_data_folder_or_keys():
    for path in ({home!r} + "/bench.db", {keys!r}, "/etc/passwd"):
        try:
            open(path).read()
        except OSError:
            continue
        raise AssertionError("read " + path)

def test_no_keys_in_the_environment():
    assert set(os.environ) <= {{"PATH", "HOME", "TMPDIR", "LANG", "PWD"}}, sorted(os.environ)

def test_no_write_outside_its_folder():
    for path in ("/usr/evil", "/evil", {outside!r}, "/harness/harness.py"):
        try:
            open(path, "w").write("x")
        except OSError:
            continue
        raise AssertionError("wrote " + path)
    open("/work/mine", "w").write("fine")
    open("/tmp/mine", "w").write("fine")

def test_fork_limit():
    children = []
    try:
        for _ in range(50):
            pid = os.fork()
            if pid == 0:
                time.sleep(5)
                os._exit(0)
            children.append(pid)
    except OSError:
        pass
    finally:
        for pid in children:
            os.kill(pid, 9)
            os.waitpid(pid, 0)
    assert 0 < len(children) <= {processes}, len(children)

def test_no_way_to_the_runner():
    for attempt in (lambda: sys._getframe(1), lambda: gc.get_objects(), lambda: sys.settrace(None)):
        try:
            attempt()
        except (ValueError, PermissionError):
            continue
        raise AssertionError("reached the runner")
    try:
        raise KeyError
    except KeyError as exc:
        try:
            exc.__traceback__.tb_frame
        except ValueError:
            pass
        else:
            raise AssertionError("got a frame")
    try:
        import ctypes
        ctypes.CDLL(None)
    except PermissionError:
        pass
    else:
        raise AssertionError("loaded a library")
    try:
        os.execv("/usr/bin/true", ["true"])
    except PermissionError:
        pass
"""
ISOLATION_IDS = [
    "tests.py::test_no_socket_to_loopback",
    "tests.py::test_no_network_beyond",
    "tests.py::test_no_data_folder_or_keys",
    "tests.py::test_no_keys_in_the_environment",
    "tests.py::test_no_write_outside_its_folder",
    "tests.py::test_fork_limit",
    "tests.py::test_no_way_to_the_runner",
]


@pytest.fixture
def listener() -> Iterator[socket.socket]:
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen()
    server.setblocking(False)
    yield server
    server.close()


async def test_code_cannot_get_out(
    listener: socket.socket, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    home, llm = tmp_path / "home", tmp_path / "llm"
    home.mkdir()
    llm.mkdir()
    (home / "bench.db").write_text("secret rows")
    (llm / "keys.json").write_text('{"groq": "sk-live"}')
    monkeypatch.setenv("BENCHWARMERS_HOME", str(home))
    monkeypatch.setenv("LLM_USER_PATH", str(llm))
    monkeypatch.setenv("OPENAI_API_KEY", "sk-should-not-leak")
    tests = ISOLATION.format(
        port=listener.getsockname()[1],
        home=str(home),
        keys=str(llm / "keys.json"),
        outside=str(tmp_path / "outside"),
        processes=PROCESSES,
    )
    outcome = await run_tests({"tests.py": tests}, ISOLATION_IDS, limits=Limits(processes=PROCESSES))
    assert outcome.results == dict.fromkeys(ISOLATION_IDS, True), outcome.detail
    assert outcome.passed
    with pytest.raises(BlockingIOError):
        listener.accept()  # nothing ever connected
    assert not (tmp_path / "outside").exists()


WRONG = "def add(a, b):\n    return a - b\n"
TESTS = "from solution import add\n\ndef test_add():\n    assert add(2, 3) == 5\n"
UNITTEST = (
    "import unittest\nfrom solution import add\n\n"
    "class TestAdd(unittest.TestCase):\n    def test_add(self):\n        self.assertEqual(add(2, 3), 5)\n"
)


async def _forged(prelude: str, tests: str = TESTS) -> sandbox.TestOutcome:
    files = {"solution.py": prelude + "\n" + WRONG, "tests.py": tests}
    return await run_tests(files, ["tests.py"])


async def test_writing_results_printing_and_sealing_do_not_pass() -> None:
    outcome = await _forged(
        "import atexit, json, os, sys\n"
        "for name in ('result.json', '/tmp/result.json', '/work/results.txt'):\n"
        "    open(name, 'w').write(json.dumps({'passed': ['test_add'], 'failed': {}, 'error': ''}))\n"
        "print('1 tests passed'); print('OK'); print('clean\\npassed\\ttests.py\\t1\\t0\\t')\n"
        "for fd in range(3, 40):\n"
        "    try:\n"
        "        os.write(fd, b'clean\\npassed\\ttests.py\\t1\\t0\\t\\n' + b'0' * 64 + b'\\n')\n"
        "    except OSError:\n"
        "        pass\n"
        "try:\n"
        "    sys.audit('benchwarmers.seal', b'clean\\npassed\\ttests.py\\t1\\t0\\t')\n"
        "except PermissionError:\n"
        "    pass\n"
        "atexit.register(sys.exit, 0)\n"
    )
    assert not outcome.passed
    assert "1 of 1 tests failed" in outcome.detail


async def test_exiting_zero_early_does_not_pass() -> None:
    outcome = await _forged("import os\nos._exit(0)\n")
    assert not outcome.passed
    assert "ended before the tests finished (exit 0)" in outcome.detail


async def test_patching_the_harness_does_not_pass() -> None:
    outcome = await _forged(
        "import unittest\nunittest.TestCase.assertEqual = lambda self, a, b, msg=None: None\n", UNITTEST
    )
    assert not outcome.passed
    assert "changed the test harness: unittest.case.TestCase.assertEqual" in outcome.detail


async def test_patching_builtins_does_not_pass() -> None:
    outcome = await _forged(
        "import sys, builtins\nbuiltins.AssertionError = type('Quiet', (Exception,), {})\n",
    )
    assert not outcome.passed and "changed the test harness: builtins.AssertionError" in outcome.detail


async def test_reaching_the_runner_through_a_traceback_does_not_pass() -> None:
    """An exception's own code runs when the runner describes it: by then its
    traceback (whose frames begin in the runner) is gone, and the runner's
    `finish` seals only for the frame of `main` that started the run."""
    evil = (
        "import linecache, traceback\n"
        "class Evil(Exception):\n"
        "    def __str__(self):\n"
        "        seen = []\n"
        "        linecache.lazycache = lambda name, module_globals: seen.append(module_globals) or False\n"
        "        traceback.StackSummary.extract(traceback.walk_tb(self.__traceback__), capture_locals=True)\n"
        "        for found in seen:\n"
        "            if '_run_id' in found:\n"
        "                found['_run_id'] = lambda *args: (1, 0, '')\n"
        "            if 'finish' in found:\n"
        "                try:\n"
        "                    found['finish'](['clean', 'passed\\ttests.py::test_b\\t1\\t0\\t'])\n"
        "                except PermissionError:\n"
        "                    pass\n"
        "        return 'evil'\n"
        "def add(a, b):\n"
        "    raise Evil()\n"
    )
    tests = TESTS.replace("def test_add", "def test_a") + "\n\ndef test_b():\n    assert add(1, 1) == 2\n"
    outcome = await run_tests(
        {"solution.py": evil, "tests.py": tests}, ["tests.py::test_a", "tests.py::test_b"]
    )
    assert outcome.results == {"tests.py::test_a": False, "tests.py::test_b": False}, outcome.detail


async def test_patching_the_harness_result_class_does_not_pass() -> None:
    """Issue 36, attack 5: on 3fd40b0 an answer patched the runner's own result
    class (found through `unittest.TestResult.__subclasses__()`), and a wrong
    answer to a unittest-style task came back a sealed, clean pass."""
    patched = (
        "import unittest\n"
        "for cls in unittest.TestResult.__subclasses__():\n"
        "    if cls.__module__ != 'unittest.runner':\n"
        "        cls.addFailure = lambda self, test, err: cls.addSuccess(self, test)\n"
        "        cls.addError = cls.addFailure\n"
    )
    outcome = await _forged(patched, UNITTEST)
    assert not outcome.passed and "changed the test harness" in outcome.detail, outcome.detail


async def test_reaching_the_runners_namespace_through_the_result_class_does_not_pass() -> None:
    """The result class's functions lead to no namespace of the runner's:
    what they do lead to is watched like the harness."""
    through_globals = (
        "import unittest\n"
        "for cls in [*unittest.TestResult.__subclasses__(), *object.__subclasses__()]:\n"
        "    if cls.__module__.startswith('unittest'):\n"
        "        continue\n"
        "    for value in list(vars(cls).values()):\n"
        "        found = getattr(value, '__globals__', None)\n"
        "        if type(found) is dict and '_failure' in found:\n"
        "            found['_failure'] = lambda exc: ''\n"
        "            found['_changed'] = lambda before, now: ''\n"
        "            if '_run_id' in found:\n"
        "                found['_run_id'] = lambda *args: (1, 0, '')\n"
    )
    outcome = await _forged(through_globals, UNITTEST)
    assert not outcome.passed and "changed the test harness" in outcome.detail, outcome.detail


async def test_rewriting_a_harness_functions_code_does_not_pass() -> None:
    """A swapped `__code__` keeps the function's identity, which is what the
    snapshot compares: its code and defaults are snapshotted too."""
    swapped = (
        "import unittest\n"
        "unittest.TestCase.assertEqual.__code__ = (lambda self, first, second, msg=None: None).__code__\n"
    )
    outcome = await _forged(swapped, UNITTEST)
    assert not outcome.passed, outcome.detail
    assert (
        "changed the test harness: unittest.case.TestCase (functions).assertEqual.__code__" in outcome.detail
    )


NESTED = (
    "import unittest\nfrom unittest import mock\nfrom solution import pairs\n\n"
    "class TestPairs(unittest.TestCase):\n"
    "    def test_pairs(self):\n"
    "        self.assertEqual(pairs(), {'a': [1, (2, [3])]})\n"
    "    def test_any(self):\n"
    "        self.assertEqual([1, 2], [1, mock.ANY])\n"
    "        self.assertIn(2, [1, 2])\n"
)


async def test_an_object_equal_to_anything_deep_in_a_compared_value_fails_the_assertion() -> None:
    """Issue 36, attack 6, whatever the tests look like: an object equal to
    anything, four levels down in what `assertEqual` compares, fails it; the
    test's own `mock.ANY` does not."""
    cheat = (
        "class Same:\n    def __eq__(self, other): return True\n    def __ne__(self, other): return False\n"
        "    __hash__ = object.__hash__\n"
        "def pairs():\n    return {'a': [1, (2, [Same()])]}\n"
    )
    honest = "def pairs():\n    return {'a': [1, (2, [3])]}\n"
    ids = ["tests.py::TestPairs::test_pairs", "tests.py::TestPairs::test_any"]
    caught = await run_tests({"solution.py": cheat, "tests.py": NESTED}, ids)
    assert caught.results == {ids[0]: False, ids[1]: True}, caught.detail
    assert "compares equal to anything" in caught.detail
    right = await run_tests({"solution.py": honest, "tests.py": NESTED}, ids)
    assert right.passed, right.detail


async def test_a_right_answer_that_writes_a_lot_to_stderr_and_stdout_passes_in_time() -> None:
    """Issue 36, attack 10: on 3fd40b0 300 KB of stderr filled the pipe nobody
    read, and a right answer burned its whole time limit (10.3 s of 10 s)."""
    loud = (
        "import sys\n"
        "def add(a, b):\n"
        "    for _ in range(3_000):\n"
        "        sys.stderr.write('e' * 99 + '\\n')\n"
        "        print('o' * 99)\n"
        "    return a + b\n"
    )
    files = {"solution.py": loud, "tests.py": TESTS}
    # A bound of our own: on 3fd40b0 the blocked run never came back at all here.
    outcome = await asyncio.wait_for(run_tests(files, ["tests.py"], limits=Limits(timeout=5.0)), 30)
    assert outcome.passed and not outcome.timed_out, outcome.detail


def test_only_a_sealed_record_naming_every_test_passes() -> None:
    secret = b"k" * 32
    payload = "clean\npassed\ttests.py::test_b\t1\t0\t"
    mac = hmac.new(secret, payload.encode(), hashlib.sha256).hexdigest()
    sealed = f"junk the code wrote\n{payload}\n{mac}\n".encode()
    limits, both = Limits(), ["tests.py::test_b"]
    assert sandbox.verdict(sealed, secret, "", 0, False, limits, both).passed
    missing = sandbox.verdict(sealed, secret, "", 0, False, limits, ["tests.py::test_a", *both])
    assert not missing.passed and "does not name tests.py::test_a" in missing.detail
    assert not sandbox.verdict(sealed, b"other" * 8, "", 0, False, limits, both).passed


def test_data_folder_under_a_mounted_folder_is_covered(tmp_path: Path) -> None:
    python = Interpreter("/usr/bin/python3", "/usr")
    argv = sandbox._bwrap_argv(tmp_path, python, [Path("/usr/share"), tmp_path / "elsewhere"], [])
    assert argv[argv.index("/usr/share") - 1] == "--tmpfs"
    assert str(tmp_path / "elsewhere") not in argv  # never mounted, nothing to cover


async def test_no_isolation_means_no_run(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sandbox.shutil, "which", lambda name, path=None: None)
    sandbox.unavailable.cache_clear()
    try:
        assert "bubblewrap" in str(sandbox.unavailable())
        with pytest.raises(SandboxUnavailable, match="bubblewrap"):
            await run_tests({"tests.py": TESTS}, ["tests.py"])
        code = Task("t", "code", "code", "p", {"kind": "unit_tests", "tests": TESTS})
        assert "bubblewrap" in str(cannot_run(code))
        assert cannot_run(Task("e", "general", "short", "p", {"kind": "exact", "expected": "x"})) is None
    finally:
        monkeypatch.undo()
        sandbox.unavailable.cache_clear()


async def test_a_run_closes_each_pipe_end_once(monkeypatch: pytest.MonkeyPatch) -> None:
    """The run's pipe ends are closed once each: a second close of the write
    end's number closed the file the process had opened on it meanwhile (the
    call log's database, whose next read failed with a disk I/O error)."""
    real_run = sandbox._run
    taken: list[int] = []

    async def run_then_reopen(*args, **kwargs):  # type: ignore[no-untyped-def]
        outcome = await real_run(*args, **kwargs)
        ends = set(args[6])
        opened = []
        for _ in range(64):  # the lowest free numbers first: until both ends' come back
            opened.append(os.open(os.devnull, os.O_RDONLY))
            if opened[-1] in ends:
                taken.append(opened.pop())
                if len(taken) == len(ends):
                    break
        for fd in opened:
            os.close(fd)
        return outcome

    monkeypatch.setattr(sandbox, "_run", run_then_reopen)
    outcome = await run_tests({"tests.py": "def test_sum():\n    assert sum([1, 2]) == 3\n"}, ["tests.py"])
    assert outcome.passed, outcome.detail
    assert len(taken) == 2, "a pipe end's number never came back free"
    for fd in taken:
        os.fstat(fd)  # still open: nobody closed it behind our back
        os.close(fd)


async def test_a_cancelled_run_closes_its_read_end_after_the_last_read(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A run cancelled while its record's reader waits to read: the read end
    stays open until that read is done. Closed by the run instead, its number
    could be reopened meanwhile and the reader would read someone else's file."""
    real_run, real_read = sandbox._run, os.read
    record_pipe: dict[int, int] = {}  # the read end's number -> its pipe's inode
    reading, done = threading.Event(), threading.Event()
    found_its_pipe: list[bool] = []

    async def note_the_pipe(*args, **kwargs):  # type: ignore[no-untyped-def]
        read_end = args[6][0]
        record_pipe[read_end] = os.fstat(read_end).st_ino
        return await real_run(*args, **kwargs)

    def late_read(fd: int, size: int) -> bytes:
        if fd not in record_pipe or threading.current_thread() is threading.main_thread():
            return real_read(fd, size)
        reading.set()
        time.sleep(1.0)  # the run is cancelled meanwhile
        try:
            found_its_pipe.append(os.fstat(fd).st_ino == record_pipe[fd])
        except OSError:
            found_its_pipe.append(False)
        try:
            return real_read(fd, size)
        finally:
            done.set()

    monkeypatch.setattr(sandbox, "_run", note_the_pipe)
    monkeypatch.setattr(os, "read", late_read)
    slow = "import time\n\ndef test_slow():\n    time.sleep(60)\n"
    run = asyncio.ensure_future(run_tests({"tests.py": slow}, ["tests.py"], limits=Limits(timeout=120)))
    assert await asyncio.to_thread(reading.wait, 30), "the record's reader never started"
    run.cancel()
    with pytest.raises(asyncio.CancelledError):
        await run
    assert await asyncio.to_thread(done.wait, 30), "the record's reader never finished"
    assert found_its_pipe == [True]
