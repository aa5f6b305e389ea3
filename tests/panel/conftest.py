"""Fixtures for panel tests: a fake provider behind an `openai` endpoint,
models and collections registered in a fresh data folder, and the real
server on a free loopback port."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from benchwarmers.runtime import Runtime
from benchwarmers.store.collections import add_collection
from benchwarmers.store.endpoints import add_endpoint
from benchwarmers.store.models import add_model
from benchwarmers.testing.fake_provider import FakeProvider
from benchwarmers.testing.script import FakeModel
from benchwarmers.testing.store_template import copy_migrated_store

if TYPE_CHECKING:
    # The live server (the whole app) is imported where one starts: this file is loaded
    # under `-m unit` too, whose tests start none.
    from benchwarmers.testing.live_server import LiveServer

Bench = Callable[..., Any]


async def register(
    home: Path,
    fake: FakeProvider,
    models: list[FakeModel],
    collections: dict[str, dict[str, Any]],
    model_facts: dict[str, dict[str, Any]] | None = None,
    then: Callable[[Runtime], Awaitable[Any]] | None = None,
) -> Any:
    """Each fake model as a bench model of the same alias on endpoint `fake`,
    and the collections (name -> add_collection keywords); then `then(runtime)`,
    whose result is returned."""
    home.mkdir(parents=True, exist_ok=True)
    copy_migrated_store(home)  # migrated once per worker, not per test
    async with Runtime.open(home) as runtime:
        await add_endpoint(runtime.store, "fake", fake.openai_base, "openai", needs_key=False)
        for model in models:
            fake.add(model)
            facts = (model_facts or {}).get(model.served, {})
            await add_model(runtime.store, model.served, "fake", model.served, **facts)
        for name, fields in collections.items():
            await add_collection(runtime.store, name, **fields)
        return await then(runtime) if then else None


@pytest.fixture
def panel_server(tmp_path: Path, fake_provider: FakeProvider) -> Iterator[Callable[..., Any]]:
    """`with panel_server(models, {"trio": {...}}) as server:` a live server
    whose bench is those fake models."""

    @contextmanager
    def start(
        models: list[FakeModel],
        collections: dict[str, dict[str, Any]],
        model_facts: dict[str, dict[str, Any]] | None = None,
        then: Callable[[Runtime], Awaitable[Any]] | None = None,
    ) -> Iterator[LiveServer]:
        home = tmp_path / "home"
        # Its own loop in its own thread: callers may be async tests with a loop running.
        with ThreadPoolExecutor(1) as pool:
            done = pool.submit(
                asyncio.run, register(home, fake_provider, models, collections, model_facts, then)
            )
            server_state = done.result()
        from benchwarmers.testing.live_server import live_server

        with live_server(home) as server:
            server.prepared = server_state  # type: ignore[attr-defined]
            yield server

    yield start
