"""The test runner that runs INSIDE the sandbox, beside code it cannot trust.

This file is not imported by the package: `sandbox.py` runs it with the
sandbox's own Python (`python -I -S -B`, standard library only) through a
bootstrap that `exec`s it in a fresh namespace with a private copy of the
builtins. Nothing refers to that namespace except its own functions, it is
not `__main__` and not in `sys.modules`, so the code under test has no
handle on the runner's functions or state.

Why the verdict cannot be forged from inside:

- The parent decides, not the exit code, not stdout, not a file: it accepts
  only a record written to a pipe and sealed with an HMAC under a per-run
  secret the runner reads from stdin before any code under test is loaded.
  The secret lives only in the closure of an audit hook (`sys.addaudithook`;
  a hook cannot be listed or removed), which also does the sealing, once,
  and only for the runner's own `finish` called from the very frame of
  `main` that installed it (frame identity cannot be forged). So writing
  result files, printing a pass line, `os._exit(0)` before the end or
  `sys.exit` in an `atexit` handler all leave no sealed record, or a
  record that says what really happened. Exceptions the runner catches
  lose their traceback before their own code runs, so no frame of the
  runner (nor its namespace) reaches the code under test that way.
- The hook closes the ways to reach the runner from inside the process:
  frames (`sys._getframe`, `tb_frame`, `gi_frame`, ... raise ValueError,
  which the standard library treats as "no frames here", except for a few
  standard functions, by identity, that never hand a frame on), `gc`'s
  object walks, `ctypes` calls, tracing and profiling hooks, and starting
  programs. The sandbox mounts no `/proc`, and the runner makes itself
  non-dumpable before any model code runs, so no process it starts can
  read its memory. Forks stay allowed (the parent limits their number).
- The one class of the runner's the code can find, the result class
  (`unittest.TestResult.__subclasses__()`), runs in a namespace of its own
  (`_result_class`): its functions' `__globals__` do not lead to the
  runner's namespace, whose functions (the checks below among them) the
  code could otherwise replace.
- An answer that returns an object equal to anything (`__eq__` always
  True) does not pass a test by it: `TestCase`'s equality and membership
  assertions (`_guard_equality`) also fail when either side, or anything
  inside it (lists, tuples, dicts, sets, to any depth), compares equal to
  a fresh object nothing honest equals. The tasks' own tests stay as their
  authors wrote them (a real bug's upstream tests, `patches.py`).
- Patching the harness is seen: the builtins, every `unittest` module and
  class, the result class with its namespace and builtins, and each test
  module's test objects are snapshotted before the tests run and compared,
  by identity, after each test and before sealing; so are the code and
  defaults of each function among them (a swapped `__code__` keeps the
  function's identity). Any change fails the
  whole run as tampered.

Plan (read from the file named in argv[1]): {"work": folder, "tests": [ids],
"fd": result pipe}. A test id is pytest-style: `path.py`, `path.py::name`
or `path.py::Class::method`. The record is one line per requested id,
`status<TAB>id<TAB>ran<TAB>failed<TAB>detail`, status `passed` (it ran at least one
test and every one passed) or `failed`, and a first line `tampered` or
`clean`; then the hex HMAC-SHA256 of those bytes on its own line.
"""

import builtins
import gc
import hashlib
import json
import os
import sys
import threading
import traceback
import types
import typing
import unittest

DETAIL = 300
BLOCKED = frozenset(
    {
        "gc.get_objects",
        "gc.get_referrers",
        "gc.get_referents",
        "sys.settrace",
        "sys.setprofile",
        "sys._current_frames",
        "sys._current_exceptions",
        "os.exec",
        "os.posix_spawn",
        "os.spawn",
        "os.system",
        "subprocess.Popen",
        "pty.spawn",
    }
)
FRAME_ATTRIBUTES = frozenset({"tb_frame", "gi_frame", "cr_frame", "ag_frame"})
# What a function runs by, besides its identity: each watched function's are snapshotted too.
FUNCTION_PARTS = ("__code__", "__defaults__", "__kwdefaults__")
SEAL = "benchwarmers.seal"


def _codes_using_frames() -> tuple[frozenset[types.CodeType], frozenset[types.CodeType]]:
    """(standard functions that look at frames and keep them to themselves,
    generators that hand frames on and may do so only to traceback's own
    summary code). assertRaises clears its traceback's frames; typing and
    namedtuple ask for the caller's module name; formatting a traceback
    reads each frame's line and, if asked, its locals' reprs."""
    summary = traceback.StackSummary
    extract = summary.extract.__func__.__code__  # type: ignore[attr-defined]
    nested = [c for c in extract.co_consts if isinstance(c, types.CodeType)]
    consumers = [*nested, summary._extract_from_extended_frame_gen.__func__.__code__]  # type: ignore[attr-defined]
    handing = [traceback.walk_tb.__code__]
    if hasattr(traceback, "_walk_tb_with_full_positions"):
        handing.append(traceback._walk_tb_with_full_positions.__code__)
    keeping = [
        traceback.clear_frames.__code__,
        typing._caller.__code__,  # type: ignore[attr-defined]
        __import__("collections").namedtuple.__code__,
    ]
    return frozenset(keeping + consumers), frozenset(handing)


def _install_hook(secret: bytes, fd: int, finish_code: types.CodeType) -> None:
    """The one trusted object: it holds the secret and seals the record, once,
    for `finish` called from this very frame of `main` (a frame is not
    forged: calling `finish` or `main` again makes new ones)."""
    getframe = sys._getframe
    main_frame = getframe(1)
    get_ident = threading.get_ident
    sha256 = hashlib.sha256
    write = os.write
    keeping, handing = _codes_using_frames()
    busy: set[int] = set()
    sealed: list[bool] = []
    inner = bytes(b ^ 0x36 for b in secret.ljust(64, b"\0"))
    outer = bytes(b ^ 0x5C for b in secret.ljust(64, b"\0"))

    def hook(event: str, args: tuple[object, ...]) -> None:
        me = get_ident()
        if me in busy:
            return
        if event in BLOCKED or event.startswith("ctypes."):
            raise PermissionError(f"{event} is not allowed in the sandbox")
        frames = event == "sys._getframe" or (
            event == "object.__getattr__" and len(args) == 2 and args[1] in FRAME_ATTRIBUTES
        )
        if not frames and event != SEAL:
            return
        busy.add(me)
        try:
            caller = getframe(1)
            code = caller.f_code
            if frames:
                # A generator that hands frames on, only to traceback's own summary code.
                consumer = caller.f_back.f_code if caller.f_back is not None else None
                ok = code in keeping or (code in handing and consumer in keeping)
                if not ok:
                    raise ValueError("frames are not available in the sandbox")
                return
            from_main = caller.f_back is main_frame
            if (
                code is not finish_code
                or not from_main
                or sealed
                or len(args) != 1
                or type(args[0]) is not bytes
            ):
                raise PermissionError("only the harness seals a result, once")
            sealed.append(True)
            payload = args[0]
            mac = sha256(outer + sha256(inner + payload).digest()).hexdigest()
            data = payload + b"\n" + mac.encode() + b"\n"
            while data:
                data = data[write(fd, data) :]
        finally:
            busy.discard(me)

    sys.addaudithook(hook)


def _snapshot(reporting: dict[str, typing.Any]) -> dict[str, dict[str, object]]:
    """What the harness relies on: builtins, every unittest module and class,
    and what the code can reach of the result class (`_result_class`)."""
    taken: dict[str, dict[str, object]] = {
        "builtins": dict(vars(builtins)),
        "the result class's namespace": dict(reporting),
        "the result class's builtins": dict(reporting["__builtins__"]),
        "the result class": dict(vars(reporting["_Result"])),
    }
    for name, module in list(sys.modules.items()):
        if name == "unittest" or name.startswith("unittest."):
            taken[name] = dict(vars(module))
            for attr, value in vars(module).items():
                if isinstance(value, type) and value.__module__ == name:
                    taken[f"{name}.{attr}"] = dict(vars(value))
    for where, items in list(taken.items()):
        parts = {
            f"{key}.{part}": getattr(value, part)
            for key, value in items.items()
            if type(value) is types.FunctionType
            for part in FUNCTION_PARTS
        }
        if parts:
            taken[f"{where} (functions)"] = parts
    return taken


def _changed(before: dict[str, dict[str, object]], now: dict[str, dict[str, object]]) -> str:
    for where, items in before.items():
        current = now.get(where)
        if current is None:
            return f"{where} was removed"
        for key in set(items) | set(current):
            if key == "__warningregistry__" or (
                key not in items and isinstance(current[key], types.ModuleType)
            ):
                continue  # what `warnings` records, a submodule imported since (`from unittest import mock`)
            if items.get(key, _changed) is not current.get(key, _changed):
                return f"{where}.{key} was changed"
    return ""


def _text(value: object) -> str:
    """A detail as a plain one-line string, whatever the exception's __str__ does."""
    try:
        said = str(value)
    except BaseException:
        said = "(unprintable)"
    if type(said) is not str:
        said = "(unprintable)"
    return said.replace("\t", " ").replace("\r", " ").replace("\n", " ")[:DETAIL]


def _failure(exc: BaseException) -> str:
    """An exception as one line. Its traceback goes first, before any of its
    own code (`__str__`) runs: its frames begin in the runner, and their
    globals are the runner's namespace."""
    BaseException.with_traceback(exc, None)
    return _text(type(exc).__name__) + ": " + _text(exc)


def _result_class() -> tuple[type, dict[str, typing.Any]]:
    """The class the unittest tests report to, and the namespace its
    functions run in: not the runner's.

    The code under test finds the class (`unittest.TestResult.__subclasses__()`)
    and, through its functions' `__globals__`, their namespace. Built here
    from a class local to this function, with each function moved into a
    namespace of its own (`_failure` and `_text` with them), the runner's
    namespace is not reachable that way; the local class is collected before
    any model code runs. What the code can reach (the class, that namespace
    and its builtins) is watched like the harness (`_snapshot`)."""

    class Outcomes:
        """Collects unittest outcomes by test id (method name)."""

        def __init__(self) -> None:
            unittest.TestResult.__init__(self)  # type: ignore[arg-type]
            self.outcomes: dict[str, str] = {}
            self.fixture = ""  # setUpClass or tearDownClass failed

        def _put(self, test: object, outcome: str) -> None:
            name = getattr(test, "_testMethodName", None)
            if type(name) is not str:
                self.fixture = self.fixture or outcome
            elif name not in self.outcomes or outcome:
                self.outcomes[name] = outcome

        def addSuccess(self, test: unittest.TestCase) -> None:
            self._put(test, "")

        def addFailure(self, test: unittest.TestCase, err: typing.Any) -> None:
            self._put(test, _failure(err[1]))

        def addError(self, test: unittest.TestCase, err: typing.Any) -> None:
            self._put(test, _failure(err[1]))

        def addSubTest(self, test: typing.Any, subtest: typing.Any, err: typing.Any) -> None:
            if err is not None:
                self._put(test, _failure(err[1]))  # `test` is the case, `subtest` the _SubTest

        def addSkip(self, test: unittest.TestCase, reason: str) -> None:
            self._put(test, "skipped: " + _text(reason))

        def addExpectedFailure(self, test: unittest.TestCase, err: typing.Any) -> None:
            self._put(test, "")

        def addUnexpectedSuccess(self, test: unittest.TestCase) -> None:
            self._put(test, "passed but was expected to fail")

    namespace: dict[str, typing.Any] = {
        "__builtins__": dict(vars(builtins)),
        "unittest": unittest,
        "typing": typing,
        "DETAIL": DETAIL,
    }
    namespace["_text"] = _moved(_text, namespace)
    namespace["_failure"] = _moved(_failure, namespace)
    members = {
        name: _moved(value, namespace) if isinstance(value, types.FunctionType) else value
        for name, value in vars(Outcomes).items()
        if name not in ("__dict__", "__weakref__")
    }
    result = type("_Result", (unittest.TestResult,), members)
    namespace["_Result"] = result
    return result, namespace


# Exact types whose equality is Python's own: looked into, never suspected.
PLAIN = (bool, int, float, complex, str, bytes, bytearray, type(None), list, tuple, dict, set, frozenset)
# Values `_vacuous` looks at, at most, per assertion (a huge or self-containing structure).
LOOKED_AT = 100_000


class Probe:
    """What `_equals_anything` compares a value with: a class of the
    harness's, so no honest value of the code's or the tests' equals one."""

    __slots__ = ()


def _equals_anything(value: object) -> bool:
    """Whether `value` claims to equal a fresh object of a class made for the
    check, which nothing honest equals (`unittest.mock.ANY` is meant to)."""
    if type(value) in PLAIN or type(value).__module__ == "unittest.mock":
        return False
    probe = Probe()
    try:
        return bool(value == probe) or not bool(value != probe)
    except Exception:
        return False  # an object that refuses the comparison claims nothing


def _vacuous(first: object, second: object) -> str:
    """Why `first == second` proves nothing (an object in either that equals
    anything), or "". Containers are followed pairwise where they line up
    (sequences of one length, a dict's common keys) and wholly for sets."""
    pending = [(first, second)]
    looked = 0
    while pending and looked < LOOKED_AT:
        a, b = pending.pop()
        looked += 1
        for value in (a, b):
            if _equals_anything(value):
                return f"a {_text(type(value).__name__)} object that compares equal to anything"
        try:
            if isinstance(a, list | tuple) and isinstance(b, list | tuple) and len(a) == len(b):
                pending.extend(zip(a, b, strict=True))
            elif isinstance(a, dict) and isinstance(b, dict):
                pending.extend((key, key) for key in a)
                pending.extend((a[key], b[key]) for key in a if key in b)
            elif isinstance(a, set | frozenset) and isinstance(b, set | frozenset):
                pending.extend((value, value) for value in (*a, *b))
        except Exception:
            continue  # a container that cannot be walked: its comparison stands as it is
    return ""


# One checked assertion, made per name in the result class's namespace: its
# original is looked up by a name written in its code (a constant), not held
# in a closure, whose cell the code under test could rewrite.
CHECKED = """
def {name}(self, first, second, *args, **kwargs):
    ORIGINALS[{name!r}](self, first, second, *args, **kwargs)
    said = _vacuous(first, second)
    if said:
        raise self.failureException(said + " was compared: the comparison proves nothing")
"""


# `TestCase` assertions that pass on `==` (or `in`) between their first two arguments.
EQUALITY_ASSERTIONS = (
    "assertEqual",
    "assertIn",
    "assertCountEqual",
    "assertSequenceEqual",
    "assertListEqual",
    "assertTupleEqual",
    "assertDictEqual",
    "assertSetEqual",
    "assertMultiLineEqual",
)


def _guard_equality(reporting: dict[str, typing.Any]) -> None:
    """Every assertion of `EQUALITY_ASSERTIONS` on `unittest.TestCase`, also
    failing when the comparison proved nothing (`_vacuous`). Made in the
    result class's namespace (watched by `_snapshot`), not the runner's; the
    originals in a read-only mapping there."""
    originals = {name: getattr(unittest.TestCase, name) for name in EQUALITY_ASSERTIONS}
    reporting.update(
        PLAIN=PLAIN,
        LOOKED_AT=LOOKED_AT,
        Probe=Probe,
        ORIGINALS=types.MappingProxyType(originals),
    )
    for function in (_equals_anything, _vacuous):
        reporting[function.__name__] = _moved(function, reporting)
    for name in EQUALITY_ASSERTIONS:
        exec(CHECKED.format(name=name), reporting)
        setattr(unittest.TestCase, name, reporting.pop(name))


def _moved(function: typing.Any, namespace: dict[str, typing.Any]) -> types.FunctionType:
    """`function` (a plain function) with `namespace` for its globals."""
    copy = types.FunctionType(
        function.__code__, namespace, function.__name__, function.__defaults__, function.__closure__
    )
    copy.__kwdefaults__ = function.__kwdefaults__
    copy.__qualname__ = function.__qualname__
    return copy


def _load(work: str, relative: str, source: str) -> types.ModuleType:
    """Execute one test file as a module named by its path (so its relative
    imports work), from the source read before any model code ran."""
    dotted = relative[: -len(".py")].replace("/", ".")
    module = types.ModuleType(dotted)
    module.__file__ = os.path.join(work, relative)
    module.__package__ = dotted.rpartition(".")[0]
    sys.modules[dotted] = module
    exec(compile(source, module.__file__, "exec"), module.__dict__)
    return module


def _run_unittest(cls: type, names: list[str], result_class: type) -> dict[str, str]:
    suite = unittest.TestSuite([cls(name) for name in names])
    result = result_class()
    suite.run(result)
    outcomes: dict[str, str] = result.outcomes
    for name in names:
        outcomes.setdefault(name, "did not run")
        if result.fixture:
            outcomes[name] = outcomes[name] or "class fixture failed: " + result.fixture
    return outcomes


def _run_plain(function: typing.Any, instance: object = None) -> str:
    """A pytest-style test: a function, or a method of a plain Test* class."""
    code = getattr(function, "__code__", None)
    wanted = (code.co_argcount - (1 if instance is not None else 0)) if code is not None else 0
    if wanted > len(getattr(function, "__defaults__", None) or ()):
        return "needs pytest fixtures, which this runner does not provide"
    try:
        if instance is None:
            function()
            return ""
        setup, teardown = getattr(instance, "setup_method", None), getattr(instance, "teardown_method", None)
        if setup is not None:
            setup(function)
        try:
            function(instance)
        finally:
            if teardown is not None:
                teardown(function)
        return ""
    except unittest.SkipTest as exc:
        return "skipped: " + _text(exc)
    except BaseException as exc:
        return _failure(exc)


def _tests_in(module: types.ModuleType, parts: list[str]) -> list[tuple[str, typing.Any, list[str]]]:
    """(name, object, method names) of the tests an id names inside a module."""
    found: list[tuple[str, typing.Any, list[str]]] = []
    for name, value in list(vars(module).items()):
        if parts and name != parts[0]:
            continue
        if isinstance(value, type) and (issubclass(value, unittest.TestCase) or name.startswith("Test")):
            methods = sorted(m for m in dir(value) if m.startswith("test") and callable(getattr(value, m)))
            if len(parts) > 1:
                methods = [m for m in methods if m == parts[1]]
            if methods:
                found.append((name, value, methods))
        elif name.startswith("test") and callable(value) and len(parts) < 2:
            found.append((name, value, []))
    return found


def _run_id(
    module: types.ModuleType, parts: list[str], check: typing.Callable[[], str], result_class: type
) -> tuple[int, int, str]:
    """Run the tests an id names: (how many ran, how many failed, first failure or "")."""
    if parts and "[" in parts[-1]:
        return 0, 0, "parametrized tests need pytest, which this runner does not provide"
    ran = failed = 0
    first = ""
    for name, value, methods in _tests_in(module, parts):
        if isinstance(value, type) and issubclass(value, unittest.TestCase):
            outcomes = _run_unittest(value, methods, result_class)
        elif isinstance(value, type):
            outcomes = {}
            for method in methods:
                try:
                    instance = value()
                except BaseException as exc:
                    outcomes[method] = _failure(exc)
                    continue
                outcomes[method] = _run_plain(getattr(value, method), instance)
        else:
            outcomes = {name: _run_plain(value)}
        tampered = check()
        if tampered:
            return ran, failed, tampered
        for test, outcome in outcomes.items():
            ran += 1
            if outcome:
                failed += 1
                first = first or f"{test}: {outcome}"
    if ran == 0 and not first:
        first = "no such test"
    return ran, failed, first


FIXTURES = frozenset(
    {"setUp", "tearDown", "setUpClass", "tearDownClass", "run", "__call__", "setup_method", "teardown_method"}
)


def _test_objects(modules: dict[str, types.ModuleType]) -> dict[str, dict[str, object]]:
    """The tests themselves: each module's test functions and classes, and
    each class's test methods and fixtures (other attributes may change)."""
    taken: dict[str, dict[str, object]] = {}
    for relative, module in modules.items():
        names = [name for name, _value, _methods in _tests_in(module, [])]
        taken[relative] = {name: vars(module)[name] for name in names}
        for name in names:
            value = vars(module)[name]
            if isinstance(value, type):
                taken[f"{relative}::{name}"] = {
                    k: v for k, v in vars(value).items() if k in FIXTURES or k.startswith("test")
                }
    return taken


def _not_dumpable() -> None:
    """No other process of the sandbox's user may read this one's memory
    (ptrace, /proc/PID/mem): prctl(PR_SET_DUMPABLE, 0)."""
    import ctypes

    if ctypes.CDLL(None, use_errno=True).prctl(4, 0, 0, 0, 0) != 0:
        raise OSError(ctypes.get_errno(), "prctl(PR_SET_DUMPABLE) failed")


def _async_without_debug(reporting: dict[str, typing.Any]) -> None:
    """Load IsolatedAsyncioTestCase before the snapshot (unittest imports it
    lazily), running its loop out of asyncio's debug mode: debug mode takes
    the caller's frame for every callback, which the sandbox refuses. The
    function lives in the result class's namespace, not the runner's."""
    import asyncio

    case = unittest.IsolatedAsyncioTestCase
    reporting["asyncio"] = asyncio

    def setup_runner(self: typing.Any) -> None:
        assert self._asyncioRunner is None, "asyncio runner is already initialized"
        self._asyncioRunner = asyncio.Runner(debug=False)

    case._setupAsyncioRunner = _moved(setup_runner, reporting)  # type: ignore[attr-defined]


def finish(lines: list[str]) -> None:
    sys.audit(SEAL, "\n".join(lines).encode("utf-8", "replace"))


def main() -> None:
    secret = bytes.fromhex(sys.stdin.readline().strip())
    with open(sys.argv[1], encoding="utf-8") as handle:
        plan = json.load(handle)
    work, ids, fd = plan["work"], list(plan["tests"]), int(plan["fd"])
    os.set_inheritable(fd, False)
    sources: dict[str, str] = {}
    for test_id in ids:
        relative = test_id.split("::")[0]
        if relative not in sources:
            with open(os.path.join(work, relative), encoding="utf-8") as handle:
                sources[relative] = handle.read()
    result_class, reporting = _result_class()
    _guard_equality(reporting)
    if any("IsolatedAsyncioTestCase" in source for source in sources.values()):
        _async_without_debug(reporting)
    gc.collect()  # the local class `_result_class` built from, whose functions lead here, is gone
    _not_dumpable()
    _install_hook(secret, fd, finish.__code__)
    del secret
    before = _snapshot(reporting)
    sys.path.insert(0, work)
    os.chdir(work)
    modules: dict[str, types.ModuleType] = {}
    broken: dict[str, str] = {}
    for relative, source in sources.items():
        try:
            modules[relative] = _load(work, relative, source)
        except BaseException as exc:
            broken[relative] = "could not import the tests: " + _failure(exc)
    tests = _test_objects(modules)

    def check() -> str:
        changed = _changed(before, _snapshot(reporting)) or _changed(tests, _test_objects(modules))
        return "the code changed the test harness: " + changed if changed else ""

    lines: list[str] = []
    tampered = ""
    for test_id in ids:
        relative, *parts = test_id.split("::")
        if relative in broken:
            lines.append(f"failed\t{test_id}\t0\t0\t{_text(broken[relative])}")
            continue
        try:
            ran, failed, first = _run_id(modules[relative], parts, check, result_class)
        except BaseException as exc:  # the runner itself was made to fail: the id fails
            ran, failed, first = 0, 0, "the tests could not be run: " + _failure(exc)
        if first.startswith("the code changed the test harness"):
            tampered = tampered or first
        status = "passed" if ran and not first else "failed"
        lines.append(f"{status}\t{test_id}\t{ran}\t{failed}\t{_text(first)}")
    tampered = tampered or check()
    finish([("tampered\t" + _text(tampered)) if tampered else "clean", *lines])


if __name__ == "benchwarmers_harness":
    main()
