"""The route engine in-process: a turn starts no task of its own and leaves
no generator for the loop to close (each would be a task per turn)."""

from __future__ import annotations

import asyncio
import sys
from typing import Any

from benchwarmers.route.engine import RouteEngine
from benchwarmers.runtime import Runtime
from benchwarmers.store.collections import add_collection
from benchwarmers.store.endpoints import add_endpoint
from benchwarmers.store.models import add_model
from benchwarmers.testing.fake_provider import FakeProvider
from benchwarmers.testing.script import FakeModel
from benchwarmers.types import Ask, Request, user


async def test_a_turn_starts_no_task_and_leaves_no_generator_to_the_loop(
    runtime: Runtime, fake_provider: FakeProvider
) -> None:
    store = runtime.store
    await add_endpoint(store, "openai", fake_provider.base_for("openai"), "openai", needs_key=False)
    fake_provider.add(FakeModel("alpha", answer="alpha answers"))
    await add_model(store, "alpha", "openai", "alpha")
    await add_collection(store, "agents", ["alpha"])
    ask = Ask("agents", "route", Request((user("hello"),)))
    engine = RouteEngine(runtime)
    await engine.answer(ask)  # the caches warm, the conversation sticks

    loop = asyncio.get_running_loop()
    started: list[str] = []
    finalized: list[str] = []
    hooks = sys.get_asyncgen_hooks()
    factory = loop.get_task_factory()

    def counting_factory(loop: asyncio.AbstractEventLoop, coro: Any) -> asyncio.Task[Any]:
        started.append(getattr(coro, "__qualname__", repr(coro)))
        return asyncio.Task(coro, loop=loop)

    def finalizer(agen: Any) -> None:
        finalized.append(agen.__qualname__)
        assert hooks.finalizer is not None
        hooks.finalizer(agen)

    loop.set_task_factory(counting_factory)
    sys.set_asyncgen_hooks(firstiter=hooks.firstiter, finalizer=finalizer)
    try:
        turn, reply = await engine.answer(ask)
    finally:
        sys.set_asyncgen_hooks(firstiter=hooks.firstiter, finalizer=hooks.finalizer)
        loop.set_task_factory(factory)

    assert reply.text == "alpha answers" and turn.alias == "alpha"
    assert not [name for name in started if name in ("get_collection", "list_models")]
    assert not finalized  # the turn order is no generator; the turn's own are closed
