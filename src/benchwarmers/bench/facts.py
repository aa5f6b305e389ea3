"""What deciding reads of each bench entry, and why one may not sit.

A few columns of every model and its endpoint (`Facts`), read for the
whole bench at once and cached (`FACTS`), because every seating, rank,
merge and route turn reads them and the bench changes far less often than
that. Beside them the rules that hold a model out on those facts alone
(`why_held_out`: retired, resting, image, failing, ...; `went_paid` on a
`free_only` collection), so the ask's hot path (`decisions.seat_plan` on a
panel where every member sits) needs nothing but this module's cache.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import select

from benchwarmers.bench.revive import FAILING
from benchwarmers.calls.health import FAILING_AFTER
from benchwarmers.store.changes import Cached
from benchwarmers.store.db import Store
from benchwarmers.store.schema import Endpoint, Model
from benchwarmers.store.times import utc

# What ranking reads, each for the whole bench, kept until a write to its tables commits in
# this process (`store/changes.py`) or DEFAULT_TTL seconds pass (another process's write):
# ranking runs on every seat-by-record ask, merge and new route conversation, and these
# change far less often than that. What is left per rank is arithmetic over a few rows per
# model, however long the call log.
FACTS: Cached[dict[str, Facts]] = Cached(("models", "endpoints"))


@dataclass(frozen=True, slots=True)
class Facts:
    """What deciding reads of a bench entry."""

    alias: str
    endpoint: str
    served: str
    role: str
    status: str
    ad_hoc: bool
    vision: bool
    tools: bool
    price_in: float | None
    price_out: float | None
    resting_until: datetime | None
    unreachable: bool  # the endpoint's last call could not connect (`calls/reach.py`)
    failures: int  # calls in a row that failed (`calls/health.py`)
    failing_since: datetime | None
    created_at: datetime
    went_paid_at: datetime | None = None  # free before, priced by the catalog since (store/prices.py)

    @property
    def priced(self) -> bool:
        """Costs something (an unknown price is not taken for one)."""
        return bool(self.price_in) or bool(self.price_out)


async def facts_of(store: Store, candidates: Sequence[str] | None) -> dict[str, Facts]:
    rows = await FACTS.get(store, lambda: load_facts(store))
    order = list(candidates) if candidates is not None else sorted(rows)
    return {a: rows[a] for a in dict.fromkeys(order) if a in rows}


async def load_facts(store: Store) -> dict[str, Facts]:
    """The columns deciding reads, not whole models: loading 200 ORM models
    (every column, the session's identity map) was most of a refresh."""
    async with store.read() as session:
        query = select(
            Model.alias,
            Endpoint.name,
            Model.served,
            Model.role,
            Model.status,
            Model.ad_hoc,
            Model.vision,
            Model.tools,
            Model.price_in,
            Model.price_out,
            Model.resting_until,
            Endpoint.unreachable_since,
            Model.failures,
            Model.failing_since,
            Model.created_at,
            Model.went_paid_at,
        ).join(Endpoint, Endpoint.id == Model.endpoint_id)
        rows: list[tuple[Any, ...]] = [tuple(row) for row in (await session.execute(query)).all()]
    # In `Facts`' order: the first eleven as read, then whether the endpoint is unreachable.
    return {
        r[0]: Facts(
            r[0],
            r[1],
            r[2],
            r[3],
            r[4],
            r[5],
            r[6],
            r[7],
            r[8],
            r[9],
            r[10],
            r[11] is not None,
            r[12] or 0,
            r[13],
            r[14],
            None if r[15] is None else utc(r[15]),
        )
        for r in rows
    }


def _ineligible(model: Facts, shape: str, now: datetime) -> str:
    """Why this model cannot be seated by the bench's choice; "" when it can."""
    if model.role == "image":
        return "image model"
    if model.status == "retired":
        return "retired"
    if model.status == "resting" or (model.resting_until is not None and utc(model.resting_until) > now):
        return "resting (rate limited)"
    if model.status in ("unavailable", "onboarding"):
        return model.status
    if model.role == "vision" and shape != "vision":
        return "vision model, seated only for images"
    if shape == "vision" and not (model.vision or model.role == "vision"):
        return "cannot read images"
    return ""


def why_held_out(model: Facts, shape: str, now: datetime) -> str:
    """Why the decider seats this model nowhere now ("" when it may sit):
    `_ineligible`, or its calls failing until a probe answers."""
    why = _ineligible(model, shape, now)
    if why or model.failures < FAILING_AFTER:
        return why
    since = f" since {utc(model.failing_since).isoformat(timespec='seconds')}" if model.failing_since else ""
    return (
        f"{FAILING} its last {model.failures} calls failed (no connection, 5xx or timeout){since}; "
        "held out until a probe answers"
    )


def went_paid(model: Facts, free_only: bool) -> str:
    """Why a `free_only` collection seats this model nowhere (no seat, no
    merge, no route turn): it was free, the catalog found it priced, and the
    user has not accepted the price."""
    if not free_only or model.went_paid_at is None:
        return ""
    return (
        f"went paid on {model.went_paid_at.date().isoformat()} (${model.price_in or 0:g} in / "
        f"${model.price_out or 0:g} out per million tokens) and this collection is free only; "
        f"`benchwarmers model set {model.alias} --paid-ok` seats it again"
    )
