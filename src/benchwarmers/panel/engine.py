"""The panel engine: one `Ask` in, `PanelEvent`s out.

It seats the collection, asks every seat at once, hands each seat on the
moment it is in (its call-log row on its way: the log's writer commits it
meanwhile), merges when asked, and ends with the whole reply once every
call it names is safe in the log (`calls/log.py`: journaled on SQLite,
committed on PostgreSQL), so a client told of a call finds it, even
after a crash. A seat's failure is that seat's status, never the request's.

The work runs in a task of its own that the event stream only watches:
when the client hangs up, the stream's consumer goes away but the panel
still finishes and every seat (and the merge) is still recorded, so a
verdict can name them later and the bench learns from them. Unless the
stream is a person's, who may stop it (`run(stop_on_close=True)`: the
dashboard): then closing the stream cancels the seats still answering,
upstream too, and they are recorded `cancelled`. The engine knows no HTTP
and no format.

Each seat's call id is minted when the seat is planned, so `PanelStarted`
names it; an ask that wants text as it is written (`Ask.seat_text`, a
stream) gets a `SeatText` per piece of a seat's answer, handed straight
from the caller's chunk loop (no task between).

An ask or collection with a quorum or deadline (`panel/quorum.py`) is
answered once enough seats are in; the seats still answering are cut
(`_cut`). A merge hands the merger's text on as it is written
(`MergeText`), while its structured report is asked for beside it
(`_report`, `panel/report.py`).

A stream's events wait for its client in a bounded buffer (`_Stream`):
text not yet taken by the consumer is at most about `STREAM_BUFFER`
bytes (one piece over it), and a seat whose text finds it full waits in
its chunk loop, so its upstream is not read meanwhile (the outbound
connection stops reading at its own high-water mark, and TCP tells the
provider). A client that reads nothing so holds the buffer, not the
reply: a stalled reader of a 4 MB answer held all 4 MB before
(docs/benchmarks.md, issue 36). When the stream's consumer goes (the
client hung up, or the server cut it for reading nothing,
`server/protocol.py`), the buffer is dropped and the seats read on, so
they still finish and are logged; once they have, the heap's free pages
are given back (`benchwarmers.trim`). A seat's text is still kept whole
(`Seat.content`: the log, the merge, kept text), but it only grows as
fast as the client takes it. `x-bench-stream: sections` and merged
streams send a seat only once it is whole, so theirs is bounded by the
reply's cap and the cut, not by the buffer.
"""

from __future__ import annotations

import asyncio
import random
import time
from abc import ABC, abstractmethod
from collections import deque
from collections.abc import AsyncGenerator, Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from benchwarmers import metrics
from benchwarmers.bench import decisions, revive
from benchwarmers.calls.call_ids import new_ask_id, new_call_id
from benchwarmers.calls.caller import (
    STOPPED,
    CallContext,
    Caller,
    CallResult,
    await_recorded,
    cut,
    cut_reason,
)
from benchwarmers.calls.cost import Total
from benchwarmers.calls.log import panel_task
from benchwarmers.calls.tokens import fitted, prompt_tokens, reply_tokens
from benchwarmers.config import tunables
from benchwarmers.errors import UserError
from benchwarmers.limits.spending import Hold
from benchwarmers.panel import history, judge, pace, quorum
from benchwarmers.panel.merge import Anonymised, anonymise, merge_request
from benchwarmers.panel.output_check import output_check, unwrapped
from benchwarmers.panel.report import agreement_of, read_report, relabel, report_request
from benchwarmers.panel.seating import (
    PlannedSeat,
    Seating,
    fitted_note,
    fitted_unfit_reason,
    seat_exactly,
    seat_panel,
)
from benchwarmers.panel.shapes import shape_of
from benchwarmers.panel.structured import as_asked, for_seating
from benchwarmers.store import kept
from benchwarmers.store.collections import get_collection
from benchwarmers.store.models import models_by_alias
from benchwarmers.store.views import CollectionView, ModelView
from benchwarmers.trim import give_back_soon
from benchwarmers.types import (
    Ask,
    Cut,
    Merged,
    MergeDone,
    MergeReport,
    MergeText,
    OutputCheck,
    PanelDone,
    PanelEvent,
    PanelReply,
    PanelStarted,
    Request,
    Seat,
    SeatDone,
    SeatText,
    Usage,
)

if TYPE_CHECKING:
    from benchwarmers.runtime import Runtime

# The seat label of the merger's report call in the call log (kind merge).
REPORT_SEAT = "report"

# Explorer candidates asked for beyond the seats, in case the first do not fit.
EXPLORER_SPARES = 5
# Characters of seat text a stream holds for its client before a seat waits (`_Stream`).
STREAM_BUFFER = tunables.PANEL_STREAM_BUFFER.value

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
        key: str = "",
    ) -> AsyncGenerator[PanelEvent, None]:
        """Seat first (an unknown collection or alias raises here, before any
        event, so a route can answer 404), then stream the panel. `on_done`
        is called once its seats and merge are over, before the seating
        history, and again when its task ends (its client may be long gone).
        A consumer of the whole reply calls `reply_to` instead, which wakes it
        once, not once a seat. `collection`: its view, when the caller has just read it (`plan`).
        `stop_on_close`: closing this stream before the reply stops the panel
        (its seats still answering are cancelled and recorded `cancelled`);
        `key`: the gateway key that asks, as `plan`."""
        plan = await self.plan(ask, collection, key=key)
        stream = _Stream()
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
                    task.cancel(STOPPED)
                # Its seats read on and are freed when they end: the heap's free pages back then.
                task.add_done_callback(lambda done: give_back_soon(done.get_loop()))

    async def answer(self, ask: Ask, *, collection: CollectionView | None = None) -> PanelReply:
        """The whole reply at once (non-streamed clients, the CLI, MCP)."""
        return await self.reply_to(await self.plan(ask, collection))

    async def reply_to(self, plan: Plan, *, on_done: Callable[[object], None] | None = None) -> PanelReply:
        """The whole reply to a planned panel. No event is handed on: the
        caller sleeps until the reply is in (a queue would wake it for the
        panel's start). It waits on a future of its own, never on the
        panel's task, so a caller that leaves does not stop the panel, which
        still finishes and is recorded; `on_done` as in `run`."""
        reply: asyncio.Future[PanelReply] = asyncio.get_running_loop().create_future()
        self._launch(plan, _Whole(reply), on_done)
        return await reply

    def _launch(
        self, plan: Plan, hand: _Hand, on_done: Callable[[object], None] | None
    ) -> asyncio.Task[None]:
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

    # ----------------------------------------------------------------- plan

    async def plan(self, ask: Ask, collection: CollectionView | None = None, *, key: str = "") -> Plan:
        """Everything the panel needs, read before it starts. `collection`:
        the view the caller has just checked (`Panels.collection`), not
        looked up again; `key`: the gateway key that asks ("" for the owner),
        logged on each of its calls."""
        if ask.request.tools:
            raise UserError(
                "a panel answers with text and cannot run tools; use route mode: bench/<collection>:route"
            )
        store = self.runtime.store
        # One after the other: both are read from memory on almost every ask,
        # where a gather would cost a task and a turn of the loop for each.
        if collection is None:
            collection = await get_collection(store, ask.collection)
        bench = await models_by_alias(store)
        request = ask.request.under_system(collection.system_prompt)
        shape = shape_of(request)
        judged = for_seating(request, collection.output_fallback)  # what seating holds each model to
        if ask.only_aliases:  # a follow-up: exactly the seats named
            seating = seat_exactly(ask.only_aliases, judged, bench)
        else:
            # The bench's decision (`bench/decider.py`), with a few spare explorers: the first
            # in line may not fit this request.
            decision = await decisions.seat_plan(
                store,
                collection,
                shape,
                spares=EXPLORER_SPARES if collection.explorer_seats > 0 else 0,
                exclude=ask.extra_aliases,
                rng=self.rng,
            )
            revive.probe_failing(self.runtime, decision.left_off)
            seating = seat_panel(collection, judged, bench=bench, extras=ask.extra_aliases, decision=decision)
            decisions.note_seated(store, collection.name, shape, [s.model.alias for s in seating.seats])
        if not seating.seats:
            reasons = "; ".join(f"{m.alias}: {m.reason}" for m in seating.left_off) or "it has no members"
            raise UserError(
                f"no member of bench/{collection.name} can answer this request ({reasons})", status=422
            )
        holds, seating = await self._budgeted(seating, request, collection)
        merged = ask.mode == "merged" or collection.reply == "merged"
        wanted, deadline = ask.quorum or collection.quorum, ask.deadline or collection.deadline
        rule = (
            quorum.Rule(quorum=wanted, deadline=deadline, on_cut=collection.on_cut)
            if wanted or deadline
            else quorum.NO_RULE
        )
        return Plan(
            ask_id=new_ask_id(),
            collection=collection,
            bench=bench,
            request=request,
            shape=shape,
            seating=seating,
            merged=merged,
            stream=ask.stream,
            seat_text=ask.stream and ask.seat_text,
            rule=rule,
            key=key,
            holds=holds,
        )

    async def _budgeted(
        self, seating: Seating, request: Request, collection: CollectionView
    ) -> tuple[dict[str, Hold], Seating]:
        """The seats the budgets can pay for, each with its reservation (by
        label; `limits/spending.py`), cheapest first or by record as the
        collection says; those they cannot are left off, "budget: ...".
        None paid for: the budget's 429. No budget applies (the usual ask): as seated."""
        spending = self.runtime.spending
        applying = await spending.applying(collection.name)
        if not applying:
            return {}, seating
        prompt = prompt_tokens(request)
        estimates = [(prompt, reply_tokens(fitted(request, s.model))) for s in seating.seats]
        holds, left_off, refusals = await spending.seat(
            applying, seating.seats, estimates, collection=collection.name, order=collection.budget_seating
        )
        if not holds:
            raise refusals[0]
        by_label = {seating.seats[i].label: hold for i, hold in holds.items()}
        if not left_off:  # the budgets pay for every seat (the usual ask): as seated
            return by_label, seating
        kept = tuple(s for i, s in enumerate(seating.seats) if i in holds)
        return by_label, Seating(kept, (*seating.left_off, *left_off))

    # ----------------------------------------------------------------- work

    async def _work(self, plan: Plan, hand: _Hand, on_done: Callable[[object], None] | None) -> None:
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
                try:
                    reply = await self._panel(plan, hand, background)
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
                if plan.collection.keep_text:
                    await self._keep_text(plan, reply)
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
                    )
            except BaseException as exc:
                hand.failed(exc)
                if isinstance(exc, asyncio.CancelledError):
                    raise

    async def _panel(self, plan: Plan, hand: _Hand, background: list[asyncio.Task[Seat]]) -> PanelReply:
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
        are cut (`_cut`), those left to finish handed to `background`."""
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
                self._seat_reported(plan, seating.seats[i], call_ids[i], calls, hand, muted)
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
                    answered.update(await self._cut(plan, waited, call_ids, hand, muted, background))
            else:
                answered[first] = await self._seat_reported(
                    plan, seating.seats[first], call_ids[first], calls, hand, muted
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
            await asyncio.gather(*others.values(), return_exceptions=True)
            raise
        seats = tuple(answered[i] for i in range(len(seating.seats)))  # in seat order
        merged: Merged | None = None
        if plan.merged:
            merged = await self._merge(plan, seats, calls, hand)
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

    async def _cut(
        self,
        plan: Plan,
        waited: quorum.Waited,
        call_ids: Sequence[str],
        hand: _Hand,
        muted: set[str],
        background: list[asyncio.Task[Seat]],
    ) -> dict[int, Seat]:
        """The seats still answering when the reply may go, each `cut` with
        the wait's reason: cancelled, each logging its call `cut` and
        handing its own `SeatDone` (`on_cut = "cancel"`); or left to finish
        in the background (`"finish"`), muted, with a `cut` seat handed in
        its place now, its call logged with its real outcome later."""
        seats = plan.seating.seats
        out: dict[int, Seat] = {}
        if plan.rule.on_cut == "finish":
            for i, task in waited.running.items():
                planned = seats[i]
                muted.add(planned.label)
                background.append(task)
                out[i] = Seat(
                    call_ids[i],
                    planned.label,
                    planned.model.alias,
                    "cut",
                    waited.seconds,
                    error=waited.reason,
                    explorer=planned.explorer,
                )
                hand.seat(out[i])
            return out
        for task in waited.running.values():
            task.cancel(cut(waited.reason))
        ended = await asyncio.gather(*waited.running.values(), return_exceptions=True)
        for i, result in zip(waited.running, ended, strict=True):
            if isinstance(result, Seat):
                out[i] = result
                continue
            # Cancelled before its call began: never logged, no id a verdict could name.
            planned = seats[i]
            out[i] = Seat("", planned.label, planned.model.alias, "cut", 0.0, error=waited.reason)
            hand.seat(out[i])
        return out

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

    async def _keep_text(self, plan: Plan, reply: PanelReply) -> None:
        """The question and the answers, for a collection that keeps them
        (`store/kept.py`); after the reply is out, so it costs the ask no time."""
        answers = [(s.call, s.content) for s in reply.seats if s.status == "ok"]
        if reply.merged is not None and reply.merged.status == "ok":
            answers.append((reply.merged.call, reply.merged.content))
        await kept.keep(
            self.runtime.store,
            collection=plan.collection.name,
            keep_days=plan.collection.keep_days,
            ask_id=plan.ask_id,
            request=plan.request,
            answers=answers,
        )

    async def _seat_reported(
        self,
        plan: Plan,
        planned: PlannedSeat,
        call_id: str,
        calls: list[CallResult],
        hand: _Hand,
        muted: set[str],
    ) -> Seat:
        """The seat, handed on the moment it is in (and its text as it is
        written, when the ask wants it); nothing of it once it is `muted`
        (cut from the reply, finishing in the background)."""
        on_text: Callable[[str], Awaitable[None] | None] | None = None
        label = planned.label
        if plan.seat_text:
            alias = planned.model.alias

            def on_text(text: str) -> Awaitable[None] | None:
                if label in muted:
                    return None
                return hand.text(SeatText(label, alias, call_id, text))

        seat = await self._seat(plan, planned, call_id, calls, on_text)
        if label not in muted:
            hand.seat(seat)
        return seat

    async def _seat(
        self,
        plan: Plan,
        planned: PlannedSeat,
        call_id: str,
        calls: list[CallResult],
        on_text: Callable[[str], Awaitable[None] | None] | None = None,
    ) -> Seat:
        started = time.monotonic()
        context = CallContext(
            task=panel_task(plan.collection.name, plan.shape),
            collection=plan.collection.name,
            shape=plan.shape,
            seat=planned.label,
            ask_id=plan.ask_id,
            explorer=planned.explorer,
            key=plan.key,
        )
        request, note = fitted_note(plan.request, planned.model)
        request, prompted = as_asked(request, planned.model)
        note = "; ".join(n for n in (note, prompted) if n)
        hold = plan.holds.get(planned.label)
        try:
            result = await self.caller.call(
                planned.model,
                request,
                kind="seat",
                timeout=plan.collection.seat_timeout,
                context=context,
                stream=True,
                recorded=False,
                call_id=call_id,
                on_text=on_text,
                hold=hold,
            )
            calls.append(result)
            pace.note(self.runtime.store, planned.model.alias, result.seconds)
        except Exception as exc:  # a bug in one seat's path must not sink the panel
            return Seat(
                "",  # never logged: no id a verdict could name
                planned.label,
                planned.model.alias,
                "error",
                time.monotonic() - started,
                error=f"{type(exc).__name__}: {exc}",
                explorer=planned.explorer,
                note=note,
            )
        finally:
            if hold is not None and not hold.settled:  # the call never started: its reservation goes back
                await self.runtime.spending.settle(hold, Usage())
        seat = seat_of(result, planned, note)
        output = plan.request.output
        if output is None or seat.status != "ok":
            return seat
        # Its content stays as written (a live stream has shown it so already).
        return replace(seat, output_check=output_check(seat.content, output))

    async def _merge(self, plan: Plan, seats: Sequence[Seat], calls: list[CallResult], hand: _Hand) -> Merged:
        """The merger's answer, handed on as it is written (`MergeText`),
        and beside it, in a task of its own, its structured report
        (`_report`): two calls at once, so the report costs the reply no
        wait beyond the answer's own (most often). A merger that fails
        hands the answer to the next candidate, as one whose report is not
        valid hands the report on."""
        answered = [s for s in seats if s.status == "ok"]
        if not answered:
            return Merged(
                "",
                "",
                "error",
                0.0,
                error="no seat answered",
                note="No seat answered, so nothing was merged.",
                cost_usd=0.0,  # no merger was asked
            )
        anonymised = anonymise(answered, self.rng)
        request = merge_request(plan.request, anonymised)
        output = plan.request.output
        merging = len(calls)  # the merge's own calls (answers and reports) follow: its cost
        candidates = await self._merger_candidates(plan, seats)
        report = asyncio.create_task(self._report(plan, candidates, anonymised, calls))
        tried: list[str] = []
        wrote = False  # some merger's text is out already: the next one's starts afresh
        merged: Merged | None = None
        try:
            for model in candidates:
                call_id = new_call_id()
                pieces: list[bool] = []

                def on_text(
                    text: str,
                    alias: str = model.alias,
                    call: str = call_id,
                    pieces: list[bool] = pieces,
                    after: bool = wrote,
                ) -> None:
                    hand.merge_text(MergeText(alias, call, text, restart=after and not pieces))
                    pieces.append(True)

                result = await self.caller.call(
                    model,
                    as_asked(fitted(request, model), model)[0],
                    kind="merge",
                    timeout=plan.collection.seat_timeout,
                    context=self._merge_context(plan),
                    stream=True,
                    recorded=False,
                    call_id=call_id,
                    on_text=on_text if plan.stream else None,
                )
                calls.append(result)
                wrote = wrote or bool(pieces)
                content = result.reply.text.strip() if result.status == "ok" else ""
                if content and output is not None:
                    check = output_check(content, output)
                    if not check.valid:
                        tried.append(f"{model.alias}: not valid against the output asked ({check.error})")
                        continue
                    merged = Merged(
                        result.call,
                        model.alias,
                        "ok",
                        result.seconds,
                        unwrapped(content),
                        usage=result.reply.usage,
                        note=_fell_back(tried),
                        output_check=check,
                    )
                    break
                if content:
                    merged = Merged(
                        result.call, model.alias, "ok", result.seconds, content, usage=result.reply.usage
                    )
                    break
                status = "empty" if result.status == "ok" else result.status
                tried.append(f"{model.alias}: {status}" + (f" ({result.error})" if result.error else ""))
        except BaseException as ended:
            # The panel stopped (its report is told the same), or a bug: no report wanted.
            report.cancel(*ended.args if isinstance(ended, asyncio.CancelledError) else ())
            raise
        if merged is None:
            report.cancel(cut("no merger answered"))
        # A report cut before its task first ran ends cancelled, not with None.
        (found,) = await asyncio.gather(report, return_exceptions=True)
        if isinstance(found, BaseException):
            if not isinstance(found, asyncio.CancelledError):
                raise found
            found = None
        cost = _known([c.cost_usd for c in calls[merging:]])
        if merged is None:
            detail = "; ".join(tried) if tried else "no member could merge"
            return Merged(
                "",
                "",
                "error",
                0.0,
                error=detail,
                note=f"No merger answered ({detail}); the panel's answers follow.",
                output_check=None if output is None else OutputCheck(output.kind, False, detail),
                cost_usd=cost,
            )
        merged = replace(merged, cost_usd=cost)
        if found is None:
            note = " ".join(part for part in (merged.note, "No merger returned a valid report.") if part)
            return replace(merged, note=note)
        labels = tuple(s.seat for s in anonymised.order)
        return replace(merged, report=found, agreement=agreement_of(found, labels))

    async def _report(
        self, plan: Plan, candidates: Sequence[Any], anonymised: Anonymised, calls: list[CallResult]
    ) -> MergeReport | None:
        """The structured report (`panel/report.py`), from the first
        candidate whose reply is valid against its schema; None when none is."""
        request = report_request(plan.request, anonymised)
        try:
            for model in candidates:
                result = await self.caller.call(
                    model,
                    as_asked(fitted(request, model), model)[0],
                    kind="merge",
                    timeout=plan.collection.seat_timeout,
                    context=self._merge_context(plan, REPORT_SEAT),
                    stream=True,
                    recorded=False,
                )
                calls.append(result)
                found = read_report(result.reply.text) if result.status == "ok" else None
                if found is not None:
                    return relabel(found, anonymised.label_of_letter)
                if result.status == "cut":
                    return None
        except asyncio.CancelledError as exc:
            if cut_reason(exc) is None:
                raise
            return None  # cut before its call began (no merger answered)
        return None

    @staticmethod
    def _merge_context(plan: Plan, seat: str = "merged") -> CallContext:
        """A merge call's context: the answer's seat is "merged", the
        report's "report" (both kind merge), so a list of an ask's calls
        tells them apart."""
        return CallContext(
            task=panel_task(plan.collection.name, plan.shape, "merge"),
            collection=plan.collection.name,
            shape=plan.shape,
            seat=seat,
            ask_id=plan.ask_id,
            key=plan.key,
        )

    async def _merger_candidates(self, plan: Plan, seats: Sequence[Seat]) -> list[Any]:
        """The collection's merger alone when it has one; else members by
        record on this shape, those that did not sit on this panel first (a
        merger should not judge its own answer where another can), then those
        whose seat answered; a member whose seat just failed is not asked
        again, nor one that cannot answer now."""
        collection = plan.collection
        if collection.merger:
            model = plan.bench.get(collection.merger)
            unfit = model is None or _unfit(model, for_seating(plan.request, collection.output_fallback))
            return [] if unfit else [model]
        ranked = await decisions.pick_mergers(
            self.runtime.store, collection.name, plan.shape, collection.members
        )
        status = {s.alias: s.status for s in seats}
        judged = for_seating(plan.request, collection.output_fallback)
        fit = [plan.bench[a] for a in ranked if a in plan.bench and not _unfit(plan.bench[a], judged)]
        outside = [m for m in fit if m.alias not in status]
        answered = [m for m in fit if status.get(m.alias) == "ok"]
        return outside + answered


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


@dataclass(frozen=True, slots=True)
class Plan:
    """Everything the work needs, looked up once before the first event."""

    ask_id: str
    collection: CollectionView
    bench: Mapping[str, ModelView]
    request: Request
    shape: str
    seating: Seating
    merged: bool
    # The client reads the seats as they finish (else only the whole reply).
    stream: bool = False
    # ... and each seat's text as it is written (`SeatText`).
    seat_text: bool = False
    # When it may answer without its slower seats.
    rule: quorum.Rule = quorum.NO_RULE
    # The gateway key that asked ("" for the owner): on each call's log row.
    key: str = ""
    # The budgets' reservation of each seat, by label (none when no budget applies).
    holds: Mapping[str, Hold] = field(default_factory=dict)


class _Hand(ABC):
    """Where a panel's task hands what it has: to a stream's buffer
    (`_Stream`), or only the reply, to a caller waiting for it (`_Whole`)."""

    @abstractmethod
    def event(self, event: PanelStarted | MergeDone) -> None:
        """The panel started, or its merge is in."""

    @abstractmethod
    def seat(self, seat: Seat) -> None:
        """A seat is in."""

    @abstractmethod
    def text(self, text: SeatText) -> Awaitable[None] | None:
        """A piece of a seat's answer; what to await before reading on, if
        the reader is behind (None: read on at once)."""

    @abstractmethod
    def merge_text(self, text: MergeText) -> None:
        """A piece of the merger's answer."""

    @abstractmethod
    def done(self, reply: PanelReply) -> None:
        """The reply, its calls safe in the log."""

    @abstractmethod
    def failed(self, exc: BaseException) -> None:
        """What ended the panel (a stop included)."""


class _Stream(_Hand):
    """Every event for the stream's consumer, in order, in a buffer that
    holds at most about `STREAM_BUFFER` characters of seat text (one piece
    over it, one a seat): a piece that fills it is handed back a future to await, done
    once the consumer has taken the buffer below the bound (or gone). The
    other events are few and small, and never wait: a seat's `SeatDone`
    must not wait behind another seat's text. Once closed (the consumer
    left), nothing is kept and nothing waits."""

    __slots__ = ("_arrived", "_closed", "_events", "_held", "_room")

    def __init__(self) -> None:
        self._events: deque[PanelEvent | BaseException] = deque()
        self._held = 0  # characters of `SeatText` in `_events`
        self._arrived: asyncio.Future[None] | None = None  # the consumer waits for an event
        self._room: asyncio.Future[None] | None = None  # seats wait for the buffer to drain
        self._closed = False

    async def take(self) -> PanelEvent | BaseException:
        """The next event, waiting for one."""
        while not self._events:
            self._arrived = asyncio.get_running_loop().create_future()
            await self._arrived
        item = self._events.popleft()
        if type(item) is SeatText:
            self._held -= len(item.text)
            room = self._room
            if room is not None and self._held < STREAM_BUFFER:
                self._room = None
                if not room.done():
                    room.set_result(None)
        return item

    def close(self) -> None:
        """The consumer has gone: drop what it never took, wake any seat waiting."""
        self._closed = True
        self._events.clear()
        self._held = 0
        if self._room is not None and not self._room.done():
            self._room.set_result(None)
        self._room = None

    def _put(self, item: PanelEvent | BaseException) -> None:
        if self._closed:
            return
        self._events.append(item)
        arrived = self._arrived
        if arrived is not None:
            self._arrived = None
            if not arrived.done():
                arrived.set_result(None)

    def event(self, event: PanelStarted | MergeDone) -> None:
        self._put(event)

    def seat(self, seat: Seat) -> None:
        self._put(SeatDone(seat))

    def text(self, text: SeatText) -> Awaitable[None] | None:
        if self._closed:
            return None
        self._put(text)
        self._held += len(text.text)
        if self._held < STREAM_BUFFER:
            return None
        if self._room is None:
            self._room = asyncio.get_running_loop().create_future()
        return self._room

    def merge_text(self, text: MergeText) -> None:
        self._put(text)

    def done(self, reply: PanelReply) -> None:
        self._put(PanelDone(reply))

    def failed(self, exc: BaseException) -> None:
        self._put(exc)


class _Whole(_Hand):
    """The reply (or the failure) to the future its caller awaits; nothing
    when the caller has gone (its future cancelled)."""

    def __init__(self, reply: asyncio.Future[PanelReply]) -> None:
        self.reply = reply

    def event(self, event: PanelStarted | MergeDone) -> None:
        """Not handed on: its caller reads them in the reply."""

    def seat(self, seat: Seat) -> None:
        """Not handed on: its caller reads them in the reply."""

    def text(self, text: SeatText) -> None:
        """Not handed on: its caller reads the whole answers in the reply."""

    def merge_text(self, text: MergeText) -> None:
        """Not handed on: its caller reads the merged answer in the reply."""

    def done(self, reply: PanelReply) -> None:
        if not self.reply.done():
            self.reply.set_result(reply)

    def failed(self, exc: BaseException) -> None:
        if self.reply.done():
            return
        if isinstance(exc, asyncio.CancelledError):
            self.reply.cancel()
        else:
            self.reply.set_exception(exc)


def seat_of(result: CallResult, planned: PlannedSeat, note: str = "") -> Seat:
    return Seat(
        call=result.call,
        seat=planned.label,
        alias=planned.model.alias,
        status=result.status,
        seconds=result.seconds,
        content=result.reply.text if result.status == "ok" else "",
        error=result.error,
        usage=result.reply.usage,
        frees_at=result.frees_at_iso,
        explorer=planned.explorer,
        note=note,
        cost_usd=result.cost_usd,
    )


def _fell_back(tried: list[str]) -> str:
    """A merge that came after others failed says whose and why."""
    return f"Merged after {'; '.join(tried)}." if tried else ""


def _known(costs: Sequence[float | None]) -> float | None:
    """The costs' sum, or None when any was unknown (a merge's several tries)."""
    total = Total.of(costs)
    return total.usd if total.complete else None


def _unfit(model: Any, request: Request) -> bool:
    return bool(fitted_unfit_reason(model, request, datetime.now(UTC)))
