"""Fixtures for the MCP tests: a live server whose bench is fake models on
the fake provider, gateway keys made in its data folder, and MCP clients
(the official SDK's) over streamable HTTP and over stdio."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import asynccontextmanager, contextmanager
from pathlib import Path
from typing import Any

import httpx2
import pytest
from mcp import Client

from benchwarmers.runtime import Runtime
from benchwarmers.server import gatewaykeys
from benchwarmers.store import registry
from benchwarmers.testing.fake_provider import FakeProvider
from benchwarmers.testing.live_server import LiveServer, live_server
from benchwarmers.testing.script import FakeModel

TRIO = {"trio": {"members": ["fast", "mid", "slow"], "purpose": "three opinions"}}


def trio_models(slow_ttfb: float = 0.15) -> list[FakeModel]:
    return [
        FakeModel("fast", answer="fast answer", ttfb=0.02),
        FakeModel("mid", answer="mid answer", ttfb=0.05),
        FakeModel("slow", answer="slow answer", ttfb=slow_ttfb),
    ]


def run_sync(work: Any) -> Any:
    """Run a coroutine on its own loop in its own thread (tests may already run a loop)."""
    with ThreadPoolExecutor(1) as pool:
        return pool.submit(asyncio.run, work).result()


async def _register(
    home: Path, fake: FakeProvider, models: list[FakeModel], collections: dict[str, dict[str, Any]]
) -> None:
    async with Runtime.open(home) as runtime:
        await registry.add_endpoint(runtime.store, "fake", fake.openai_base, "openai", needs_key=False)
        for model in models:
            fake.add(model)
            await registry.add_model(runtime.store, model.served, "fake", model.served)
        for name, fields in collections.items():
            await registry.add_collection(runtime.store, name, **fields)


def make_key(home: Path, name: str, collections: tuple[str, ...] = ()) -> str:
    async def create() -> str:
        async with Runtime.open(home) as runtime:
            _info, secret = await gatewaykeys.create_key(runtime.store, name, collections=collections)
            return secret

    secret: str = run_sync(create())
    return secret


@pytest.fixture
def bench_server(tmp_path: Path, fake_provider: FakeProvider) -> Iterator[Callable[..., Any]]:
    """`with bench_server(models, collections) as server:` a live server."""

    @contextmanager
    def start(
        models: list[FakeModel] | None = None, collections: dict[str, dict[str, Any]] | None = None
    ) -> Iterator[LiveServer]:
        home = tmp_path / "home"
        run_sync(_register(home, fake_provider, models or trio_models(), collections or TRIO))
        with live_server(home) as server:
            yield server

    yield start


@asynccontextmanager
async def http_client(url: str, key: str = "", **options: Any) -> AsyncIterator[Client]:
    """The SDK's client over streamable HTTP, with a gateway key if given."""
    from mcp.client.streamable_http import streamable_http_client

    headers = {"authorization": f"Bearer {key}"} if key else {}
    async with (
        httpx2.AsyncClient(headers=headers, timeout=httpx2.Timeout(30.0)) as http,
        Client(streamable_http_client(url, http_client=http), **options) as client,
    ):
        yield client
