"""The engine's events: the panel starts first, each seat is handed on by
its own task the moment it is in (finish order), the reply ends in seat
order once every call it names is in the log."""

from __future__ import annotations

import asyncio
import threading

import pytest
from sqlalchemy import select

from benchwarmers import metrics
from benchwarmers.calls.log import flush_log
from benchwarmers.calls.reads import get_call
from benchwarmers.errors import Left
from benchwarmers.panel.engine import _RUNNING, PanelEngine
from benchwarmers.panel.plan import plan_panel
from benchwarmers.runtime import Runtime
from benchwarmers.store.collections import add_collection
from benchwarmers.store.endpoints import add_endpoint
from benchwarmers.store.models import add_model
from benchwarmers.store.schema import Call
from benchwarmers.testing.fake_provider import FakeProvider
from benchwarmers.testing.script import FakeModel
from benchwarmers.types import (
    Ask,
    Message,
    PanelDone,
    PanelEvent,
    PanelStarted,
    Request,
    SeatDone,
    SeatText,
    assistant,
    user,
)

ASK = Ask("trio", "panel", Request((user("hello"),)))


async def _events(engine: PanelEngine) -> list[PanelEvent]:
    events = [event async for event in engine.run(ASK)]
    while _RUNNING:  # the seating history, after the reply
        await asyncio.gather(*_RUNNING, return_exceptions=True)
    return events


async def test_seats_come_in_finish_order_and_the_reply_in_seat_order(
    runtime: Runtime, fake_provider: FakeProvider
) -> None:
    await add_endpoint(runtime.store, "fake", fake_provider.openai_base, "openai", needs_key=False)
    # Seat 1 answers last, seat 3 first (each held until the one before it is in).
    for alias, ttfb in (("late", 0.3), ("middle", 0.15), ("early", 0.0)):
        fake_provider.add(FakeModel(alias, answer=f"{alias} here", ttfb=ttfb))
        await add_model(runtime.store, alias, "fake", alias)
    await add_collection(runtime.store, "trio", ["late", "middle", "early"])

    events = await _events(PanelEngine(runtime))

    assert isinstance(events[0], PanelStarted) and isinstance(events[-1], PanelDone)
    done = [e.seat.alias for e in events if isinstance(e, SeatDone)]
    assert done == ["early", "middle", "late"]
    reply = events[-1].reply
    assert [s.alias for s in reply.seats] == ["late", "middle", "early"]
    assert [s.content for s in reply.seats] == ["late here", "middle here", "early here"]
    for seat in reply.seats:  # every call the reply names is in the log by its end
        assert await get_call(runtime.store, seat.call) is not None


async def test_a_seat_that_fails_before_it_goes_out_still_comes_after_the_start(
    runtime: Runtime, fake_provider: FakeProvider
) -> None:
    """A seat refused before any wait (no key for its endpoint) ends in its
    task's first step; the stream still starts with `PanelStarted`."""
    await add_endpoint(runtime.store, "fake", fake_provider.openai_base, "openai", needs_key=False)
    await add_endpoint(runtime.store, "keyless", fake_provider.openai_base, "openai", needs_key=True)
    fake_provider.add(FakeModel("answers", answer="here"))
    await add_model(runtime.store, "answers", "fake", "answers")
    await add_model(runtime.store, "refused", "keyless", "answers")
    await add_collection(runtime.store, "trio", ["refused", "answers"])

    events = await _events(PanelEngine(runtime))

    assert isinstance(events[0], PanelStarted)
    seats = [e.seat for e in events if isinstance(e, SeatDone)]
    assert [s.alias for s in seats] == ["refused", "answers"]
    assert seats[0].status == "error" and "no key for endpoint 'keyless'" in seats[0].error
    assert isinstance(events[-1], PanelDone)


async def test_the_whole_reply_names_every_seat_and_each_is_in_the_log(
    runtime: Runtime, fake_provider: FakeProvider
) -> None:
    """`answer` (the non-streamed front ends): one reply with every seat in
    seat order, each seat's call in the log by the time the reply is in."""
    await add_endpoint(runtime.store, "fake", fake_provider.openai_base, "openai", needs_key=False)
    for alias in ("one", "two"):
        fake_provider.add(FakeModel(alias, answer=f"{alias} here"))
        await add_model(runtime.store, alias, "fake", alias)
    await add_collection(runtime.store, "trio", ["one", "two"])

    reply = await PanelEngine(runtime).answer(ASK)

    assert [s.content for s in reply.seats] == ["one here", "two here"]
    for seat in reply.seats:
        assert await get_call(runtime.store, seat.call) is not None


async def test_seat_text_only_when_asked_and_the_call_ids_named_at_the_start(
    runtime: Runtime, fake_provider: FakeProvider
) -> None:
    """`PanelStarted` names each seat's call id before any answers, and the
    reply's seats carry the same; `SeatText` pieces come only for a stream
    that asks for them (others pay nothing), each before its seat is done,
    adding up to its answer."""
    await add_endpoint(runtime.store, "fake", fake_provider.openai_base, "openai", needs_key=False)
    for alias in ("one", "two"):
        fake_provider.add(FakeModel(alias, answer=f"{alias} writes several words here"))
        await add_model(runtime.store, alias, "fake", alias)
    await add_collection(runtime.store, "trio", ["one", "two"])
    engine = PanelEngine(runtime)

    plain = [event async for event in engine.run(Ask("trio", "panel", Request((user("hi"),)), stream=True))]
    assert not [e for e in plain if isinstance(e, SeatText)]

    live = Ask("trio", "panel", Request((user("hi"),)), stream=True, seat_text=True)
    events = [event async for event in engine.run(live)]
    started, reply = events[0], events[-1]
    assert isinstance(started, PanelStarted) and isinstance(reply, PanelDone)
    assert started.ask and [(s.seat, s.alias, s.call) for s in reply.reply.seats] == list(started.seats)
    for seat in reply.reply.seats:
        pieces = [i for i, e in enumerate(events) if isinstance(e, SeatText) and e.call == seat.call]
        (done,) = [i for i, e in enumerate(events) if isinstance(e, SeatDone) and e.seat.call == seat.call]
        assert len(pieces) > 1 and max(pieces) < done
        written = [e.text for e in events if isinstance(e, SeatText) and e.call == seat.call]
        assert "".join(written) == seat.content
    while _RUNNING:
        await asyncio.gather(*_RUNNING, return_exceptions=True)


async def test_a_plain_ask_reads_the_budgets_once_in_its_plan_not_per_seat(
    runtime: Runtime, fake_provider: FakeProvider, monkeypatch: object
) -> None:
    """No budget applies: the plan says so (`unbudgeted`) and each seat
    takes the hold `reserve` would have given, without reading the
    budgets again (issue 39's plain-ask overhead)."""
    from benchwarmers.limits.spending import Spending

    await add_endpoint(runtime.store, "fake", fake_provider.openai_base, "openai", needs_key=False)
    for alias in ("a", "b", "c"):
        fake_provider.add(FakeModel(alias, answer=f"{alias} here"))
        await add_model(runtime.store, alias, "fake", alias)
    await add_collection(runtime.store, "trio", ["a", "b", "c"])
    reserved: list[str] = []
    reserve = Spending.reserve

    async def counted(self: Spending, **kwargs: object) -> object:
        reserved.append(str(kwargs["collection"]))
        return await reserve(self, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(Spending, "reserve", counted)  # type: ignore[attr-defined]
    events = await _events(PanelEngine(runtime))
    reply = events[-1].reply  # type: ignore[attr-defined]
    assert [s.status for s in reply.seats] == ["ok"] * 3 and reserved == []


async def test_a_follow_up_with_threads_asks_each_seat_its_own_thread(
    runtime: Runtime, fake_provider: FakeProvider
) -> None:
    """Each seat continues its own thread (`Ask.threads`): asked its own
    earlier answer, under the collection's system prompt as any ask; a seat
    with no thread is asked the shared history (`request`)."""
    await add_endpoint(runtime.store, "fake", fake_provider.openai_base, "openai", needs_key=False)
    for alias in ("a", "b", "c"):
        fake_provider.add(FakeModel(alias, answer=f"{alias} again"))
        await add_model(runtime.store, alias, "fake", alias)
    await add_collection(runtime.store, "trio", ["a", "b", "c"], system_prompt="Be brief.")

    def thread(answer: str) -> tuple[Message, ...]:
        return (user("First?"), assistant(answer), user("Second?"))

    shared = Request(thread("b said"))
    ask = Ask(
        "trio",
        "panel",
        shared,
        only_aliases=("a", "b", "c"),
        threads=(("a", thread("a said")), ("c", thread("c said"))),
    )
    reply = await PanelEngine(runtime).answer(ask)
    while _RUNNING:
        await asyncio.gather(*_RUNNING, return_exceptions=True)

    assert [(s.alias, s.content) for s in reply.seats] == [
        ("a", "a again"),
        ("b", "b again"),
        ("c", "c again"),
    ]
    for alias in ("a", "b", "c"):
        asked = fake_provider.last(alias)
        assert [(m.role, m.text) for m in asked.messages] == [
            ("user", "First?"),
            ("assistant", f"{alias} said"),
            ("user", "Second?"),
        ], alias
        assert asked.system == "Be brief."


async def _held_duo(runtime: Runtime, fake_provider: FakeProvider) -> threading.Event:
    """Collection trio: `quick` answers at once, `held` only once the returned event is set."""
    await add_endpoint(runtime.store, "fake", fake_provider.openai_base, "openai", needs_key=False)
    hold = threading.Event()
    fake_provider.add(FakeModel("quick", answer="quick here"))
    fake_provider.add(FakeModel("held", answer="held here", hold=hold, hold_after=0))
    for alias in ("quick", "held"):
        await add_model(runtime.store, alias, "fake", alias)
    await add_collection(runtime.store, "trio", ["quick", "held"])
    return hold


async def _statuses(runtime: Runtime) -> dict[str, str]:
    while _RUNNING:
        await asyncio.gather(*_RUNNING, return_exceptions=True)
    await flush_log()
    async with runtime.store.read() as session:
        return {row.alias: row.status for row in (await session.execute(select(Call))).scalars()}


async def test_a_whole_reply_whose_caller_left_stops_its_panel(
    runtime: Runtime, fake_provider: FakeProvider
) -> None:
    """`reply_to(left=)`: the caller's client hung up before the reply (the
    future done): the seats still answering are cancelled upstream and
    logged `cancelled`, the one in before stays `ok`, and the caller gets
    `Left` once they are recorded, its own task never cancelled."""
    hold = await _held_duo(runtime, fake_provider)
    left: asyncio.Future[None] = asyncio.get_running_loop().create_future()
    try:
        waiting = asyncio.create_task(
            PanelEngine(runtime).reply_to(await plan_panel(runtime, ASK, None), left=left)
        )
        # The seat is in once the gateway has counted it, not once the fake
        # provider has written it: on a loaded machine the bytes can still be
        # on their way when the caller leaves, and the seat is rightly cut.
        quick_in = metrics.CALLS.labels("seat", "trio", "quick", "ok")
        before = quick_in._value.get()
        while quick_in._value.get() == before or ("asked", "held") not in fake_provider.timeline:
            await asyncio.sleep(0.01)
        left.set_result(None)
        with pytest.raises(Left):
            await waiting
        assert await _statuses(runtime) == {"quick": "ok", "held": "cancelled"}
        assert ("closed", "held") in fake_provider.timeline
    finally:
        hold.set()


async def test_a_caller_gone_before_its_panel_started_stops_it_too(
    runtime: Runtime, fake_provider: FakeProvider
) -> None:
    """`left` already done when the panel is launched (its task cancelled
    before its first step): the caller still gets `Left`, never a wait for
    a reply that cannot come."""
    hold = await _held_duo(runtime, fake_provider)
    left: asyncio.Future[None] = asyncio.get_running_loop().create_future()
    left.set_result(None)
    try:
        plan = await plan_panel(runtime, ASK, None)
        with pytest.raises(Left):
            await asyncio.wait_for(PanelEngine(runtime).reply_to(plan, left=left), 30)
    finally:
        hold.set()


async def test_a_whole_reply_in_before_its_caller_left_is_kept(
    runtime: Runtime, fake_provider: FakeProvider
) -> None:
    """Without `left`, or with it done only after the reply, a caller that
    goes stops nothing: the panel finishes and every seat is logged `ok`."""
    hold = await _held_duo(runtime, fake_provider)
    hold.set()
    left: asyncio.Future[None] = asyncio.get_running_loop().create_future()
    reply = await PanelEngine(runtime).reply_to(await plan_panel(runtime, ASK, None), left=left)
    left.set_result(None)
    assert [s.status for s in reply.seats] == ["ok", "ok"]
    assert await _statuses(runtime) == {"quick": "ok", "held": "ok"}
