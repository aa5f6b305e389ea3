"""Adapters against the fake provider over real loopback HTTP: one fake per
module, one outbound client per test, and a `call` helper that runs a request
through an adapter and returns every chunk."""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable

import pytest

from benchwarmers.providers.base import Target
from benchwarmers.providers.kinds import adapter_for
from benchwarmers.providers.outbound import OutboundClient
from benchwarmers.testing import FakeProvider
from benchwarmers.types import Chunk, Request

Call = Callable[..., Awaitable[list[Chunk]]]


@pytest.fixture
async def outbound() -> AsyncIterator[OutboundClient]:
    async with OutboundClient() as client:
        yield client


def target(fake: FakeProvider, api: str, served: str = "m1", key: str | None = None) -> Target:
    return Target("fake", api, fake.base_for(api), served, key)  # type: ignore[arg-type]


@pytest.fixture
def call(outbound: OutboundClient, fake_provider: FakeProvider) -> Call:
    async def run(
        api: str,
        request: Request,
        *,
        stream: bool,
        served: str = "m1",
        key: str | None = None,
        timeout: float | None = 60.0,  # a deadline for a stuck call, not a measure of speed
    ) -> list[Chunk]:
        adapter = adapter_for(api, outbound)
        chunks = adapter.execute(
            target(fake_provider, api, served, key), request, stream=stream, timeout=timeout
        )
        return [chunk async for chunk in chunks]

    return run
