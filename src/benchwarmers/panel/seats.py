"""A panel's seats asked: each seat's one call, the seat handed on.

A seat's call goes through the caller (`calls/caller.py`) with its place in
the log (collection, shape, seat label, ask id, key), its request fitted to
its model and asked as that model can give structured output
(`panel/structured.py`), and its reservation under the budgets, given back
when the call never started. A seat whose path raises is that seat's
`error`, never the panel's; an answer asked for as structured output is
checked (`panel/output_check.py`) and kept as written. The seat is handed
on the moment it is in, and its text as it is written when the ask wants
it; once a quorum or deadline has cut it from the reply (`muted`), nothing
of it is. A collection that keeps text (`keep_text`) has each seat's text
gathered as it is written (`written`, by call id): a seat stopped or cut
mid-answer keeps what it had written by then, which its call's end drops.
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable
from dataclasses import replace
from typing import TYPE_CHECKING

from benchwarmers.calls.caller import CallContext, Caller, CallResult
from benchwarmers.calls.log import panel_task
from benchwarmers.panel import pace
from benchwarmers.panel.output_check import output_check
from benchwarmers.panel.seating import PlannedSeat, fitted_note
from benchwarmers.panel.structured import as_asked
from benchwarmers.types import Seat, SeatText, Usage

if TYPE_CHECKING:
    from benchwarmers.panel.hand import Hand
    from benchwarmers.panel.plan import Plan


async def seat_reported(
    caller: Caller,
    plan: Plan,
    planned: PlannedSeat,
    call_id: str,
    calls: list[CallResult],
    hand: Hand,
    muted: set[str],
    written: dict[str, list[str]] | None = None,
) -> Seat:
    """The seat, handed on the moment it is in (and its text as it is
    written, when the ask wants it); nothing of it once it is `muted`
    (cut from the reply, finishing in the background). `written`: where
    its text is gathered as it comes, for a collection that keeps text
    (None: nothing is, the usual ask pays for none)."""
    on_text: Callable[[str], Awaitable[None] | None] | None = None
    label = planned.label
    if plan.seat_text:
        alias = planned.model.alias
        pieces = None if written is None else written.setdefault(call_id, [])

        def on_text(text: str) -> Awaitable[None] | None:
            if pieces is not None:
                pieces.append(text)
            if label in muted:
                return None
            return hand.text(SeatText(label, alias, call_id, text))

    elif written is not None:
        on_text = written.setdefault(call_id, []).append

    seat = await _seat(caller, plan, planned, call_id, calls, on_text)
    if label not in muted:
        hand.seat(seat)
    return seat


async def _seat(
    caller: Caller,
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
        blind=plan.blind,
    )
    # Its own thread only when the ask carried threads (a follow-up): the usual ask reads `request`.
    asked = plan.request if plan.threads is None else plan.request_for(planned.model.alias)
    request, note = fitted_note(asked, planned.model)
    request, prompted = as_asked(request, planned.model)
    if prompted:  # rare: a generator joining the two was 15 bytecodes a seat on every ask
        note = f"{note}; {prompted}" if note else prompted
    hold = plan.holds.get(planned.label)
    if hold is None and plan.unbudgeted:  # the plan found no budget: none to read again per seat
        model = planned.model
        hold = caller.runtime.spending.unbudgeted(
            collection=plan.collection.name,
            price_in=getattr(model, "price_in", None),
            price_out=getattr(model, "price_out", None),
        )
    try:
        result = await caller.call(
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
        pace.note(caller.runtime.store, planned.model.alias, result.seconds)
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
            await caller.runtime.spending.settle(hold, Usage())
    seat = seat_of(result, planned, note)
    output = plan.request.output
    if output is None or seat.status != "ok":
        return seat
    # Its content stays as written (a live stream has shown it so already).
    return replace(seat, output_check=output_check(seat.content, output))


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
        # How its answer ended; a seat that did not answer has none to tell.
        finish=result.reply.finish if result.answered else "stop",
    )
