"""Which members may drive a route turn, in which order, with what request.

The rules are the panel's (`panel.seating.unfit_reason`: status, role,
images, context window) plus one of route mode's own: a turn that carries
tools, or tool calls in its history, needs a member that takes tools.

An agent asks for room to write (Claude Code sends `max_tokens` 32000 on
every turn), which many good members cannot give. Rather than leaving those
off, or sending a limit their provider rejects, each member is asked with
the agent's limit lowered to what it can write (`calls.tokens.fitted`, as
on a panel). A member with no room at all left is left off.

Order: the conversation's sticky member first, when it can take the turn;
then best record on this collection and shape (`bench.decisions.rank`, the
Decider's ranking: a member whose calls are failing goes last),
member order breaking ties, so a new collection with no record drives with
its first member. Ranking reads the record, so it is left until it is
needed: a conversation that keeps its member (most turns) never ranks.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime

from benchwarmers.bench import decisions
from benchwarmers.calls.tokens import context_needed, fitted
from benchwarmers.panel.seating import unfit_reason
from benchwarmers.panel.structured import as_asked, for_seating
from benchwarmers.store.db import Store
from benchwarmers.store.views import CollectionView, ModelView
from benchwarmers.types import LeftOff, Request


@dataclass(frozen=True, slots=True)
class Candidate:
    """A member that may drive this turn, and the request it would get."""

    model: ModelView
    request: Request

    @property
    def alias(self) -> str:
        return self.model.alias


def route_fit(
    collection: CollectionView, request: Request, bench: Mapping[str, ModelView]
) -> tuple[list[Candidate], tuple[LeftOff, ...]]:
    """The members that can take this request, in member order, and why the
    others cannot."""
    now = datetime.now(UTC)
    judged = for_seating(request, collection.output_fallback)
    needs_tools = bool(request.tools) or any(m.tool_calls or m.tool_results for m in request.messages)
    fit: list[Candidate] = []
    left_off: list[LeftOff] = []
    for alias in collection.members:
        model = bench.get(alias)
        if model is None:
            left_off.append(LeftOff(alias, "not on the bench"))
            continue
        asked = fitted(judged, model)
        why = unfit_reason(model, asked, context_needed(asked), now)
        if not why and needs_tools and not model.tools:
            why = "does not take tools"
        if why:
            left_off.append(LeftOff(alias, why))
        else:  # the structured output passed through, natively or in its prompt
            fit.append(Candidate(model, as_asked(fitted(request, model), model)[0]))
    return fit, tuple(left_off)


class TurnOrder:
    """The candidates in the order they are tried: the sticky one first,
    unranked; the rest ranked only when the turn gets that far.

        order = TurnOrder(store, collection, shape, fit, sticky)
        while (candidate := await order.next()) is not None: ...

    An object, not an async generator: most turns stop at the first
    candidate, and a generator left there must be closed (its `aclose`, or
    a finalizer task on the loop), which cost every turn more than the
    ordering itself."""

    def __init__(
        self, store: Store, collection: CollectionView, shape: str, fit: list[Candidate], sticky: str | None
    ) -> None:
        self._store = store
        self._collection = collection
        self._shape = shape
        self._queue = [c for c in fit if c.alias == sticky]
        self._unranked = [c for c in fit if c.alias != sticky]

    async def next(self) -> Candidate | None:
        """The next candidate to try, or None when every one was tried."""
        if not self._queue and self._unranked:
            rest, self._unranked = self._unranked, []
            self._queue = await self._ranked(rest) if len(rest) > 1 else rest
        return self._queue.pop(0) if self._queue else None

    async def _ranked(self, rest: list[Candidate]) -> list[Candidate]:
        """Best record on this collection and shape first, member order breaking ties."""
        collection = self._collection
        rankings = await decisions.rank(self._store, collection.name, self._shape, [c.alias for c in rest])
        score = {r.alias: r.score for r in rankings}
        # Held out by the decider (failing: its calls fail in a row) goes last: still a failover.
        held = {r.alias for r in rankings if not r.eligible}
        position = {alias: i for i, alias in enumerate(collection.members)}
        return sorted(
            rest, key=lambda c: (c.alias in held, -round(score.get(c.alias, 0.0), 9), position[c.alias])
        )
