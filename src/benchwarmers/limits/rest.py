"""Resting models: a 429 benches a model until its limit resets.

A resting model is `status = "resting"` with `resting_until` on its row, so
every server sharing the store, and the seating code, see it. A rest ends by
itself: `is_resting` treats a rest whose time has passed as over (seating
needs no clean-up to seat it again), and `wake_rested` writes the expired
rests back to `available`, which the limiter schedules for the moment each
rest ends and the quotas view runs whenever it is read.

Only an `available` (or already resting) model is rested: a model being
onboarded or retired keeps its status, which says more. A model that a rate
limit stopped before it answered its onboarding probes rests too, but its
rest is ended by its onboarding item running again (`bench/onboarding.py`),
not woken here: it has not answered yet, so it must not come back
`available` on its own.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Protocol

from sqlalchemy import exists, select, update

from benchwarmers.store.db import Store
from benchwarmers.store.schema import Endpoint, Model, OnboardingItem
from benchwarmers.store.times import utc

RESTABLE = ("available", "resting")


class HasRest(Protocol):
    status: str
    resting_until: datetime | None


# Kept only for limits/enforce.py's import until it imports `store.times.utc` itself.
as_utc = utc


def is_resting(model: HasRest, now: datetime | None = None) -> bool:
    """Whether a model is resting right now (an expired rest is not)."""
    if model.status != "resting":
        return False
    if model.resting_until is None:
        return True
    return utc(model.resting_until) > (now or datetime.now(UTC))


async def rest_model(store: Store, endpoint: str, served: str, until: datetime, reason: str) -> bool:
    """Rest a model until `until` (a later rest wins over an earlier one).
    True when a model row was rested."""
    now = datetime.now(UTC)
    async with store.write() as session:
        model = await session.scalar(
            select(Model).join(Endpoint).where(Endpoint.name == endpoint, Model.served == served)
        )
        if model is None or model.status not in RESTABLE:
            return False
        if model.status == "resting" and is_resting(model, now) and model.resting_until is not None:
            until = max(until, utc(model.resting_until))
        model.status = "resting"
        model.resting_until = until
        model.status_reason = reason
        model.status_changed_at = now
        return True


async def wake_rested(store: Store, now: datetime | None = None) -> int:
    """Return every model whose rest is over to `available`, but those
    waiting to be onboarded again; how many."""
    now = now or datetime.now(UTC)
    onboarding = exists().where(
        OnboardingItem.alias == Model.alias, OnboardingItem.state.in_(("queued", "running"))
    )
    async with store.write() as session:
        result = await session.execute(
            update(Model)
            .where(Model.status == "resting", Model.resting_until <= now, ~onboarding)
            .values(status="available", resting_until=None, status_reason="", status_changed_at=now)
        )
        return int(result.rowcount or 0)  # type: ignore[attr-defined]
