"""Fixtures for the dashboard's tests: one headless Chromium per test module
(Debian's `chromium`, driven by Playwright; browsers are never downloaded),
a folder for screenshots, and a fake bench whose suite runs without its
pause between calls.

The browser tests skip, saying why, where Chromium or Playwright is
missing; `.ci/run` installs Chromium.
"""

from __future__ import annotations

import asyncio
import functools
import os
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from benchwarmers.bench import scheduler
from benchwarmers.bench.suite.runner import run_suite
from benchwarmers.core import Core
from benchwarmers.dashboard import auth

CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]
ARTIFACTS_ENV = "BENCHWARMERS_ARTIFACTS"


def chromium_path() -> str | None:
    for name in ("chromium", "chromium-browser"):
        found = shutil.which(name)
        if found:
            return found
    return None


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    """One browser for a test module. Not per session: Playwright's sync API
    keeps an event loop running on this thread while it is open, and every
    other test's `asyncio.run` would then refuse to start."""
    executable = chromium_path()
    if executable is None:
        pytest.skip("no chromium on PATH (apt-get install -y chromium; .ci/run does)")
    sync_api = pytest.importorskip("playwright.sync_api")
    with sync_api.sync_playwright() as playwright:
        launched = playwright.chromium.launch(executable_path=executable, args=CHROMIUM_ARGS)
        try:
            yield launched
        finally:
            launched.close()


@pytest.fixture(scope="session")
def artifacts() -> Path:
    """Where screenshots go: $BENCHWARMERS_ARTIFACTS, else a fresh temp folder (printed)."""
    folder = Path(os.environ.get(ARTIFACTS_ENV) or tempfile.mkdtemp(prefix="benchwarmers-dashboard-"))
    folder.mkdir(parents=True, exist_ok=True)
    print(f"\ndashboard screenshots: {folder}")
    return folder


@pytest.fixture
def quick_suite(monkeypatch: pytest.MonkeyPatch) -> None:
    """The server's suite runs without its pause between calls (it is 3 s, for real quotas)."""
    made = scheduler.bench_jobs

    def jobs(runtime: Any) -> scheduler.BenchJobs:
        built = made(runtime)
        built.run_suite = functools.partial(run_suite, gap=0.0)
        return built

    monkeypatch.setattr(scheduler, "bench_jobs", jobs)


OWNER_PASSWORD = "correct horse"


def set_setting(home: Path, name: str, value: str) -> None:
    """As `benchwarmers settings set` does: its own runtime on the same store."""

    async def change() -> None:
        async with Core.open(home=home) as core:
            await core.admin.change_setting(name, value)

    asyncio.run(change())


def sign_in(client: httpx.Client, home: Path, password: str = OWNER_PASSWORD) -> None:
    """Set the login password (as the CLI does) and sign `client` in, as the
    owner does before the dashboard makes keys or changes settings."""
    set_setting(home, "login_password", password)
    log_in(client, password)


def log_in(client: httpx.Client, password: str = OWNER_PASSWORD) -> None:
    """Sign `client` in with the password already set."""
    client.get("/login")
    answer = client.post("/login", data={"password": password, "csrf": client.cookies[auth.CSRF_COOKIE]})
    assert answer.status_code == 303, answer.text
