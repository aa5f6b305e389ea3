"""Fixtures for route-mode tests: one fake provider behind an endpoint of
each API kind, fake models registered on whichever kind a test names, and
the real server on a free loopback port (restartable on the same data)."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterator
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
from benchwarmers.testing.pytest_plugin import fake_provider, fake_provider_server  # noqa: F401
from benchwarmers.testing.script import FakeModel
from benchwarmers.testing.store_template import copy_migrated_store
from benchwarmers.types import API_KINDS, ApiKind

if TYPE_CHECKING:
    # The live server (the whole app) is imported where one starts: this file is loaded
    # under `-m unit` too, whose tests start none.
    from benchwarmers.testing.live_server import LiveServer

RouteServer = Callable[..., Any]


async def register(
    home: Path,
    fake: FakeProvider,
    members: list[tuple[ApiKind, FakeModel]],
    collections: dict[str, dict[str, Any]],
    facts: dict[str, dict[str, Any]],
) -> None:
    """An endpoint per API kind on the fake (named after the kind), each
    fake model as a bench model of the same alias on its kind's endpoint."""
    home.mkdir(parents=True, exist_ok=True)
    copy_migrated_store(home)  # migrated once per worker, not per test
    async with Runtime.open(home) as runtime:
        for kind in API_KINDS:
            await add_endpoint(runtime.store, kind, fake.base_for(kind), kind, needs_key=False)
        for kind, model in members:
            fake.add(model)
            await add_model(runtime.store, model.served, kind, model.served, **facts.get(model.served, {}))
        for name, fields in collections.items():
            await add_collection(runtime.store, name, **fields)


@pytest.fixture
def route_server(tmp_path: Path, fake_provider: FakeProvider) -> Iterator[RouteServer]:  # noqa: F811
    """`with route_server([("openai", FakeModel(...)), ...], {"agents": {...}}) as server:`;
    `facts` are `add_model` keywords by alias (`{"alpha": {"tools": False}}`)."""

    @contextmanager
    def start(
        members: list[tuple[ApiKind, FakeModel]],
        collections: dict[str, dict[str, Any]],
        facts: dict[str, dict[str, Any]] | None = None,
    ) -> Iterator[LiveServer]:
        home = tmp_path / "home"
        # Its own loop in its own thread: the test may be async with a loop running.
        with ThreadPoolExecutor(1) as pool:
            pool.submit(
                asyncio.run, register(home, fake_provider, members, collections, facts or {})
            ).result()
        from benchwarmers.testing.live_server import live_server

        with live_server(home) as server:
            yield server

    yield start
