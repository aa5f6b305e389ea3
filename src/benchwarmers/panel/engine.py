"""The panel engine: one `Ask` in, `PanelEvent`s out.

It seats the collection, asks every seat at once, hands each seat on the
moment it is in (its call-log row on its way: the log's writer commits it
meanwhile), merges when asked, and ends with the whole reply once every
call it names is committed, so a client told of a call finds it, even
after a crash. A seat's failure is that seat's status, never the request's.

The work runs in a task of its own that the event stream only watches:
when the client hangs up, the stream's consumer goes away but the panel
still finishes and every seat (and the merge) is still recorded, so a
verdict can name them later and the bench learns from them. The engine
knows no HTTP and no format.
"""

from __future__ import annotations

import asyncio
import random
import time
from collections.abc import AsyncGenerator, Awaitable, Callable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from benchwarmers import metrics
from benchwarmers.bench import decisions
from benchwarmers.calls.caller import CallContext, Caller, CallResult, await_recorded
from benchwarmers.calls.log import new_ask_id, panel_task
from benchwarmers.calls.tokens import fitted
from benchwarmers.errors import UserError
from benchwarmers.panel import history, pace
from benchwarmers.panel.merge import anonymise, merge_request, parse_merge
from benchwarmers.panel.seating import PlannedSeat, Seating, fitted_note, fitted_unfit_reason, seat_panel
from benchwarmers.panel.shapes import shape_of
from benchwarmers.store import registry
from benchwarmers.types import (
    Ask,
    Merged,
    MergeDone,
    PanelDone,
    PanelEvent,
    PanelReply,
    PanelStarted,
    Request,
    Seat,
    SeatDone,
)

if TYPE_CHECKING:
    from benchwarmers.runtime import Runtime

# Orders aliases best first for one collection and shape (seat caps, merger choice).
Ranker = Callable[[Any, str, str, list[str]], Awaitable[list[str]]]

# Explorer candidates asked for beyond the seats, in case the first do not fit.
EXPLORER_SPARES = 5

# What a panel's task hands its stream: events, or the failure that ended it.
_Events = asyncio.Queue[PanelEvent | BaseException]

# Panels whose client left are still running here: a task nobody references
# can be garbage-collected mid-flight.
_RUNNING: set[asyncio.Task[None]] = set()


class PanelEngine:
    def __init__(
        self, runtime: Runtime, *, ranker: Ranker = decisions.rank_aliases, rng: random.Random | None = None
    ):
        self.runtime = runtime
        self.caller = Caller(runtime)
        self.ranker = ranker
        self.rng = rng

    async def run(
        self, ask: Ask, *, on_done: Callable[[object], None] | None = None, seats: bool = True
    ) -> AsyncGenerator[PanelEvent, None]:
        """Seat first (an unknown collection or alias raises here, before any
        event, so a route can answer 404), then stream the panel. `on_done`
        is called when the panel's own task ends (its client may be long gone).
        With `seats=False` no `SeatDone` is handed on: a consumer that waits
        for the whole reply is not woken once a seat, the last one's wake-up
        included, which came between that seat's end and its commit."""
        plan = await self.plan(ask)
        queue: _Events = asyncio.Queue()
        task = asyncio.create_task(self._work(plan, queue if seats else None, queue))
        _RUNNING.add(task)
        task.add_done_callback(_RUNNING.discard)
        if on_done is not None:
            task.add_done_callback(on_done)
        while True:
            item = await queue.get()
            if isinstance(item, BaseException):
                raise item
            yield item
            if isinstance(item, PanelDone):
                return

    async def answer(self, ask: Ask) -> PanelReply:
        """The whole reply at once (non-streamed clients, the CLI, MCP)."""
        async for event in self.run(ask, seats=False):
            if isinstance(event, PanelDone):
                return event.reply
        raise RuntimeError("the panel ended without a reply")

    # ----------------------------------------------------------------- plan

    async def plan(self, ask: Ask) -> Plan:
        if ask.request.tools:
            raise UserError(
                "a panel answers with text and cannot run tools; use route mode: bench/<collection>:route"
            )
        store = self.runtime.store
        # One after the other: both are read from memory on almost every ask,
        # where a gather would cost a task and a turn of the loop for each.
        collection = await registry.get_collection(store, ask.collection)
        bench = await registry.list_models(store)
        request = ask.request.under_system(collection.system_prompt)
        shape = shape_of(request)
        ranked: list[str] = []
        if collection.seats > 0 and len(collection.members) > collection.seats:
            ranked = await self.ranker(store, collection.name, shape, list(collection.members))
        explorer_order: list[str] = []
        if collection.explorer_seats > 0:
            # A few spares: the first in line may not fit this request.
            explorer_order = await decisions.pick_explorers(
                store,
                collection.name,
                shape,
                collection.explorer_seats + EXPLORER_SPARES,
                exclude=(*collection.members, *ask.extra_aliases),
            )

        def rank(aliases: list[str]) -> list[str]:
            order = {alias: i for i, alias in enumerate(ranked)}
            return sorted(aliases, key=lambda a: order.get(a, len(order)))

        seating = seat_panel(
            collection,
            request,
            bench=bench,
            extras=ask.extra_aliases,
            explorer_order=explorer_order,
            rank=rank,
        )
        if not seating.seats:
            reasons = "; ".join(f"{m.alias}: {m.reason}" for m in seating.left_off) or "it has no members"
            raise UserError(
                f"no member of bench/{collection.name} can answer this request ({reasons})", status=422
            )
        merged = ask.mode == "merged" or collection.reply == "merged"
        return Plan(
            ask_id=new_ask_id(),
            collection=collection,
            bench={m.alias: m for m in bench},
            request=request,
            shape=shape,
            seating=seating,
            merged=merged,
            stream=ask.stream,
        )

    # ----------------------------------------------------------------- work

    async def _work(self, plan: Plan, seats_to: _Events | None, queue: _Events) -> None:
        with metrics.PANELS_IN_FLIGHT.track_inprogress():
            await self._work_counted(plan, seats_to, queue)

    async def _work_counted(self, plan: Plan, seats_to: _Events | None, queue: _Events) -> None:
        """The panel; each seat's `SeatDone` goes to `seats_to` (None: nowhere),
        every other event to `queue`."""
        try:
            seating = plan.seating
            calls: list[CallResult] = []  # every call the reply names, committed before it ends
            # The seats' tasks are made before the first event is handed on,
            # so their calls go out before the stream's first chunk is
            # written, in the order `pace` says (the seat the ask waits for
            # first); each seat hands its own `SeatDone` on the moment it is
            # in (one wake-up, the consumer's, between a seat's end and its
            # section on the wire).
            order = pace.send_order(
                self.runtime.store,
                [s.model.alias for s in seating.seats],
                slowest_first=plan.merged or not plan.stream,
            )
            launched = {
                i: asyncio.create_task(self._seat_reported(plan, seating.seats[i], calls, seats_to))
                for i in order
            }
            seat_tasks = [launched[i] for i in range(len(seating.seats))]
            queue.put_nowait(
                PanelStarted(
                    plan.collection.name,
                    plan.shape,
                    tuple((s.label, s.model.alias) for s in seating.seats),
                    seating.left_off,
                    merged=plan.merged,
                )
            )
            try:
                seats = tuple(await asyncio.gather(*seat_tasks))  # in seat order
            except asyncio.CancelledError:
                # Stopped (a process closing): stop the seats too, and wait
                # while each writes its call-log row, so none is left
                # holding the store.
                for task in seat_tasks:
                    task.cancel()
                await asyncio.gather(*seat_tasks, return_exceptions=True)
                raise
            merged: Merged | None = None
            if plan.merged:
                merged = await self._merge(plan, seats, calls)
                queue.put_nowait(MergeDone(merged))
            reply = PanelReply(plan.collection.name, plan.shape, seats, seating.left_off, merged)
            await await_recorded(calls)
            queue.put_nowait(PanelDone(reply))
            # One turn of the loop first: the consumer writes the reply's
            # last bytes before the history's check (a cached read, a store
            # read when that is stale) takes the loop or the interpreter.
            await asyncio.sleep(0)
            await self._record_seating(plan)
        except BaseException as exc:  # hand the failure to the stream, never lose it
            queue.put_nowait(exc)
            if isinstance(exc, asyncio.CancelledError):
                raise

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

    async def _seat_reported(
        self,
        plan: Plan,
        planned: PlannedSeat,
        calls: list[CallResult],
        seats_to: _Events | None,
    ) -> Seat:
        """The seat, handed on by its own task the moment it is in."""
        seat = await self._seat(plan, planned, calls)
        if seats_to is not None:
            seats_to.put_nowait(SeatDone(seat))
        return seat

    async def _seat(self, plan: Plan, planned: PlannedSeat, calls: list[CallResult]) -> Seat:
        started = time.monotonic()
        context = CallContext(
            task=panel_task(plan.collection.name, plan.shape),
            collection=plan.collection.name,
            shape=plan.shape,
            seat=planned.label,
            ask_id=plan.ask_id,
            explorer=planned.explorer,
        )
        request, note = fitted_note(plan.request, planned.model)
        try:
            result = await self.caller.call(
                planned.model,
                request,
                kind="seat",
                timeout=plan.collection.seat_timeout,
                context=context,
                stream=True,
                recorded=False,
            )
            calls.append(result)
            pace.note(self.runtime.store, planned.model.alias, result.seconds)
        except Exception as exc:  # a bug in one seat's path must not sink the panel
            return Seat(
                "",
                planned.label,
                planned.model.alias,
                "error",
                time.monotonic() - started,
                error=f"{type(exc).__name__}: {exc}",
                explorer=planned.explorer,
                note=note,
            )
        return seat_of(result, planned, note)

    async def _merge(self, plan: Plan, seats: Sequence[Seat], calls: list[CallResult]) -> Merged:
        answered = [s for s in seats if s.status == "ok"]
        if not answered:
            return Merged(
                "",
                "",
                "error",
                0.0,
                error="no seat answered",
                note="No seat answered, so nothing was merged.",
            )
        anonymised = anonymise(answered, self.rng)
        request = merge_request(plan.request, anonymised)
        tried: list[str] = []
        for model in await self._merger_candidates(plan, seats):
            result = await self.caller.call(
                model,
                fitted(request, model),
                kind="merge",
                timeout=plan.collection.seat_timeout,
                context=CallContext(
                    task=panel_task(plan.collection.name, plan.shape, "merge"),
                    collection=plan.collection.name,
                    shape=plan.shape,
                    seat="merged",
                    ask_id=plan.ask_id,
                ),
                stream=True,
                recorded=False,
            )
            calls.append(result)
            if result.status == "ok":
                content, agreement = parse_merge(result.reply.text, anonymised.label_of_letter)
                if content:
                    return Merged(
                        result.call,
                        model.alias,
                        "ok",
                        result.seconds,
                        content,
                        usage=result.reply.usage,
                        agreement=agreement,
                    )
            status = "empty" if result.status == "ok" else result.status  # ok, but only the block
            tried.append(f"{model.alias}: {status}" + (f" ({result.error})" if result.error else ""))
        detail = "; ".join(tried) if tried else "no member could merge"
        return Merged(
            "",
            "",
            "error",
            0.0,
            error=detail,
            note=f"No merger answered ({detail}); the panel's answers follow.",
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
            return [model] if model is not None and not _unfit(model, plan.request) else []
        ranked = await decisions.pick_mergers(
            self.runtime.store, collection.name, plan.shape, collection.members
        )
        status = {s.alias: s.status for s in seats}
        fit = [plan.bench[a] for a in ranked if a in plan.bench and not _unfit(plan.bench[a], plan.request)]
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
    collection: registry.CollectionView
    bench: dict[str, registry.ModelView]
    request: Request
    shape: str
    seating: Seating
    merged: bool
    # The client reads the seats as they finish (else only the whole reply).
    stream: bool = False


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
    )


def _unfit(model: Any, request: Request) -> bool:
    return bool(fitted_unfit_reason(model, request, datetime.now(UTC)))
