"""Who sits on a panel for one request, and why the others do not.

Who sits by record and who explores is the bench's `bench.decider.Decision`
(one seating flow for the server and the simulation: `bench/decider.py`);
this module fits that decision to one request, a pure function of the
collection, the bench, the decision and the request, so every rule is
testable without a server and every member left off carries a reason the
client sees in `bench.leftOff`:

* the decision's record seats sit in its order (members, or under
  promotion auto a non-member it promoted or stood in for a member held
  out), unless their status keeps them off (onboarding, unavailable,
  resting, retired) or the request does not fit them (no image reader for
  an image, a vision model for plain text, a context window too small for
  the prompt and the reply room it can give, structured output asked of a
  model known not to answer in JSON, `panel/structured.py`: a `max_tokens` above a
  member's output limit is lowered for that member, `calls.tokens.fitted`,
  not a reason to leave it off);
* members the decision left off (held out: failing, resting...; ranked
  below the seat cap; their seat given to another) say why;
* `image` models make images and never sit on a text panel;
* `--with` extras sit beside them (an ad hoc model may: it was named);
* explorer seats go down the decision's explorers to the first models that
  fit, never to ad hoc, retired, resting, unavailable or image models;
* `seat_exactly` seats exactly the aliases named, in that order (a
  follow-up turn to the same seats, or to one chosen seat): no cap, no
  ranking, no explorer, each still left off when it cannot answer.

Without a decision (`decision=None`), every member sits in member order.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, Protocol

from benchwarmers.bench.decider import GAVE_SEAT, Decision
from benchwarmers.calls.tokens import context_needed, fitted
from benchwarmers.errors import NotFound
from benchwarmers.panel.structured import no_output_reason
from benchwarmers.store.times import utc
from benchwarmers.types import LeftOff, Request

SEAT_LABEL = "Seat {n}"
# The labels of the first seats, made once: a `format` a seat on every ask otherwise.
_LABELS = tuple(SEAT_LABEL.format(n=n) for n in range(1, 33))


def _label(n: int) -> str:
    """The label of the `n`th seat (from 1)."""
    return _LABELS[n - 1] if n <= len(_LABELS) else SEAT_LABEL.format(n=n)


class SeatableModel(Protocol):
    """What seating reads of a registry model view (read-only)."""

    @property
    def alias(self) -> str: ...
    @property
    def role(self) -> str: ...
    @property
    def status(self) -> str: ...
    @property
    def ad_hoc(self) -> bool: ...
    @property
    def context_window(self) -> int | None: ...
    @property
    def output_limit(self) -> int | None: ...
    @property
    def vision(self) -> bool: ...
    @property
    def resting_until(self) -> datetime | None: ...
    @property
    def status_reason(self) -> str: ...


class SeatableCollection(Protocol):
    @property
    def name(self) -> str: ...
    @property
    def members(self) -> Sequence[str]: ...  # aliases, in member order
    @property
    def seats(self) -> int: ...
    @property
    def explorer_seats(self) -> int: ...


@dataclass(frozen=True, slots=True)
class PlannedSeat:
    label: str
    model: Any  # a SeatableModel view
    explorer: bool = False


@dataclass(frozen=True, slots=True)
class Seating:
    seats: tuple[PlannedSeat, ...]
    left_off: tuple[LeftOff, ...]


def seat_panel(
    collection: SeatableCollection,
    request: Request,
    *,
    bench: Mapping[str, SeatableModel] | Iterable[SeatableModel],
    extras: Sequence[str] = (),
    decision: Decision | None = None,
    now: datetime | None = None,
) -> Seating:
    now = now or datetime.now(UTC)
    # The bench by alias as the registry keeps it (the engine's), or a list of models.
    by_alias = bench if isinstance(bench, Mapping) else {m.alias: m for m in bench}
    if decision is None:
        decision = Decision(record=tuple(collection.members), explorers=(), left_off=())
    left_off = [_left_off(by_alias.get(alias), alias, why, request, now) for alias, why in decision.left_off]
    eligible: list[SeatableModel] = []
    for model in (by_alias[alias] for alias in decision.record if alias in by_alias):
        reason = fitted_unfit_reason(model, request, now)
        if reason:
            left_off.append(LeftOff(model.alias, reason))
        else:
            eligible.append(model)

    seated: list[PlannedSeat] = []
    taken = {*decision.record, *(alias for alias, _ in decision.left_off)}
    for model in eligible:
        seated.append(PlannedSeat(_label(len(seated) + 1), model))
    for alias in dict.fromkeys(extras):
        if alias in taken:
            continue
        if alias not in by_alias:
            raise NotFound(f"no model {alias!r} on the bench to seat beside the collection")
        model = by_alias[alias]
        taken.add(alias)
        reason = fitted_unfit_reason(model, request, now)
        if reason:
            left_off.append(LeftOff(alias, reason))
        else:
            seated.append(PlannedSeat(_label(len(seated) + 1), model))

    if collection.explorer_seats > 0:
        explorers = [
            by_alias[alias]
            for alias in dict.fromkeys(decision.explorers)
            if alias in by_alias
            and alias not in taken
            and _may_explore(by_alias[alias])
            and not fitted_unfit_reason(by_alias[alias], request, now)
        ]
        for model in explorers[: collection.explorer_seats]:
            seated.append(PlannedSeat(_label(len(seated) + 1), model, explorer=True))
    return Seating(tuple(seated), tuple(left_off))


def _left_off(model: SeatableModel | None, alias: str, why: str, request: Request, now: datetime) -> LeftOff:
    """A member the decision left off: this request's own reason when it has
    one (it says more: until when it rests, which images), keeping who took its seat."""
    unfit = fitted_unfit_reason(model, request, now) if model is not None else ""
    if not unfit:
        return LeftOff(alias, why)
    given = why.find(GAVE_SEAT)
    return LeftOff(alias, unfit + (why[given:] if given >= 0 else ""))


def seat_exactly(
    aliases: Sequence[str],
    request: Request,
    by_alias: Mapping[str, SeatableModel],
    now: datetime | None = None,
) -> Seating:
    """Exactly these aliases, in this order, each that can answer (a
    follow-up turn to the same seats, or to one chosen seat). One taken off
    the bench since the turn before is left off, saying so, and the others
    answer; a 404 only when none of them is on the bench."""
    now = now or datetime.now(UTC)
    seated: list[PlannedSeat] = []
    left_off: list[LeftOff] = []
    named = tuple(dict.fromkeys(aliases))
    if named and not any(alias in by_alias for alias in named):
        raise NotFound(f"no model {named[0]!r} on the bench to seat")
    for alias in named:
        model = by_alias.get(alias)
        if model is None:
            left_off.append(LeftOff(alias, "no longer on the bench"))
            continue
        reason = fitted_unfit_reason(model, request, now)
        if reason:
            left_off.append(LeftOff(alias, reason))
        else:
            seated.append(PlannedSeat(_label(len(seated) + 1), model))
    return Seating(tuple(seated), tuple(left_off))


def fitted_unfit_reason(model: SeatableModel, request: Request, now: datetime) -> str:
    """Why this model cannot answer this request, asked with `max_tokens`
    fitted to it; "" when it can."""
    asked = fitted(request, model)
    return unfit_reason(model, asked, context_needed(asked), now)


def fitted_note(request: Request, model: SeatableModel) -> tuple[Request, str]:
    """The request as this model is asked it, and what `bench` says when
    its `max_tokens` was lowered ("" when not)."""
    asked = fitted(request, model)
    before, after = request.sampling.max_tokens, asked.sampling.max_tokens
    if before == after:
        return request, ""
    why = "its output limit" if after == model.output_limit else "what its context window leaves"
    return asked, f"max_tokens {before} lowered to {after}, {why}"


def unfit_reason(model: SeatableModel, request: Request, needed: int, now: datetime) -> str:
    """Why this model cannot answer this request now; "" when it can."""
    if model.role == "image":
        return "image model: makes images, never seated on a panel"
    if model.status == "retired":
        return "retired" + (f": {model.status_reason}" if model.status_reason else "")
    if model.status == "resting" and (model.resting_until is None or utc(model.resting_until) > now):
        until = (
            f" until {utc(model.resting_until).isoformat(timespec='seconds')}" if model.resting_until else ""
        )
        return f"resting{until} (rate limited)"
    if model.status == "unavailable":
        return "unavailable: did not answer its last probe"
    if model.status == "onboarding":
        return "onboarding: not yet on the bench"
    reads_images = model.role == "vision" or model.vision
    images = request.has_images
    if images and not reads_images:
        return "cannot read images, and the request carries one"
    if not images and model.role == "vision":
        return "vision model, seated only for requests with images"
    if model.context_window and needed > model.context_window:
        return f"context window {model.context_window} < {needed} tokens needed"
    return no_output_reason(model, request)


def _may_explore(model: SeatableModel) -> bool:
    """Explorer seats are the bench's own choice: never a model the user
    keeps out of it (ad hoc) or one that is not plainly available."""
    return not model.ad_hoc and model.status == "available"
