"""Fixtures for the real-agent tests: the pinned agents' binaries (installed
by `.ci/run` into `.ci/agents/`), a fresh HOME per run, and a served
checkout (the real server on a free loopback port) whose collection
`agents` has fake-provider members scripted by each test.

Every test here is marked `agents` (`pytest -m agents` runs only them;
they also run in the default command). A binary that is absent skips its
tests with one line saying how to install it."""

from __future__ import annotations

import asyncio
import shutil
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from benchwarmers.runtime import Runtime
from benchwarmers.store.collections import add_collection
from benchwarmers.store.endpoints import add_endpoint
from benchwarmers.store.models import add_model
from benchwarmers.testing.fake_provider import FakeProvider
from benchwarmers.testing.live_server import live_server
from benchwarmers.testing.script import FakeModel
from benchwarmers.testing.store_template import copy_migrated_store
from benchwarmers.types import ApiKind

from .agents_support import AGENT_TIMEOUT, Bench


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    here = Path(__file__).parent
    for item in items:
        if here in Path(str(item.fspath)).parents:
            item.add_marker(pytest.mark.agents)
            item.add_marker(pytest.mark.timeout(int(AGENT_TIMEOUT * 2.5)))


async def _register(home: Path, fake: FakeProvider, members: list[tuple[ApiKind, FakeModel]]) -> None:
    home.mkdir(parents=True, exist_ok=True)
    copy_migrated_store(home)  # migrated once per worker, not per test
    async with Runtime.open(home) as runtime:
        for kind in {kind for kind, _ in members}:
            await add_endpoint(runtime.store, kind, fake.base_for(kind), kind, needs_key=False)
        for kind, model in members:
            fake.add(model)
            await add_model(
                runtime.store, model.served, kind, model.served, context_window=1_000_000, output_limit=8192
            )
        aliases = [model.served for _, model in members]
        await add_collection(runtime.store, "agents", aliases, purpose="drives coding agents")


@pytest.fixture
def bench(tmp_path: Path) -> Iterator[Callable[..., Any]]:
    """`with bench([("openai", FakeModel(...))]) as b:` a served checkout
    whose collection `agents` holds those members."""

    @contextmanager
    def start(members: list[tuple[ApiKind, FakeModel]]) -> Iterator[Bench]:
        data, home, work = tmp_path / "data", tmp_path / "home", tmp_path / "work"
        home.mkdir()
        work.mkdir()
        with FakeProvider() as fake:
            with ThreadPoolExecutor(1) as pool:
                pool.submit(asyncio.run, _register(data, fake, members)).result()
            with live_server(data) as server:
                yield Bench(server, fake, home, work)
        shutil.rmtree(home, ignore_errors=True)

    yield start
