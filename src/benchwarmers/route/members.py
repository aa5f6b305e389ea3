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
then best record on this collection and shape (`bench.decisions.rank`),
member order breaking ties, so a new collection with no record drives with
its first member. Ranking reads the record, so it is left until it is
needed: a conversation that keeps its member (most turns) never ranks.
"""

from __future__ import annotations

from collections.abc import AsyncGenerator
from dataclasses import dataclass
from datetime import UTC, datetime

from benchwarmers.bench import decisions
from benchwarmers.calls.tokens import context_needed, fitted
from benchwarmers.panel.seating import unfit_reason
from benchwarmers.store.db import Store
from benchwarmers.store.registry import CollectionView, ModelView
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
    collection: CollectionView, request: Request, bench: dict[str, ModelView]
) -> tuple[list[Candidate], tuple[LeftOff, ...]]:
    """The members that can take this request, in member order, and why the
    others cannot."""
    now = datetime.now(UTC)
    needs_tools = bool(request.tools) or any(m.tool_calls or m.tool_results for m in request.messages)
    fit: list[Candidate] = []
    left_off: list[LeftOff] = []
    for alias in collection.members:
        model = bench.get(alias)
        if model is None:
            left_off.append(LeftOff(alias, "not on the bench"))
            continue
        asked = fitted(request, model)
        why = unfit_reason(model, asked, context_needed(asked), now)
        if not why and needs_tools and not model.tools:
            why = "does not take tools"
        if why:
            left_off.append(LeftOff(alias, why))
        else:
            fit.append(Candidate(model, asked))
    return fit, tuple(left_off)


async def turn_order(
    store: Store, collection: CollectionView, shape: str, fit: list[Candidate], sticky: str | None
) -> AsyncGenerator[Candidate, None]:
    """The candidates in the order they are tried: the sticky one first,
    unranked; the rest ranked only when the turn gets that far."""
    rest = [c for c in fit if c.alias != sticky]
    if len(rest) < len(fit):
        yield next(c for c in fit if c.alias == sticky)
    if len(rest) > 1:
        rankings = await decisions.rank(store, collection.name, shape, [c.alias for c in rest])
        score = {r.alias: r.score for r in rankings}
        position = {alias: i for i, alias in enumerate(collection.members)}
        rest.sort(key=lambda c: (-round(score.get(c.alias, 0.0), 9), position[c.alias]))
    for candidate in rest:
        yield candidate
