"""The merge asked: the merger's answer streamed, its report beside it.

The merger's answer is handed on as it is written (`MergeText`), while its
structured report (`panel/report.py`) is asked for beside it, in a task of
its own: two calls at once, so the report costs the reply no wait beyond
the answer's own (most often). The candidates are the collection's merger
alone when it names one; else its members by record on this shape, those
that did not sit on this panel first (`panel/merge.py` says why), none
whose seat just failed. A merger that fails, or whose answer is not valid
against the output asked, hands the answer to the next candidate, as one
whose report is not valid hands the report on. Each is a call of kind
merge, its seat "merged" or "report" in the log. Asked for structured
output, a streamed merge hands the answer on only once it is checked, in
one piece and out of any fence: a stream cannot take back text, and its
client parses what it got as one JSON value. When no merger's answer is
valid, the answer is a seat's that is (the first by record, as mergers are
picked), its call and alias in the merge's place and the note saying so;
the panel's text stands in only when no seat's answer is valid either.
"""

from __future__ import annotations

import asyncio
import random
from collections.abc import Sequence
from dataclasses import replace
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from benchwarmers.bench import decisions
from benchwarmers.calls.call_ids import new_call_id
from benchwarmers.calls.caller import CallContext, Caller, CallResult, cut, cut_reason
from benchwarmers.calls.cost import Total
from benchwarmers.calls.log import panel_task
from benchwarmers.calls.tokens import fitted
from benchwarmers.panel.merge import Anonymised, anonymise, merge_request
from benchwarmers.panel.output_check import output_check, unwrapped
from benchwarmers.panel.report import agreement_of, read_report, relabel, report_request
from benchwarmers.panel.seating import fitted_unfit_reason
from benchwarmers.panel.structured import as_asked, for_seating
from benchwarmers.store.db import Store
from benchwarmers.types import Merged, MergeReport, MergeText, OutputCheck, Request, Seat

if TYPE_CHECKING:
    from benchwarmers.panel.hand import Hand
    from benchwarmers.panel.plan import Plan

# The seat label of the merger's report call in the call log (kind merge).
REPORT_SEAT = "report"


async def merge(
    caller: Caller,
    plan: Plan,
    seats: Sequence[Seat],
    calls: list[CallResult],
    hand: Hand,
    rng: random.Random | None,
) -> Merged:
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
    anonymised = anonymise(answered, rng)
    request = merge_request(plan.request, anonymised)
    output = plan.request.output
    merging = len(calls)  # the merge's own calls (answers and reports) follow: its cost
    candidates = await _merger_candidates(caller.runtime.store, plan, seats)
    report = asyncio.create_task(_report(caller, plan, candidates, anonymised, calls))
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

            result = await caller.call(
                model,
                as_asked(fitted(request, model), model)[0],
                kind="merge",
                timeout=plan.collection.seat_timeout,
                context=_merge_context(plan),
                stream=True,
                recorded=False,
                call_id=call_id,
                # Structured output: held until checked (below), as a stream cannot take
                # back an invalid answer, nor the fence around a valid one.
                on_text=on_text if plan.stream and output is None else None,
            )
            calls.append(result)
            wrote = wrote or bool(pieces)
            content = result.reply.text.strip() if result.status == "ok" else ""
            if content and output is not None:
                check = output_check(content, output)
                if not check.valid:
                    tried.append(f"{model.alias}: not valid against the output asked ({check.error})")
                    continue
                if plan.stream:  # the checked answer, out of its fence: the stream's one JSON value
                    hand.merge_text(MergeText(model.alias, call_id, unwrapped(content)))
                merged = Merged(
                    result.call,
                    model.alias,
                    "ok",
                    result.seconds,
                    unwrapped(content),
                    usage=result.reply.usage,
                    note=_fell_back(tried),
                    output_check=check,
                    finish=result.reply.finish,
                )
                break
            if content:
                merged = Merged(
                    result.call,
                    model.alias,
                    "ok",
                    result.seconds,
                    content,
                    usage=result.reply.usage,
                    finish=result.reply.finish,
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
        stand_in = None if output is None else await _best_valid_seat(caller.runtime.store, plan, seats)
        if stand_in is not None:
            content = unwrapped(stand_in.content)
            if plan.stream:  # out as a checked merge goes: the stream's one JSON value
                hand.merge_text(MergeText(stand_in.alias, stand_in.call, content))
            return Merged(
                stand_in.call,
                stand_in.alias,
                "ok",
                0.0,
                content,
                note=(
                    f"No merger's answer was valid ({detail}); this is {stand_in.seat}'s answer instead"
                    f" ({stand_in.alias}, call {stand_in.call}): of the seats whose answers were valid"
                    " against the output asked, the first by record."
                ),
                output_check=stand_in.output_check,
                finish=stand_in.finish,
                cost_usd=cost,  # the mergers tried; the seat's own call is counted as the seat's
            )
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
    caller: Caller, plan: Plan, candidates: Sequence[Any], anonymised: Anonymised, calls: list[CallResult]
) -> MergeReport | None:
    """The structured report (`panel/report.py`), from the first
    candidate whose reply is valid against its schema; None when none is."""
    request = report_request(plan.request, anonymised)
    try:
        for model in candidates:
            result = await caller.call(
                model,
                as_asked(fitted(request, model), model)[0],
                kind="merge",
                timeout=plan.collection.seat_timeout,
                context=_merge_context(plan, REPORT_SEAT),
                stream=True,
                recorded=False,
            )
            calls.append(result)
            found = read_report(result.reply.text) if result.status == "ok" else None
            if found is not None:
                return relabel(found, anonymised.label_of_letter)
            if result.status == "cancelled":
                return None
    except asyncio.CancelledError as exc:
        if cut_reason(exc) is None:
            raise
        return None  # cut before its call began (no merger answered)
    return None


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
        blind=plan.blind,
    )


async def _merger_candidates(store: Store, plan: Plan, seats: Sequence[Seat]) -> list[Any]:
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
    ranked = await decisions.pick_mergers(store, collection.name, plan.shape, collection.members)
    status = {s.alias: s.status for s in seats}
    judged = for_seating(plan.request, collection.output_fallback)
    fit = [plan.bench[a] for a in ranked if a in plan.bench and not _unfit(plan.bench[a], judged)]
    outside = [m for m in fit if m.alias not in status]
    answered = [m for m in fit if status.get(m.alias) == "ok"]
    return outside + answered


async def _best_valid_seat(store: Store, plan: Plan, seats: Sequence[Seat]) -> Seat | None:
    """The seat whose answer stands in when no merger's is valid against
    the output asked: of the seats whose answers are, the first by record
    on this shape, as mergers are picked (seat order breaks ties); None
    when no seat's answer is valid."""
    valid = [s for s in seats if s.status == "ok" and s.output_check is not None and s.output_check.valid]
    if len(valid) < 2:
        return valid[0] if valid else None
    ranked = await decisions.rank_aliases(store, plan.collection.name, plan.shape, [s.alias for s in valid])
    order = {alias: n for n, alias in enumerate(ranked)}
    return min(valid, key=lambda s: order.get(s.alias, len(order)))


def _fell_back(tried: list[str]) -> str:
    """A merge that came after others failed says whose and why."""
    return f"Merged after {'; '.join(tried)}." if tried else ""


def _known(costs: Sequence[float | None]) -> float | None:
    """The costs' sum, or None when any was unknown (a merge's several tries)."""
    total = Total.of(costs)
    return total.usd if total.complete else None


def _unfit(model: Any, request: Request) -> bool:
    return bool(fitted_unfit_reason(model, request, datetime.now(UTC)))
