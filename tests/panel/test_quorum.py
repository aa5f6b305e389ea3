"""Quorum and deadline in the engine: the reply goes once enough seats
answered (or the deadline passed), the seats still answering are cut
(cancelled and logged `cut`, or left to finish and logged with their real
outcome), and `:merged` merges what was in. Shown by the order of events:
the slow seat is held (the fake's `hold`) until the test lets it go, so a
reply that waited for it could not arrive at all."""

from __future__ import annotations

import asyncio
import threading

import pytest

from benchwarmers.calls.reads import calls_of_ask, get_call
from benchwarmers.errors import UserError
from benchwarmers.limits.user_limits import set_limits
from benchwarmers.panel import quorum
from benchwarmers.panel.engine import _RUNNING, PanelEngine
from benchwarmers.runtime import Runtime
from benchwarmers.store.collections import add_collection, update_collection
from benchwarmers.store.endpoints import add_endpoint
from benchwarmers.store.models import add_model
from benchwarmers.testing.fake_provider import FakeProvider
from benchwarmers.testing.script import PLAIN_REPORT, FakeModel, merger
from benchwarmers.types import (
    Ask,
    MergeDone,
    MergeText,
    OutputCheck,
    PanelDone,
    PanelEvent,
    PanelStarted,
    Request,
    Seat,
    SeatDone,
    user,
)

SAFETY = 30.0  # a held seat answers after this anyway: a broken engine fails, never hangs


async def _trio(runtime: Runtime, fake: FakeProvider, hold: threading.Event, **collection: object) -> None:
    """fast and mid answer at once; slow (a 3-second seat) is held besides."""
    await add_endpoint(runtime.store, "fake", fake.openai_base, "openai", needs_key=False)
    for model in (
        FakeModel("fast", answer="fast answer"),
        FakeModel("mid", answer="mid answer"),
        FakeModel("slow", answer="slow answer", ttfb=3.0, hold=hold),
    ):
        fake.add(model)
        await add_model(runtime.store, model.served, "fake", model.served)
    await add_collection(runtime.store, "trio", ["fast", "mid", "slow"], **collection)  # type: ignore[arg-type]


async def _run(engine: PanelEngine, ask: Ask) -> list[PanelEvent]:
    return [event async for event in engine.run(ask)]


async def _background() -> None:
    while _RUNNING:
        await asyncio.gather(*_RUNNING, return_exceptions=True)


def _watchdog(hold: threading.Event) -> threading.Timer:
    timer = threading.Timer(SAFETY, hold.set)
    timer.start()
    return timer


async def test_quorum_2_of_3_answers_after_the_two_fast_seats_and_cancels_the_slow(
    runtime: Runtime, fake_provider: FakeProvider
) -> None:
    hold = threading.Event()
    await _trio(runtime, fake_provider, hold)
    watchdog = _watchdog(hold)
    try:
        ask = Ask("trio", "panel", Request((user("hello"),)), stream=True, quorum=2)
        events = await _run(PanelEngine(runtime), ask)
        assert not hold.is_set()  # the reply came while the slow seat was still held
    finally:
        hold.set()
        watchdog.cancel()
    await _background()

    assert isinstance(events[0], PanelStarted) and isinstance(events[-1], PanelDone)
    done = [e.seat for e in events if isinstance(e, SeatDone)]
    assert [s.alias for s in done[:2]] == ["fast", "mid"] or [s.alias for s in done[:2]] == ["mid", "fast"]
    assert done[2].alias == "slow" and done[2].status == "cancelled"  # its SeatDone before PanelDone
    assert done[2].error == "cut: quorum 2 of 3 reached"
    reply = events[-1].reply
    assert reply.cut is not None and reply.cut.reason == "quorum" and reply.cut.quorum == 2
    assert not reply.cut.background
    assert [s.status for s in reply.seats] == ["ok", "ok", "cancelled"]
    for seat in reply.seats:  # all three in the call log, each with its status
        row = await get_call(runtime.store, seat.call)
        assert row is not None and row.status == seat.status
    cut_row = await get_call(runtime.store, reply.seats[2].call)
    assert cut_row is not None and cut_row.error == "cut: quorum 2 of 3 reached"
    assert cut_row.tokens_in > 0  # it was sent: it costs its prompt, by estimate, not nothing


async def test_on_cut_finish_leaves_the_slow_seat_to_finish_and_logs_its_real_outcome(
    runtime: Runtime, fake_provider: FakeProvider
) -> None:
    hold = threading.Event()
    await _trio(runtime, fake_provider, hold, quorum=2, on_cut="finish")
    watchdog = _watchdog(hold)
    try:
        events = await _run(PanelEngine(runtime), Ask("trio", "panel", Request((user("hi"),)), stream=True))
        assert not hold.is_set()
        reply = events[-1].reply  # type: ignore[union-attr]
        slow = reply.seats[2]
        assert slow.status == "cancelled" and slow.call and slow.error == "cut: quorum 2 of 3 reached"
        assert reply.cut is not None and reply.cut.background
        assert [e.seat.alias for e in events if isinstance(e, SeatDone)][-1] == "slow"
    finally:
        hold.set()
        watchdog.cancel()
    await _background()  # the slow seat finishes in the background
    row = await get_call(runtime.store, slow.call)
    assert row is not None and row.status == "ok" and row.kind == "seat"


async def test_a_deadline_answers_with_what_is_in(runtime: Runtime, fake_provider: FakeProvider) -> None:
    hold = threading.Event()
    await _trio(runtime, fake_provider, hold)
    watchdog = _watchdog(hold)
    try:
        reply = await PanelEngine(runtime).answer(Ask("trio", "panel", Request((user("hi"),)), deadline=1.5))
        assert not hold.is_set()
    finally:
        hold.set()
        watchdog.cancel()
    await _background()
    assert reply.cut is not None and reply.cut.reason == "deadline" and reply.cut.deadline == 1.5
    assert reply.seats[2].status == "cancelled" and reply.seats[2].error == "cut: deadline 1.5s passed"
    assert [s.status for s in reply.seats[:2]] == ["ok", "ok"]


async def test_a_quorum_no_smaller_than_the_panel_waits_for_every_seat(
    runtime: Runtime, fake_provider: FakeProvider
) -> None:
    hold = threading.Event()
    hold.set()
    await _trio(runtime, fake_provider, hold)
    fake_provider.models["slow"].ttfb = 0.0
    # As large as the panel, per ask; larger, the collection's own (set before members went).
    reply = await PanelEngine(runtime).answer(Ask("trio", "panel", Request((user("hi"),)), quorum=3))
    await _background()
    assert reply.cut is None and [s.status for s in reply.seats] == ["ok", "ok", "ok"]
    await update_collection(runtime.store, "trio", quorum=5)
    reply = await PanelEngine(runtime).answer(Ask("trio", "panel", Request((user("hi"),))))
    await _background()
    assert reply.cut is None and [s.status for s in reply.seats] == ["ok", "ok", "ok"]


async def test_a_quorum_above_the_seats_the_collection_can_seat_is_refused(
    runtime: Runtime, fake_provider: FakeProvider
) -> None:
    hold = threading.Event()
    hold.set()
    await _trio(runtime, fake_provider, hold)
    with pytest.raises(UserError, match="quorum 4 is more than the 3 seats bench/trio can seat"):
        await PanelEngine(runtime).answer(Ask("trio", "panel", Request((user("hi"),)), quorum=4))
    assert not fake_provider.requests, "nobody was asked"
    # A seat added beside the collection's (`with`) is one more it can seat.
    fake_provider.add(FakeModel("extra", answer="extra answer"))
    await add_model(runtime.store, "extra", "fake", "extra")
    ask = Ask("trio", "panel", Request((user("hi"),)), quorum=4, extra_aliases=("extra",))
    reply = await PanelEngine(runtime).answer(ask)
    await _background()
    assert reply.cut is None and len(reply.seats) == 4


async def test_merged_merges_what_is_in_at_the_quorum_and_streams_the_merger(
    runtime: Runtime, fake_provider: FakeProvider
) -> None:
    hold = threading.Event()
    await _trio(runtime, fake_provider, hold)
    judge_hold = threading.Event()
    answer = "The merged answer, written slowly word by word."
    fake_provider.add(FakeModel("judge", answer=merger(answer, PLAIN_REPORT), hold=judge_hold, hold_after=2))
    await add_model(runtime.store, "judge", "fake", "judge")
    await update_collection(runtime.store, "trio", merger="judge")
    watchdogs = [_watchdog(hold), _watchdog(judge_hold)]
    events: list[PanelEvent] = []
    text_before_merger_done = False
    try:
        ask = Ask("trio", "merged", Request((user("hello"),)), stream=True, quorum=2)
        async for event in PanelEngine(runtime).run(ask):
            events.append(event)
            if isinstance(event, MergeText) and not judge_hold.is_set():
                # The merger is held half way through its answer: this text came before it was done.
                text_before_merger_done = True
                judge_hold.set()
    finally:
        hold.set()
        for watchdog in watchdogs:
            watchdog.cancel()
        judge_hold.set()
    await _background()

    assert text_before_merger_done
    kinds = [type(e).__name__ for e in events]
    assert kinds.index("MergeText") > max(i for i, k in enumerate(kinds) if k == "SeatDone")
    assert kinds.index("MergeDone") > max(i for i, k in enumerate(kinds) if k == "MergeText")
    merged = next(e for e in events if isinstance(e, MergeDone)).merged
    assert "".join(e.text for e in events if isinstance(e, MergeText)) == answer == merged.content
    assert merged.report is not None and merged.report.confidence == 0.5
    merge_prompt = next(r for r in fake_provider.requests if r.model == "judge").prompt
    assert "fast answer" in merge_prompt and "mid answer" in merge_prompt
    assert "slow answer" not in merge_prompt  # merged what was in at the quorum
    reply = events[-1].reply  # type: ignore[union-attr]
    assert reply.seats[2].status == "cancelled"
    row = await get_call(runtime.store, merged.call)
    assert row is not None and row.kind == "merge"


async def test_a_merger_whose_report_is_invalid_hands_the_report_to_the_next(
    runtime: Runtime, fake_provider: FakeProvider
) -> None:
    await add_endpoint(runtime.store, "fake", fake_provider.openai_base, "openai", needs_key=False)
    for model in (
        FakeModel("one", answer=merger("one merged", "{not json")),
        FakeModel("two", answer=merger("two merged", {**PLAIN_REPORT, "confidence": 0.9})),
    ):
        fake_provider.add(model)
        await add_model(runtime.store, model.served, "fake", model.served)
    await add_collection(runtime.store, "duo", ["one", "two"], reply="merged")
    reply = await PanelEngine(runtime).answer(Ask("duo", "merged", Request((user("hi"),))))
    await _background()
    assert reply.merged is not None and reply.merged.status == "ok"
    assert reply.merged.report is not None and reply.merged.report.confidence == 0.9
    merges = [r.model for r in fake_provider.requests if "a merge report" in r.system]
    assert merges == ["one", "two"]  # the first merger's report was not valid: the next wrote it


async def test_no_valid_report_keeps_the_answer_and_says_so(
    runtime: Runtime, fake_provider: FakeProvider
) -> None:
    await add_endpoint(runtime.store, "fake", fake_provider.openai_base, "openai", needs_key=False)
    fake_provider.add(FakeModel("one", answer=merger("merged", '{"consensus": "not a list"}')))
    await add_model(runtime.store, "one", "fake", "one")
    await add_collection(runtime.store, "solo", ["one"], reply="merged")
    reply = await PanelEngine(runtime).answer(Ask("solo", "merged", Request((user("hi"),))))
    await _background()
    assert reply.merged is not None and reply.merged.content == "merged" and reply.merged.report is None
    assert "report" in reply.merged.note


async def test_wait_counts_answers_not_arrivals() -> None:
    """A failed seat is in but is no answer: quorum 1 waits past it."""

    async def seat(status: str, after: float) -> Seat:
        await asyncio.sleep(after)
        return Seat("c", "Seat", "a", status, after)  # type: ignore[arg-type]

    tasks = {0: asyncio.create_task(seat("error", 0.0)), 1: asyncio.create_task(seat("ok", 0.05))}
    tasks[2] = asyncio.create_task(seat("ok", 60.0))
    waited = await quorum.wait(tasks, quorum.Rule(quorum=1))
    assert sorted(waited.seats) == [0, 1] and list(waited.running) == [2]
    assert waited.reason == "quorum 1 of 3 reached"
    tasks[2].cancel()


async def test_asked_for_json_an_invalid_answer_does_not_count() -> None:
    """Asked for structured output, an answer that is not valid against it
    is in (and shown) but is not one the caller can use: quorum 1 waits
    past it for a valid one."""

    async def seat(valid: bool, after: float) -> Seat:
        await asyncio.sleep(after)
        check = OutputCheck("json_object", valid, "" if valid else "not JSON")
        return Seat("c", "Seat", "a", "ok", after, output_check=check)

    tasks = {0: asyncio.create_task(seat(False, 0.0)), 1: asyncio.create_task(seat(True, 0.05))}
    tasks[2] = asyncio.create_task(seat(True, 60.0))
    waited = await quorum.wait(tasks, quorum.Rule(quorum=1))
    assert sorted(waited.seats) == [0, 1] and list(waited.running) == [2]
    tasks[2].cancel()


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        ({"quorum": -1}, "quorum"),
        ({"deadline": -2.0}, "deadline"),
        ({"on_cut": "later"}, "on cut"),
    ],
)
async def test_collection_settings_are_checked(
    runtime: Runtime, fields: dict[str, object], message: str
) -> None:
    await add_endpoint(runtime.store, "fake", "http://127.0.0.1:9", "openai", needs_key=False)
    await add_model(runtime.store, "m", "fake", "m")
    with pytest.raises(UserError, match=message):
        await add_collection(runtime.store, "c", ["m"], **fields)  # type: ignore[arg-type]


async def test_the_mergers_calls_are_limited_and_logged_like_seats(
    runtime: Runtime, fake_provider: FakeProvider
) -> None:
    """A merger over its rate limit is refused before it goes out, like a
    seat: its calls are logged `limited`, kind merge, under the ask; the
    reply falls back to the panel."""
    await add_endpoint(runtime.store, "fake", fake_provider.openai_base, "openai", needs_key=False)
    for model in (
        FakeModel("one", answer="one here"),
        FakeModel("judge", answer=merger("merged", PLAIN_REPORT)),
    ):
        fake_provider.add(model)
        await add_model(runtime.store, model.served, "fake", model.served)
    await set_limits(runtime.store, "fake", "judge", {"rpm": 1})
    await add_collection(runtime.store, "judges", ["judge"], seat_timeout=5.0)
    await add_collection(runtime.store, "solo", ["one"], merger="judge", seat_timeout=5.0)
    engine = PanelEngine(runtime)
    first = await engine.answer(Ask("judges", "panel", Request((user("hi"),))))  # the minute's one call
    assert first.seats[0].status == "ok"

    events = await _run(engine, Ask("solo", "merged", Request((user("hi"),)), stream=True))
    await _background()
    started, done = events[0], events[-1]
    assert isinstance(started, PanelStarted) and isinstance(done, PanelDone)
    merged = done.reply.merged
    assert merged is not None and merged.status == "error" and "judge: limited" in merged.error
    rows = await calls_of_ask(runtime.store, started.ask)
    merges = [r.status for r in rows if r.kind == "merge"]
    # The answer's call, refused; the report's too, unless the answer's refusal
    # came first and cut the report before it was asked (nothing to report on).
    assert merges and set(merges) == {"limited"}
    assert [(r.kind, r.status) for r in rows if r.kind == "seat"] == [("seat", "ok")]
    assert fake_provider.calls["judge"] == 1  # neither merge call went out


async def test_a_lone_seat_is_cut_by_the_deadline_too(runtime: Runtime, fake_provider: FakeProvider) -> None:
    hold = threading.Event()
    await add_endpoint(runtime.store, "fake", fake_provider.openai_base, "openai", needs_key=False)
    fake_provider.add(FakeModel("slow", answer="slow answer", hold=hold))
    await add_model(runtime.store, "slow", "fake", "slow")
    await add_collection(runtime.store, "solo", ["slow"], deadline=1.0)
    watchdog = _watchdog(hold)
    try:
        events = await _run(PanelEngine(runtime), Ask("solo", "panel", Request((user("hi"),)), stream=True))
        assert not hold.is_set()
    finally:
        hold.set()
        watchdog.cancel()
    await _background()
    (seat,) = [e.seat for e in events if isinstance(e, SeatDone)]
    assert seat.status == "cancelled" and seat.error == "cut: deadline 1s passed"
    assert (await get_call(runtime.store, seat.call)).status == "cancelled"  # type: ignore[union-attr]
