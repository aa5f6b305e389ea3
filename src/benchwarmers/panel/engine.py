"""The panel engine: one `Ask` in, `PanelEvent`s out.

It plans the panel (`panel/plan.py`: the seats, read before any event),
asks every seat at once (`panel/seats.py`), hands each seat on the moment
it is in (its call-log row on its way: the log's writer commits it
meanwhile), merges when asked (`panel/merger.py`), and ends with the whole
reply once every call it names is safe in the log (`calls/log.py`:
journaled on SQLite, committed on PostgreSQL), so a client told of a call
finds it, even after a crash. A seat's failure is that seat's status, never
the request's.

The work runs in a task of its own that the event stream (or the caller
of a whole reply) only watches: when that consumer goes away the panel
still finishes and every seat (and the merge) is still recorded, so a
verdict can name them later and the bench learns from them. Unless its
caller asked that leaving stop it (`run(stop_on_close=True)`: the
dashboard's Stop, a panel stream's client hanging up;
`reply_to(left=...)`: a whole reply's client hanging up): then the seats
still answering are cancelled, upstream too, and recorded `cancelled`,
owing no verdict, while those already in stay as they were. The engine
knows no HTTP and no format: what "left" means is the front end's.

Each seat's call id is minted before the seats are asked, so
`PanelStarted` names it; an ask that wants text as it is written
(`Ask.seat_text`, a stream) gets a `SeatText` per piece of a seat's answer,
handed straight from the caller's chunk loop (no task between).

An ask or collection with a quorum or deadline (`panel/quorum.py`) is
answered once enough seats are in; the seats still answering are cut
(`quorum.cut_running`). The task hands what it has to a stream's bounded
buffer, where a seat whose text finds it full waits while its client is
behind, or only the reply, to a caller waiting for it (`panel/hand.py`);
once a stream's client has gone and its seats have finished, the heap's
free pages are given back (`benchwarmers.trim`).
"""

from __future__ import annotations

import asyncio
import logging
import random
from collections.abc import AsyncGenerator, Callable, Sequence
from typing import TYPE_CHECKING

from benchwarmers import metrics
from benchwarmers.calls.call_ids import new_call_id
from benchwarmers.calls.caller import STOPPED, STOPS, Caller, CallResult, await_recorded
from benchwarmers.calls.cost import Total
from benchwarmers.calls.hangup import until_left
from benchwarmers.panel import history, judge, pace, quorum
from benchwarmers.panel.hand import Hand, Stream, Whole
from benchwarmers.panel.merger import merge
from benchwarmers.panel.plan import Plan, plan_panel
from benchwarmers.panel.seats import seat_reported
from benchwarmers.store import kept
from benchwarmers.store.views import CollectionView
from benchwarmers.trim import give_back_soon
from benchwarmers.types import (
    Ask,
    Cut,
    Merged,
    MergeDone,
    PanelDone,
    PanelEvent,
    PanelReply,
    PanelStarted,
    Seat,
)

if TYPE_CHECKING:
    from benchwarmers.runtime import Runtime

log = logging.getLogger(__name__)

# Panels whose client left are still running here: a task nobody references
# can be garbage-collected mid-flight.
_RUNNING: set[asyncio.Task[None]] = set()


class PanelEngine:
    def __init__(self, runtime: Runtime, *, rng: random.Random | None = None):
        self.runtime = runtime
        self.caller = Caller(runtime)
        self.rng = rng

    async def run(
        self,
        ask: Ask,
        *,
        on_done: Callable[[object], None] | None = None,
        collection: CollectionView | None = None,
        stop_on_close: bool = False,
        stop_as: str = STOPPED,
        key: str = "",
    ) -> AsyncGenerator[PanelEvent, None]:
        """Seat first (an unknown collection or alias raises here, before any
        event, so a route can answer 404), then stream the panel. `on_done`
        is called once its seats and merge are over, before the seating
        history, and again when its task ends (its client may be long gone).
        A consumer of the whole reply calls `reply_to` instead, which wakes it
        once, not once a seat. `collection`: its view, when the caller has
        just read it (`plan_panel`). `stop_on_close`: closing this stream
        before the reply stops the panel (its seats still answering are
        cancelled and recorded `cancelled`, `stop_as` their error: `STOPPED`,
        a person's Stop, or `HUNG_UP`, a gateway client gone); `key`: the
        gateway key that asks, as `plan_panel`."""
        plan = await plan_panel(self.runtime, ask, collection, key=key, rng=self.rng)
        stream = Stream()
        task = self._launch(plan, stream, on_done)
        replied = False  # once the reply is out, closing stops nothing: the task records and keeps
        try:
            while True:
                item = await stream.take()
                if isinstance(item, BaseException):
                    raise item
                replied = isinstance(item, PanelDone)
                yield item
                if replied:
                    return
        finally:
            stream.close()  # nobody reads on: the buffer goes, and a seat waiting on it reads on
            if not replied and not task.done():
                if stop_on_close:
                    task.cancel(stop_as)
                # Its seats read on and are freed when they end: the heap's free pages back then.
                task.add_done_callback(lambda done: give_back_soon(done.get_loop()))

    async def answer(self, ask: Ask, *, collection: CollectionView | None = None) -> PanelReply:
        """The whole reply at once (non-streamed clients, the CLI, MCP)."""
        return await self.reply_to(await plan_panel(self.runtime, ask, collection, rng=self.rng))

    async def reply_to(
        self,
        plan: Plan,
        *,
        on_done: Callable[[object], None] | None = None,
        left: asyncio.Future[None] | None = None,
    ) -> PanelReply:
        """The whole reply to a planned panel. No event is handed on: the
        caller sleeps until the reply is in (a queue would wake it for the
        panel's start). It waits on a future of its own, never on the
        panel's task, so a caller that leaves does not stop the panel, which
        still finishes and is recorded; `on_done` as in `run`. `left`: done
        when the caller has gone (its client hung up) before the reply: the
        panel is stopped as `run(stop_on_close=True)` stops it, and this
        raises `Left` once its seats are recorded (`calls/hangup.py`)."""
        reply: asyncio.Future[PanelReply] = asyncio.get_running_loop().create_future()
        task = self._launch(plan, Whole(reply), on_done)
        if left is None:
            return await reply
        return await until_left(reply, task, left, f"bench/{plan.collection.name}")

    def _launch(self, plan: Plan, hand: Hand, on_done: Callable[[object], None] | None) -> asyncio.Task[None]:
        task = asyncio.create_task(self._work(plan, hand, on_done))
        _RUNNING.add(task)
        if on_done is None:
            task.add_done_callback(_RUNNING.discard)
            return task

        def ended(done: asyncio.Task[None]) -> None:  # one callback: each is a turn of the loop
            _RUNNING.discard(done)
            on_done(done)  # a task cancelled before its first step never reached `_work`'s call

        task.add_done_callback(ended)
        return task

    # ----------------------------------------------------------------- work

    async def _work(self, plan: Plan, hand: Hand, on_done: Callable[[object], None] | None) -> None:
        """The panel's own task: the reply handed on once every call it
        names is safe in the log, then the seating history; a failure is handed
        on too, never lost. `on_done` is called as soon as the seats (and the
        merge) are over, before the history: what is left holds no seat and
        makes no call, and a history read that waits behind the call log's
        commit must not keep a place under the panel caps (at ten
        connections, one such wait of 100 ms held fifty finished panels'
        places and refused new asks with 429). It is called again when the
        task ends, so it must be idempotent (`Slot.release` is)."""
        with metrics.PANELS_IN_FLIGHT.track_inprogress():
            try:
                background: list[asyncio.Task[Seat]] = []
                # Each seat's text as written, gathered only where it is kept: a cut seat's call drops it.
                written: dict[str, list[str]] | None = {} if plan.collection.keep_text else None
                try:
                    reply = await self._panel(plan, hand, background, written)
                finally:
                    if on_done is not None:
                        on_done(None)
                hand.done(reply)
                if background:  # seats cut from the reply, left to finish and be logged
                    await asyncio.gather(*background, return_exceptions=True)
                # One turn of the loop first: the consumer writes the reply's
                # last bytes before the history's check (a cached read, a store
                # read when that is stale) takes the loop or the interpreter.
                await asyncio.sleep(0)
                await self._record_seating(plan)
                if written is not None:
                    await self._keep_text(plan, reply.seats, reply.merged, written)
                if plan.collection.judge_verdicts:  # after the reply: the caller never waits for it
                    await judge.judge_panel(
                        self.caller,
                        collection=plan.collection,
                        bench=plan.bench,
                        request=plan.request,
                        shape=plan.shape,
                        ask_id=plan.ask_id,
                        seats=reply.seats,
                        seated=[s.model.alias for s in plan.seating.seats],
                        rng=self.rng,
                        key=plan.key,
                    )
            except BaseException as exc:
                hand.failed(exc)
                if isinstance(exc, asyncio.CancelledError):
                    raise

    async def _panel(
        self,
        plan: Plan,
        hand: Hand,
        background: list[asyncio.Task[Seat]],
        written: dict[str, list[str]] | None,
    ) -> PanelReply:
        """Every seat at once, the merge when asked, the reply (its rows safe in the log).

        The seat sent first (`pace`: the one the ask waits for first) is
        asked right here, in the panel's task; each other seat has a task of
        its own, made before the first event is handed on, so every call
        goes out before the stream's first chunk is written. A lone seat
        (every one-seat panel) so costs no task, no `gather` and no wake-ups
        between tasks; of several, the one the reply waits for longest is
        the one that needs none. Each seat hands its own `SeatDone` on the
        moment it is in (one wake-up, the consumer's, between a seat's end
        and its section on the wire).

        With a quorum or deadline (`panel/quorum.py`) every seat has a task,
        and the reply goes once the rule allows; the seats still answering
        are cut (`quorum.cut_running`), those left to finish handed to
        `background`."""
        seating = plan.seating
        calls: list[CallResult] = []  # every call the reply names, safe before it ends
        call_ids = [new_call_id() for _ in seating.seats]  # named in `PanelStarted`, before any answers
        order = pace.send_order(
            self.runtime.store,
            [s.model.alias for s in seating.seats],
            slowest_first=plan.merged or not plan.stream,
        )
        first, *rest = order
        waits = plan.rule.deadline > 0 or (plan.rule.quorum > 0 and len(order) > 1)
        muted: set[str] = set()  # seats cut from the reply but still answering: heard no more
        others = {
            i: asyncio.create_task(
                seat_reported(self.caller, plan, seating.seats[i], call_ids[i], calls, hand, muted, written)
            )
            for i in (order if waits else rest)
        }
        hand.event(
            PanelStarted(
                plan.collection.name,
                plan.shape,
                tuple(
                    (s.label, s.model.alias, call) for s, call in zip(seating.seats, call_ids, strict=True)
                ),
                seating.left_off,
                merged=plan.merged,
                ask=plan.ask_id,
            )
        )
        answered: dict[int, Seat] = {}
        cut_by: Cut | None = None
        try:
            if waits:
                waited = await quorum.wait(others, plan.rule)
                answered, cut_by = waited.seats, waited.cut
                if waited.running:
                    answered.update(await quorum.cut_running(plan, waited, call_ids, hand, muted, background))
            else:
                answered[first] = await seat_reported(
                    self.caller, plan, seating.seats[first], call_ids[first], calls, hand, muted, written
                )
                for i, task in others.items():
                    answered[i] = await task  # most often done already: no wait
        except asyncio.CancelledError as stopped:
            # Stopped (a process closing, or a person: its message says which,
            # and each seat is told the same): stop the seats too, and wait
            # while each writes its call-log row, so none is left holding
            # the store (the one asked here has written its own).
            for task in others.values():
                task.cancel(*stopped.args)
            ended = await asyncio.gather(*others.values(), return_exceptions=True)
            done = {seat.call: seat for seat in answered.values()}  # a seat awaited already is in both
            done.update((seat.call, seat) for seat in ended if isinstance(seat, Seat))
            await self._keep_stopped(plan, stopped, list(done.values()), written)
            raise
        seats = tuple(answered[i] for i in range(len(seating.seats)))  # in seat order
        merged: Merged | None = None
        if plan.merged:
            try:
                merged = await merge(self.caller, plan, seats, calls, hand, self.rng)
            except asyncio.CancelledError as stopped:
                await self._keep_stopped(plan, stopped, seats, written)
                raise
            hand.event(MergeDone(merged))
        total = Total.of(call.cost_usd for call in calls)
        reply = PanelReply(
            plan.collection.name,
            plan.shape,
            seats,
            seating.left_off,
            merged,
            cut_by,
            cost_usd=total.usd,
            cost_complete=total.complete,
        )
        await await_recorded(calls)
        return reply

    async def _record_seating(self, plan: Plan) -> None:
        """A dated line in the seating history when who sits changed; after
        the reply is out, so it costs the ask no time."""
        await history.note_panel(
            self.runtime.store,
            plan.collection.name,
            plan.shape,
            [s.model.alias for s in plan.seating.seats],
            [s.model.alias for s in plan.seating.seats if s.explorer],
            plan.seating.left_off,
        )

    async def _keep_stopped(
        self,
        plan: Plan,
        stopped: asyncio.CancelledError,
        seats: Sequence[Seat],
        written: dict[str, list[str]] | None,
    ) -> None:
        """A panel a person stopped, or its client left (`STOPS`; not a closing process): in a
        collection that keeps text, the question and the answers that were
        in are kept, theirs to read and judge later as any ask's, and what
        each seat cancelled had written when it was cut, so its history is whole."""
        if len(stopped.args) == 1 and stopped.args[0] in STOPS and written is not None:
            try:
                await self._keep_text(plan, seats, None, written)
            except Exception:  # the stop goes on: text not kept is logged, never a failed panel
                log.exception(
                    "bench/%s ask %s: the stopped ask's text was not kept", plan.collection.name, plan.ask_id
                )

    async def _keep_text(
        self, plan: Plan, seats: Sequence[Seat], merged: Merged | None, written: dict[str, list[str]]
    ) -> None:
        """The question and the answers, for a collection that keeps them
        (`store/kept.py`); after the reply is out, so it costs the ask no
        time (or, for a panel a person stopped, the answers that were in).
        A seat cancelled (stopped, or cut by a quorum or deadline) keeps
        what it had written by then: its call's status, `cancelled`, marks
        it cut, and it owes no verdict. A stopped seat not in `seats` (its
        task ended by the stop) was cancelled too."""
        answers = [(s.call, s.content) for s in seats if s.status == "ok"]
        ended = {s.call: s.status for s in seats}
        answers += [
            (call, "".join(pieces))
            for call, pieces in written.items()
            if pieces and ended.get(call, "cancelled") == "cancelled"
        ]
        # A seat's answer standing in for a merge (no merger's was valid) is kept once, as the seat's.
        if merged is not None and merged.status == "ok" and all(merged.call != call for call, _ in answers):
            answers.append((merged.call, merged.content))
        await kept.keep(
            self.runtime.store,
            collection=plan.collection.name,
            ask_id=plan.ask_id,
            request=plan.request,
            answers=answers,
        )


async def finish_panels(grace: float) -> None:
    """Let the panels running on this event loop finish, for up to `grace`
    seconds; cancel the rest and wait until they have unwound. For a
    process about to close its runtime: a panel outlives its client, and
    its last writes (the seating history, after the reply) must not find
    the store closed."""
    loop = asyncio.get_running_loop()
    running = {task for task in _RUNNING if task.get_loop() is loop}
    if not running:
        return
    _finished, late = await asyncio.wait(running, timeout=grace)
    for task in late:
        task.cancel()
    await asyncio.gather(*running, return_exceptions=True)
