"""The panels service (`benchwarmers.core.Panels`) every front end shares: an
identity's view of the collections, its refusals, and a panel that outlives the caller
until the process lets it finish."""

from __future__ import annotations

import asyncio
import threading

import pytest
from sqlalchemy import func, select

from benchwarmers.core import Identity, Panels, collection_entry, finish_background
from benchwarmers.errors import NotFound, Refused
from benchwarmers.runtime import Runtime
from benchwarmers.store import registry
from benchwarmers.store.schema import Call, SeatingHistory
from benchwarmers.store.settings import MAX_PANELS, Settings
from benchwarmers.testing.fake_provider import FakeProvider
from benchwarmers.testing.script import FakeModel
from benchwarmers.types import Ask, PanelStarted, Request, user

HELLO = Request((user("hello"),))


async def bench(runtime: Runtime, fake: FakeProvider, *models: FakeModel) -> None:
    """Each model on endpoint `fake`; `duo` of the first two, `solo` of the first."""
    await registry.add_endpoint(runtime.store, "fake", fake.openai_base, "openai", needs_key=False)
    for model in models:
        fake.add(model)
        await registry.add_model(runtime.store, model.served, "fake", model.served)
    await registry.add_collection(runtime.store, "duo", [m.served for m in models[:2]], purpose="two views")
    await registry.add_collection(runtime.store, "solo", [models[0].served])


async def count(runtime: Runtime, table: type[Call] | type[SeatingHistory]) -> int:
    async with runtime.store.read() as session:
        return int((await session.execute(select(func.count()).select_from(table))).scalar_one())


async def test_a_scoped_caller_sees_and_judges_only_its_collections(
    runtime: Runtime, fake_provider: FakeProvider
) -> None:
    await bench(runtime, fake_provider, FakeModel("one", answer="first"), FakeModel("two", answer="second"))
    owner, scoped = Panels(runtime), Panels(runtime, Identity("ci", frozenset({"solo"})))

    assert [v.name for v in await owner.collections()] == ["duo", "solo"]
    assert [v.name for v in await scoped.collections()] == ["solo"]
    entry = collection_entry(await owner.collection("duo"))
    assert entry["id"] == "bench/duo" and entry["purpose"] == "two views" and entry["seats"] == 2

    with pytest.raises(NotFound, match=r"collections here: bench/solo$"):
        await scoped.check_collection("nope")
    with pytest.raises(Refused, match="may not call bench/duo"):
        await scoped.panel(Ask("duo", "panel", HELLO))

    reply = await owner.answer(Ask("duo", "panel", HELLO))
    assert [s.content for s in reply.seats] == ["first", "second"]
    seat = reply.seats[0].call
    with pytest.raises(Refused, match="may not judge seats of bench/duo"):
        await scoped.verdict({"call": seat, "useful": True})
    with pytest.raises(Refused, match="record of duo"):
        await scoped.record("duo")
    assert await owner.pending({"calls": [seat]}) == [seat]
    recorded = await owner.verdict({"call": seat, "useful": True, "note": "right"})
    assert recorded.alias == "one" and await owner.pending({"calls": [seat]}) == []


async def test_a_panel_whose_caller_left_is_finished_before_the_process_closes(
    runtime: Runtime, fake_provider: FakeProvider
) -> None:
    await bench(runtime, fake_provider, FakeModel("one", ttfb=0.05), FakeModel("two", ttfb=0.2))
    events = await Panels(runtime).panel(Ask("duo", "panel", HELLO))
    assert isinstance(await anext(events), PanelStarted)
    await events.aclose()  # the caller leaves before any seat is in
    assert await count(runtime, Call) == 0

    await finish_background()
    assert await count(runtime, Call) == 2
    assert await count(runtime, SeatingHistory) == 1  # written after the reply, and waited for


async def test_a_panel_past_the_grace_is_stopped_and_its_seats_still_recorded(
    runtime: Runtime, fake_provider: FakeProvider
) -> None:
    await bench(runtime, fake_provider, FakeModel("one"), FakeModel("two", never_ending=True))
    events = await Panels(runtime).panel(Ask("duo", "panel", HELLO))
    await events.aclose()
    await asyncio.wait_for(finish_background(grace=0.3), timeout=60)

    async with runtime.store.read() as session:
        rows = {c.alias: c for c in (await session.execute(select(Call))).scalars()}
    assert rows["one"].status == "ok"
    assert rows["two"].status == "error" and "stopped waiting" in rows["two"].error


async def test_a_changed_panel_cap_applies_to_the_next_ask(
    runtime: Runtime, fake_provider: FakeProvider
) -> None:
    """The caps are read from memory on every ask; a change made in this process
    is seen at once, not after the cache's time-to-live."""
    held = threading.Event()
    await bench(runtime, fake_provider, FakeModel("one", answer="first", hold=held))
    panels = Panels(runtime)
    settings = Settings(runtime.store)
    await settings.set(MAX_PANELS, 2)
    first = await panels.panel(Ask("solo", "panel", HELLO))  # running until `held` is set
    await settings.set(MAX_PANELS, 1)
    with pytest.raises(Refused, match="limit of 1 panels"):
        await panels.panel(Ask("solo", "panel", HELLO))
    await settings.set(MAX_PANELS, 3)
    second = await panels.panel(Ask("solo", "panel", HELLO))
    held.set()
    for events in (first, second):
        async for _event in events:
            pass
