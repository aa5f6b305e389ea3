"""The panels service (`benchwarmers.core.Panels`) every front end shares: an
identity's view of the collections, its refusals, and a panel that outlives the caller
until the process lets it finish."""

from __future__ import annotations

import asyncio
import threading

import pytest
from sqlalchemy import func, select

from benchwarmers.calls.reads import get_call
from benchwarmers.core import Identity, Panels, collection_entry, finish_background
from benchwarmers.errors import NotFound, ProviderError, Refused, UserError
from benchwarmers.panel import engine as engine_module
from benchwarmers.runtime import Runtime
from benchwarmers.store.collections import add_collection, remove_collection
from benchwarmers.store.endpoints import add_endpoint
from benchwarmers.store.models import add_model
from benchwarmers.store.schema import Call, SeatingHistory
from benchwarmers.store.settings import MAX_PANELS, Settings
from benchwarmers.testing.fake_provider import FakeProvider
from benchwarmers.testing.script import FakeError, FakeModel
from benchwarmers.types import Ask, PanelDone, PanelStarted, Request, SeatDone, Tool, user

HELLO = Request((user("hello"),))
TOOL = Tool("lookup", "looks a word up", {"type": "object"})


async def bench(runtime: Runtime, fake: FakeProvider, *models: FakeModel) -> None:
    """Each model on endpoint `fake`; `duo` of the first two, `solo` of the first."""
    await add_endpoint(runtime.store, "fake", fake.openai_base, "openai", needs_key=False)
    for model in models:
        fake.add(model)
        await add_model(runtime.store, model.served, "fake", model.served)
    await add_collection(runtime.store, "duo", [m.served for m in models[:2]], purpose="two views")
    await add_collection(runtime.store, "solo", [models[0].served])


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
    assert (entry["keepText"], entry["blind"], entry["judgeVerdicts"]) == (False, False, False)

    with pytest.raises(NotFound, match=r"collections here: bench/solo$"):
        await scoped.check_collection("nope")
    with pytest.raises(Refused, match="may not call bench/duo"):
        await scoped.panel(Ask("duo", "panel", HELLO))

    reply = await owner.answer(Ask("duo", "panel", HELLO))
    assert [s.content for s in reply.seats] == ["first", "second"]
    seat = reply.seats[0].call
    # Another collection's seat is unknown to the key, as for a pair and `pending`: a 403
    # named the collection, which the key may not even list.
    with pytest.raises(NotFound, match=f"^no call '{seat}' in the call log$"):
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


async def test_at_the_gateway_a_stream_is_handed_back_before_a_seat_answers(
    runtime: Runtime, fake_provider: FakeProvider
) -> None:
    """Under `unanswered_is_error` (the gateway's rule) the events come back
    while the seats are asked, so a front end readies its reply meanwhile
    (`server.streaming.FormatStream` sends its status at the first piece);
    the first event waits for a seat that answers, and a panel no seat
    answered raises there, the error the front end then answers with."""
    held = threading.Event()
    await bench(
        runtime,
        fake_provider,
        FakeModel("one", answer="first", hold=held),
        FakeModel("two", error=FakeError(503, "down for now")),
    )
    gateway = Panels(runtime, unanswered_is_error=True)
    events = await asyncio.wait_for(gateway.panel(Ask("duo", "panel", HELLO, stream=True)), 20)
    first = asyncio.ensure_future(anext(events))
    await _asked(fake_provider, "one")
    held.set()  # "one" answers: the stream opens with it
    assert isinstance(await first, PanelStarted)
    done = [e async for e in events][-1]
    assert isinstance(done, PanelDone) and [s.status for s in done.reply.seats] == ["ok", "error"]

    fake_provider.add(FakeModel("one", error=FakeError(503, "down too")))
    events = await gateway.panel(Ask("duo", "panel", HELLO, stream=True))
    with pytest.raises(ProviderError, match="no seat of bench/duo answered"):
        await anext(events)
    await finish_background()


async def _logged(runtime: Runtime) -> dict[str, tuple[str, str]]:
    """alias -> (status, error) of every call in the log."""
    async with runtime.store.read() as session:
        return {c.alias: (c.status, c.error) for c in (await session.execute(select(Call))).scalars()}


async def _asked(fake: FakeProvider, alias: str) -> None:
    """Until the fake provider has the seat's request: its call is in flight."""
    while ("asked", alias) not in fake.timeline:
        await asyncio.sleep(0.01)


async def test_a_one_seat_reply_stopped_mid_call_still_records_its_seat(
    runtime: Runtime, fake_provider: FakeProvider
) -> None:
    """A lone seat is asked in the panel's own task, not one of its own:
    stopping the panel (a process closing) stops its call, whose row is
    still written, and the caller waiting for the reply is told it stopped."""
    await bench(runtime, fake_provider, FakeModel("one", never_ending=True))
    waiting = asyncio.create_task(Panels(runtime).answer(Ask("solo", "panel", HELLO)))
    await _asked(fake_provider, "one")
    await asyncio.wait_for(finish_background(grace=0.3), timeout=60)

    with pytest.raises(asyncio.CancelledError):
        await waiting
    logged = await _logged(runtime)
    assert list(logged) == ["one"] and logged["one"][0] == "error" and "stopped waiting" in logged["one"][1]
    assert runtime.panel_slots.running == 0


async def test_a_one_seat_reply_whose_caller_left_finishes_and_keeps_its_slot_till_then(
    runtime: Runtime, fake_provider: FakeProvider
) -> None:
    held = threading.Event()
    await bench(runtime, fake_provider, FakeModel("one", answer="first", hold=held))
    waiting = asyncio.create_task(Panels(runtime).answer(Ask("solo", "panel", HELLO)))
    await _asked(fake_provider, "one")
    waiting.cancel()  # the caller leaves mid-call
    with pytest.raises(asyncio.CancelledError):
        await waiting
    assert runtime.panel_slots.running == 1  # the panel runs on, under the caps
    held.set()

    await finish_background()
    assert await _logged(runtime) == {"one": ("ok", "")}
    assert runtime.panel_slots.running == 0


async def test_a_panel_gives_its_slot_back_before_its_seating_history(
    runtime: Runtime, fake_provider: FakeProvider, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The history written after the reply holds no place under the caps: a
    history read that waits (behind the call log's commit) must not keep
    finished panels counted and refuse new asks with 429."""
    await bench(runtime, fake_provider, FakeModel("one", answer="first"))
    writing, go_on = asyncio.Event(), asyncio.Event()

    async def slow_history(*_: object) -> None:
        writing.set()
        await go_on.wait()

    monkeypatch.setattr(engine_module.history, "note_panel", slow_history)
    reply = await Panels(runtime).answer(Ask("solo", "panel", HELLO))
    await asyncio.wait_for(writing.wait(), timeout=30)

    assert [s.content for s in reply.seats] == ["first"]
    assert runtime.panel_slots.running == 0  # the history is still being written
    assert engine_module._RUNNING  # and the panel's task still runs, for finish_background to wait on
    go_on.set()
    await finish_background()
    assert not engine_module._RUNNING


@pytest.mark.parametrize(
    "model",
    [FakeModel("one", error=FakeError(503, "down for now")), FakeModel("one", answer="first")],
    ids=["failing", "answering"],
)
async def test_a_one_seat_panel_answers_alike_whole_and_streamed(
    runtime: Runtime, fake_provider: FakeProvider, model: FakeModel
) -> None:
    """The whole reply and the stream's `PanelDone` carry the same seat,
    an upstream's failure included, each seat's row in the log."""
    await bench(runtime, fake_provider, model)
    panels = Panels(runtime)
    whole = await panels.answer(Ask("solo", "panel", HELLO))
    events = [e async for e in await panels.panel(Ask("solo", "panel", HELLO, stream=True))]

    started, seat_done, done = events
    assert (
        isinstance(started, PanelStarted) and isinstance(seat_done, SeatDone) and isinstance(done, PanelDone)
    )
    streamed = done.reply
    assert seat_done.seat == streamed.seats[0]
    for reply in (whole, streamed):
        (seat,) = reply.seats
        assert (seat.seat, seat.alias, seat.status) == (whole.seats[0].seat, "one", whole.seats[0].status)
        assert (seat.content, seat.error) == (whole.seats[0].content, whole.seats[0].error)
        assert await get_call(runtime.store, seat.call) is not None
    assert whole.seats[0].status == ("error" if model.error else "ok")
    assert ("down for now" in whole.seats[0].error) == bool(model.error)
    await finish_background()


async def test_a_reply_whose_seating_fails_gives_its_slot_back(
    runtime: Runtime, fake_provider: FakeProvider
) -> None:
    await bench(runtime, fake_provider, FakeModel("one"))
    with pytest.raises(UserError, match="cannot run tools"):
        await Panels(runtime).answer(Ask("solo", "panel", Request((user("hello"),), tools=(TOOL,))))
    assert runtime.panel_slots.running == 0


async def test_a_panel_stopped_while_its_own_task_asks_a_seat_records_every_seat(
    runtime: Runtime, fake_provider: FakeProvider
) -> None:
    """The seat sent first is asked in the panel's task and the others in
    theirs: stopped while the first is still out, the panel stops it, waits
    for the others' rows, and every seat is in the log."""
    await bench(runtime, fake_provider, FakeModel("slow", never_ending=True), FakeModel("fast"))
    events = await Panels(runtime).panel(Ask("duo", "panel", HELLO))  # nothing known yet: seat order
    await events.aclose()
    await asyncio.wait_for(finish_background(grace=0.3), timeout=60)

    logged = await _logged(runtime)
    assert logged["fast"] == ("ok", "")
    assert logged["slow"][0] == "error" and "stopped waiting" in logged["slow"][1]


async def test_the_record_of_a_collection_that_never_was_is_not_found(
    runtime: Runtime, fake_provider: FakeProvider
) -> None:
    """Not an empty record, which reads as "nothing judged yet"; a collection
    with nothing judged is that, and a removed one keeps its verdicts' record."""
    await bench(runtime, fake_provider, FakeModel("one", answer="first"), FakeModel("two", answer="second"))
    owner = Panels(runtime)
    for name in ("nope", "bench/nope"):
        with pytest.raises(NotFound, match="no collection"):
            await owner.record(name)
    assert (await owner.record("bench/duo"))["aliases"] == {}
    reply = await owner.answer(Ask("solo", "panel", HELLO))
    await owner.verdict({"call": reply.seats[0].call, "useful": True})
    await remove_collection(runtime.store, "solo")
    assert (await owner.record("solo"))["aliases"]["one"]["useful"] == 1
    assert (await owner.seat_record(reply.seats[0].call) or {})["aliases"]["one"]["judged"] == 1


async def test_recent_asks_of_a_collection_that_never_was_are_not_found(
    runtime: Runtime, fake_provider: FakeProvider
) -> None:
    """Filtered by a name that never was: NotFound (its field named), not an
    empty page; a collection with nothing asked yet is an empty page, and a
    removed one still has the asks its log keeps."""
    await bench(runtime, fake_provider, FakeModel("one", answer="first"), FakeModel("two", answer="second"))
    owner = Panels(runtime)
    with pytest.raises(NotFound, match="no collection") as refused:
        await owner.recent_asks("nope")
    assert refused.value.field == "collection"
    assert await owner.recent_asks("duo") == ([], "")
    await owner.answer(Ask("solo", "panel", HELLO))
    await remove_collection(runtime.store, "solo")
    asks, _ = await owner.recent_asks("solo")
    assert [a["collection"] for a in asks] == ["solo"]
