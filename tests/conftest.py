"""Shared fixtures and the two test tiers.

Every test gets its own data folder and its own llm key folder, so no test
reads or writes the real ones, and no two tests (or xdist workers) share a
store. The folders under tests/ mirror the packages under src/benchwarmers.

- `home`: an empty data folder (also `BENCHWARMERS_HOME`).
- `runtime`: an opened `Runtime` on SQLite in `home` (a copy of a store
  migrated once per worker: `testing.store_template.copy_migrated_store`).
- `postgres_url`, `shared_postgres`: a throwaway PostgreSQL database (of the
  test's own, or one per session emptied by its user); skipped, with the
  reason, when PostgreSQL is not running.
- `add_fake(served, **script)`: a fake model on the fake provider that
  answers the onboarding probes the way a capable model would.
- `fake_provider`, `fake_provider_server`: the fake provider's fixtures, for
  every test dir (pytest accepts `pytest_plugins` only here, in the root conftest).

Tiers: a module that needs no server, no network and no database but SQLite
declares `pytestmark = pytest.mark.unit` (`pytest -m unit` runs them in
seconds); every other test is marked `integration` here (real servers on
loopback, PostgreSQL, Redis). A unit test that opens a network connection
fails, so the tier cannot silently grow slow. `-m unit` does not even
import the other modules (their SDKs, browsers and fuzzers cost most of a
unit run): a module is of the tier when its source says `UNIT_MARK`, which
is why the mark is declared per module and never per test. Under `-m unit`
a property test runs `examples(full)` examples, an eighth of the full
suite's (hypothesis' `unit` profile); the xdist controller, which runs no
test, imports none of the app.
"""

from __future__ import annotations

import asyncio
import gc
import os
import re
import socket
import uuid
from collections.abc import AsyncIterator, Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import asynccontextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from benchwarmers.config import environment

if TYPE_CHECKING:
    from benchwarmers.runtime import Runtime
    from benchwarmers.testing import FakeModel, FakeProvider, FakeRequest

pytest_plugins = ["benchwarmers.testing.pytest_plugin"]

POSTGRES_URL = os.environ.get("BENCHWARMERS_TEST_POSTGRES_URL", "postgresql://postgres@127.0.0.1:5432/test")
UNIT_MARK = "pytestmark = pytest.mark.unit"
TESTS = Path(__file__).parent
# The modules whose tests take longest (`--durations`), longest first: they run first, so
# xdist spreads them over its workers and the run does not end on one worker finishing a
# long test alone while the other idles.
LONG_FIRST = (
    "server/routes/test_soak.py",
    "server/test_crash.py",
    "server/test_kill_after_reply.py",
    "server/routes/test_fault_matrix.py",
    "dashboard/test_browser.py",
    "cli/test_first_hour.py",
    "calls/test_caller.py",
    "cli/test_ask.py",
    "limits/test_shared_counters.py",
    "cli/test_doctor_quickstart.py",
    "cli/test_serve_workers.py",
)
# The unit tier runs this share of each property test's examples (`examples`), the
# full suite all of them: `-m unit` is the quick look, the full run the thorough one.
UNIT_SHARE = 8


def examples(full: int) -> int:
    """`@settings(max_examples=examples(200))`: `full` in the full suite, an
    `UNIT_SHARE`th of it (at least 10) under `-m unit`."""
    from hypothesis import settings

    return max(full // UNIT_SHARE, 10) if settings.get_current_profile_name() == "unit" else full


def _unit_tier(config: pytest.Config) -> bool:
    """`-m unit` alone: the quick tier (see the module's docstring)."""
    return bool(config.getoption("markexpr") == "unit")


def _runs_tests(config: pytest.Config) -> bool:
    """False in the xdist controller, which hands tests to its workers and
    runs none (so it need not import what only tests use)."""
    return hasattr(config, "workerinput") or not config.getoption("numprocesses", None)


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "unit: no server, no network, no database but SQLite (fast)")
    config.addinivalue_line("markers", "integration: real servers on loopback, PostgreSQL or Redis")
    if _runs_tests(config):
        from hypothesis import HealthCheck, settings

        # Generating examples on a loaded machine is slow, which says nothing about the code:
        # no test fails for it (tests that set their own health checks list too_slow too).
        settings.register_profile("steady", suppress_health_check=[HealthCheck.too_slow], deadline=None)
        settings.register_profile(  # an eighth of hypothesis' own 100 where a test sets no count
            "unit", settings.get_profile("steady"), max_examples=max(100 // UNIT_SHARE, 10)
        )
        # Loaded before any test module is imported: `@given` takes the profile as it decorates.
        settings.load_profile("unit" if _unit_tier(config) else "steady")


@pytest.fixture
def counts(request: pytest.FixtureRequest) -> Callable[[str], None]:
    """`counts("soak: 2312 requests sent, 0 5xx, ...")`: a line the run's
    summary prints under "counts" (requests sent, 5xx, rows and verdicts
    expected/found, fuzz cases), whether or not output is captured and
    from whichever xdist worker."""

    def say(line: str) -> None:
        request.node.user_properties.append(("counts", line))
        print(line)

    return say


def pytest_terminal_summary(terminalreporter: Any) -> None:
    lines = [
        value
        for key in ("passed", "failed")
        for report in terminalreporter.stats.get(key, [])
        if report.when == "call"
        for name, value in getattr(report, "user_properties", [])
        if name == "counts"
    ]
    if lines:
        terminalreporter.section("counts")
        for line in lines:
            terminalreporter.write_line(line)


def _declares_unit(path: Path) -> bool:
    if path.is_dir():
        return any(_declares_unit(module) for module in path.rglob("test_*.py"))
    return UNIT_MARK in path.read_text(encoding="utf-8")


def pytest_ignore_collect(collection_path: Path, config: pytest.Config) -> bool | None:
    """Under `-m unit` alone, folders and test modules that declare no unit
    module are not collected (so not imported); any other selection collects
    everything."""
    if not _unit_tier(config):
        return None
    is_module = collection_path.name.startswith("test_") and collection_path.suffix == ".py"
    if (collection_path.is_dir() or is_module) and not _declares_unit(collection_path):
        return True
    return None


@pytest.hookimpl(tryfirst=True)  # before `-m` selects on the markers
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        marker = item.get_closest_marker("unit")
        if marker is None:
            item.add_marker(pytest.mark.integration)
        elif UNIT_MARK not in item.path.read_text(encoding="utf-8"):
            raise pytest.UsageError(f"{item.nodeid}: mark a whole module unit ({UNIT_MARK!r}), not one test")
    rank = {TESTS / module: place for place, module in enumerate(LONG_FIRST)}
    if gone := [str(path) for path in rank if not path.exists()]:
        raise pytest.UsageError(f"LONG_FIRST names modules that are not there: {gone}")
    items.sort(key=lambda item: rank.get(item.path, len(rank)))  # stable: the rest keep their order


@pytest.hookimpl(wrapper=True)
def pytest_collection(session: pytest.Session) -> Any:
    """Collecting imports every test module and what it uses, and the
    cyclic collector's full passes, triggered by all that allocating, walk
    the whole growing heap again and again (about a second of a unit
    worker). So none run meanwhile; at the end one pass, and what is left
    lives as long as the run: out of the collector's sight (`gc.freeze`, as
    a server does once built: server/heap.py), the tests' passes walk only
    what the tests make."""
    gc.disable()
    try:
        return (yield)
    finally:
        gc.collect()
        gc.freeze()
        gc.enable()


@pytest.fixture(autouse=True)
def _no_network_in_unit_tests(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> None:
    if request.node.get_closest_marker("unit") is None:
        return
    real_connect = socket.socket.connect

    def connect(sock: socket.socket, address: Any) -> None:
        if sock.family in (socket.AF_INET, socket.AF_INET6):
            raise AssertionError(f"a unit test connected to {address}: mark its module integration")
        real_connect(sock, address)

    monkeypatch.setattr(socket.socket, "connect", connect)
    monkeypatch.setattr(socket.socket, "connect_ex", connect)


@pytest.fixture(autouse=True)
def _isolated_environment(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("BENCHWARMERS_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("LLM_USER_PATH", str(tmp_path / "llm"))
    # A store or Redis named in the shell is not the test's: a test that wants one sets it.
    monkeypatch.delenv(environment.DATABASE_URL.name, raising=False)
    monkeypatch.delenv(environment.REDIS_URL.name, raising=False)
    for name in list(os.environ):
        if name.startswith("BENCHWARMERS_KEY_"):
            monkeypatch.delenv(name)


@pytest.fixture
def home(tmp_path: Path) -> Path:
    folder = tmp_path / "home"
    folder.mkdir(exist_ok=True)
    return folder


@pytest.fixture
async def runtime(home: Path) -> AsyncIterator[Runtime]:
    # Imported here, not above: the xdist controller loads this file and runs no test.
    from benchwarmers.core import finish_background
    from benchwarmers.runtime import Runtime
    from benchwarmers.testing.store_template import copy_migrated_store

    copy_migrated_store(home)  # a store migrated once per worker: migrating costs more than most tests
    async with Runtime.open(home=home) as rt:
        yield rt
        # As the server and `Core.open` do before the runtime closes: a panel still running in its
        # own task would otherwise be cancelled by the loop's end inside a store session, and leave
        # its connection to the garbage collector (SQLAlchemy's "non-checked-in connection").
        await finish_background()


@asynccontextmanager
async def throwaway_postgres() -> AsyncIterator[str]:
    """A fresh, empty database on the local PostgreSQL, dropped afterwards."""
    import asyncpg

    try:
        admin = await asyncpg.connect(POSTGRES_URL, timeout=3)
    except (TimeoutError, OSError, asyncpg.PostgresError) as exc:
        pytest.skip(f"PostgreSQL is not reachable at {POSTGRES_URL}: {exc}")
    name = f"bw_test_{uuid.uuid4().hex[:12]}"
    await admin.execute(f'CREATE DATABASE "{name}"')
    try:
        yield POSTGRES_URL.rsplit("/", 1)[0] + "/" + name
    finally:
        await admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        await admin.close()


@pytest.fixture
async def postgres_url() -> AsyncIterator[str]:
    async with throwaway_postgres() as url:
        yield url


@pytest.fixture(scope="session")
def shared_postgres() -> Iterator[str]:
    """One database for the session (per xdist worker); created and dropped
    on a private event loop in a thread, so any test (sync or async) may ask
    for it. Creating a database costs a second or more."""
    import asyncpg

    name = f"bw_shared_{uuid.uuid4().hex[:12]}"

    async def admin(statement: str) -> None:
        connection = await asyncpg.connect(POSTGRES_URL, timeout=3)
        try:
            await connection.execute(statement)
        finally:
            await connection.close()

    def run(statement: str) -> None:
        with ThreadPoolExecutor(1) as pool:
            pool.submit(asyncio.run, admin(statement)).result()

    try:
        run(f'CREATE DATABASE "{name}"')
    except (TimeoutError, OSError, asyncpg.PostgresError) as exc:
        pytest.skip(f"PostgreSQL is not reachable at {POSTGRES_URL}: {exc}")
    yield POSTGRES_URL.rsplit("/", 1)[0] + "/" + name
    run(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


def capable(request: FakeRequest) -> str:
    """Answers the onboarding probes right, and anything else in one line."""
    prompt = request.messages[-1].text if request.messages else ""
    if "colour of a clear" in prompt:
        return "Blue"
    if "17 + 25" in prompt:
        return "42"
    if "JSON object" in prompt:
        return '{"name": "bench", "count": 3}'
    if "ANSWER:" in prompt:
        return "ANSWER: Paris"
    if re.search(r"\bone word\b", prompt):
        return "ready"
    return f"An answer from {request.model}."


@pytest.fixture
def add_fake(fake_provider: FakeProvider) -> Callable[..., FakeModel]:
    from benchwarmers.testing import FakeModel

    def add(served: str, **script: object) -> FakeModel:
        script.setdefault("answer", capable)
        return fake_provider.add(FakeModel(served, **script))  # type: ignore[arg-type]

    return add
