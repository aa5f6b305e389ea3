"""Fixtures for the MCP tests: a live server whose bench is fake models on
the fake provider."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from benchwarmers.mcp.transcript import TRANSCRIPT_DIRS_ENV
from benchwarmers.testing.fake_provider import FakeProvider
from benchwarmers.testing.live_server import LiveServer, live_server
from benchwarmers.testing.script import FakeModel

from .mcp_support import TRIO, register, run_sync, trio_models


@pytest.fixture(autouse=True)
def _transcripts_in_tmp(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The tests' transcripts live in tmp_path: the folder transcripts may be read from."""
    monkeypatch.setenv(TRANSCRIPT_DIRS_ENV, str(tmp_path))


@pytest.fixture
def bench_server(tmp_path: Path, fake_provider: FakeProvider) -> Iterator[Callable[..., Any]]:
    """`with bench_server(models, collections) as server:` a live server."""

    @contextmanager
    def start(
        models: list[FakeModel] | None = None, collections: dict[str, dict[str, Any]] | None = None
    ) -> Iterator[LiveServer]:
        home = tmp_path / "home"
        run_sync(register(home, fake_provider, models or trio_models(), collections or TRIO))
        with live_server(home) as server:
            yield server

    yield start
