"""A panel's plan: everything it needs, read before its first event.

All of it is read before the panel starts, so a request it cannot answer
fails before any event, and a route answers with a status of its own (an
unknown collection or alias 404, tools 400, no member able to answer 422,
no budget to pay a seat 429) rather than a stream that breaks. The plan
holds the collection and the bench as read, the seats (the bench's
decision, `bench/decider.py`, or exactly those a follow-up names), each
seat's reservation under the budgets (`limits/spending.py`), whether the
panel merges, when it may answer without its slower seats
(`panel/quorum.py`), and the ask's id. A follow-up whose seats each
continue their own thread (`Ask.threads`) keeps each seat's own request
(`Plan.request_for`); `request`, the shared history, is what the shape,
the budgets' estimate, the merger and the judge read.
"""

from __future__ import annotations

import random
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING

from benchwarmers.bench import decisions, revive
from benchwarmers.bench.seated import note_seated
from benchwarmers.calls.call_ids import new_ask_id
from benchwarmers.calls.tokens import fitted, prompt_tokens, reply_tokens
from benchwarmers.errors import UserError
from benchwarmers.limits.spending import Hold
from benchwarmers.panel import quorum
from benchwarmers.panel.seating import Seating, seat_exactly, seat_panel
from benchwarmers.panel.shapes import shape_of
from benchwarmers.panel.structured import for_seating
from benchwarmers.store.collections import get_collection
from benchwarmers.store.models import models_by_alias
from benchwarmers.store.views import CollectionView, ModelView
from benchwarmers.types import Ask, Request

if TYPE_CHECKING:
    from benchwarmers.runtime import Runtime

# Explorer candidates asked for beyond the seats, in case the first do not fit.
EXPLORER_SPARES = 5


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
    # No budget applied when the plan read them: its seats reserve nothing (`Spending.unbudgeted`).
    unbudgeted: bool = False
    # Each seat's own request, by alias, when the ask carried threads (`Ask.threads`);
    # None (the usual ask): every seat is asked `request`.
    threads: Mapping[str, Request] | None = None
    # The ask's own blindness, on each call's log row (`Ask.blind`).
    blind: bool | None = None

    def request_for(self, alias: str) -> Request:
        """What the seat of this model is asked: its own thread's request
        (under the collection's system prompt, as `request`), else `request`."""
        threads = self.threads
        return self.request if threads is None else threads.get(alias, self.request)


async def plan_panel(
    runtime: Runtime,
    ask: Ask,
    collection: CollectionView | None = None,
    *,
    key: str = "",
    rng: random.Random | None = None,
) -> Plan:
    """Everything the panel needs, read before it starts. `collection`:
    the view the caller has just checked (`Panels.collection`), not
    looked up again; `key`: the gateway key that asks ("" for the owner),
    logged on each of its calls; `rng`: what the seating draws from (the engine's)."""
    if ask.request.tools:
        raise UserError(
            "a panel answers with text and cannot run tools; use route mode: bench/<collection>:route"
        )
    store = runtime.store
    # One after the other: both are read from memory on almost every ask,
    # where a gather would cost a task and a turn of the loop for each.
    if collection is None:
        collection = await get_collection(store, ask.collection)
    _check_quorum(ask, collection)
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
            rng=rng,
        )
        revive.probe_failing(runtime, decision.left_off)
        seating = seat_panel(collection, judged, bench=bench, extras=ask.extra_aliases, decision=decision)
        note_seated(store, collection.name, shape, [s.model.alias for s in seating.seats])
    if not seating.seats:
        reasons = "; ".join(f"{m.alias}: {m.reason}" for m in seating.left_off) or "it has no members"
        raise UserError(
            f"no member of bench/{collection.name} can answer this request ({reasons})", status=422
        )
    holds, seating = await _budgeted(runtime, seating, request, collection)
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
        unbudgeted=holds is _UNBUDGETED,
        threads=_threads(ask, request) if ask.threads else None,
        blind=ask.blind,
    )


def _threads(ask: Ask, request: Request) -> dict[str, Request]:
    """Each thread's request: the shared one (system prompts, sampling, output
    format) with that seat's own turns as its messages."""
    return {alias: replace(request, messages=messages) for alias, messages in ask.threads}


def most_seats(ask: Ask, collection: CollectionView) -> int:
    """The most seats this ask could have: the seats named (a follow-up),
    else the collection's record seats, its explorer seats and the extras."""
    if ask.only_aliases:
        return len(dict.fromkeys(ask.only_aliases))
    members = len(collection.members)
    record = min(collection.seats, members) if collection.seats > 0 else members
    return record + collection.explorer_seats + len(dict.fromkeys(ask.extra_aliases))


def _check_quorum(ask: Ask, collection: CollectionView) -> None:
    """An ask's own quorum above every seat its collection could give it
    could never be met: the caller's mistake, a 400 before any seat is
    asked. (One as large as the seats that sit this time, some members
    left off, waits for every seat; the collection's own quorum, set
    before its members changed, does too.)"""
    most = most_seats(ask, collection)
    if ask.quorum > most:
        raise UserError(
            f"quorum {ask.quorum} is more than the {most} seat{'s' if most != 1 else ''}"
            f" bench/{collection.name} can seat"
        )


# `_budgeted`'s holds when no budget applies (never written to).
_UNBUDGETED: dict[str, Hold] = {}


async def _budgeted(
    runtime: Runtime, seating: Seating, request: Request, collection: CollectionView
) -> tuple[dict[str, Hold], Seating]:
    """The seats the budgets can pay for, each with its reservation (by
    label; `limits/spending.py`), cheapest first or by record as the
    collection says; those they cannot are left off, "budget: ...".
    None paid for: the budget's 429. No budget applies (the usual ask): as seated."""
    spending = runtime.spending
    applying = await spending.applying(collection.name)
    if not applying:
        return _UNBUDGETED, seating
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
