"""The order a panel's calls go out in: the seat the ask waits for first."""

from __future__ import annotations

from typing import Any

import pytest

from benchwarmers.panel import pace, seats
from benchwarmers.panel.engine import PanelEngine
from benchwarmers.runtime import Runtime
from benchwarmers.store.collections import add_collection
from benchwarmers.store.db import Store
from benchwarmers.store.endpoints import add_endpoint
from benchwarmers.store.models import add_model
from benchwarmers.testing.fake_provider import FakeProvider
from benchwarmers.testing.script import FakeModel
from benchwarmers.types import Ask, Request, user


def test_the_slowest_goes_first_for_a_reply_and_the_fastest_for_a_stream() -> None:
    store, other = Store("sqlite+aiosqlite://"), Store("sqlite+aiosqlite://")
    aliases = ["quick", "new", "slow", "middling"]
    assert pace.send_order(store, aliases, slowest_first=True) == [0, 1, 2, 3]  # nothing known: seat order
    for alias, seconds in (("quick", 0.1), ("slow", 0.9), ("middling", 0.4)):
        pace.note(store, alias, seconds)
    # A member not heard from yet counts as slow.
    assert pace.send_order(store, aliases, slowest_first=True) == [1, 2, 3, 0]
    assert pace.send_order(store, aliases, slowest_first=False) == [0, 3, 2, 1]
    # What one store's members took is its own.
    assert pace.send_order(other, aliases, slowest_first=True) == [0, 1, 2, 3]


async def test_a_reply_sends_the_seat_that_took_longest_first(
    runtime: Runtime, fake_provider: FakeProvider, monkeypatch: pytest.MonkeyPatch
) -> None:
    await add_endpoint(runtime.store, "fake", fake_provider.openai_base, "openai", needs_key=False)
    for alias, ttfb in (("early", 0.0), ("late", 0.2)):
        fake_provider.add(FakeModel(alias, answer=f"{alias} here", ttfb=ttfb))
        await add_model(runtime.store, alias, "fake", alias)
    await add_collection(runtime.store, "duo", ["early", "late"])
    started: list[str] = []
    seat = seats._seat

    async def noted(caller: Any, plan: Any, planned: Any, *rest: Any) -> Any:
        started.append(planned.model.alias)  # a seat's task's first step: its call is set up from here
        return await seat(caller, plan, planned, *rest)

    monkeypatch.setattr(seats, "_seat", noted)
    engine = PanelEngine(runtime)
    ask = Ask("duo", "panel", Request((user("hello"),)))

    await engine.answer(ask)
    assert started == ["early", "late"]  # nothing known yet: seat order

    started.clear()
    reply = await engine.answer(ask)
    assert started == ["late", "early"]
    assert [s.alias for s in reply.seats] == ["early", "late"]  # the reply keeps seat order

    started.clear()
    async for _event in engine.run(Ask("duo", "panel", Request((user("hello"),)), stream=True)):
        pass
    assert started == ["early", "late"]  # a stream: the fastest first
