"""What a long stream costs to read: the call's deadline bounds every line
without a task (or a header dict) per line, so reading a 400-piece reply
starts a handful of tasks however long the reply is."""

from __future__ import annotations

import asyncio
from collections.abc import Coroutine, Generator
from typing import Any

import pytest

from benchwarmers.testing import FakeModel, FakeProvider
from benchwarmers.types import API_KINDS, Request, TextDelta, user

from .conftest import Call

PIECES = 400


@pytest.mark.parametrize("api", API_KINDS)
async def test_a_long_stream_starts_no_task_per_line(
    call: Call, fake_provider: FakeProvider, api: str
) -> None:
    fake_provider.add(FakeModel("m1", answer=" ".join(f"w{i}" for i in range(PIECES))))
    loop = asyncio.get_running_loop()
    started: list[str] = []

    def counting(
        loop: asyncio.AbstractEventLoop,
        coro: Generator[Any, None, Any] | Coroutine[Any, Any, Any],
        **kwargs: Any,
    ) -> asyncio.Task[Any]:
        started.append(getattr(coro, "__qualname__", type(coro).__name__))
        return asyncio.Task(coro, loop=loop, **kwargs)

    await call(api, Request((user("warm the connection pool"),)), stream=True)  # a connection's setup aside
    loop.set_task_factory(counting)
    try:
        chunks = await call(api, Request((user("say a lot"),)), stream=True, timeout=60.0)
    finally:
        loop.set_task_factory(None)
    assert sum(1 for c in chunks if isinstance(c, TextDelta)) == PIECES
    assert len(started) < 10, f"{len(started)} tasks for one stream: {sorted(set(started))}"
