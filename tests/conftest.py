"""Shared fixtures: every test gets its own data folder and its own llm key
folder, so no test reads or writes the real ones, and no two tests (or
xdist workers) share a store.

- `home`: an empty data folder (also `BENCHWARMERS_HOME`).
- `runtime`: an opened `Runtime` on SQLite in `home`.
- `fake_provider`, `fake_provider_server`: the fake provider's fixtures, for
  every test dir (pytest accepts `pytest_plugins` only here, in the root conftest).
"""

from __future__ import annotations

import os
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from benchwarmers.runtime import Runtime

pytest_plugins = ["benchwarmers.testing.pytest_plugin"]


@pytest.fixture(autouse=True)
def _isolated_environment(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("BENCHWARMERS_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("LLM_USER_PATH", str(tmp_path / "llm"))
    monkeypatch.delenv("BENCHWARMERS_DATABASE_URL", raising=False)
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
    async with Runtime.open(home=home) as rt:
        yield rt
