"""Whether a model's calls are failing: the dead are not seated.

A model whose endpoint is down, that answers 5xx, or that does not answer
in time is a seat wasted on every ask, and its failures are no verdict on
its answers (rating never sees them). So each call's end tells this module
how it went: a failure by connection, a 5xx or a timeout adds one to the
model's `failures` (and sets `failing_since` at the first); an answer
(ok or empty) clears both. A 429, our own limiter's refusal, a 4xx (the
request's fault, not the model's) and a call the caller stopped waiting
for say nothing either way.

Seating (`bench/decider.py`, through `bench/facts.py`) holds a model out
of every seat once `failures` reaches `FAILING_AFTER`, and
`bench/revive.py` probes it at once (not at the daily probe): the probe's
own call, ending here, clears it when it answers. Only changes are written
(as `reach.py` does for endpoints): a failing streak writes each failure
until the threshold, then nothing until it ends, and a healthy model costs
no write per call.
"""

from __future__ import annotations

import logging
import weakref
from datetime import UTC, datetime

from sqlalchemy import func, update

from benchwarmers.errors import ProviderBusy, ProviderConnectError, ProviderError, ProviderTimeout
from benchwarmers.store.db import Store
from benchwarmers.store.schema import Model
from benchwarmers.types import SeatStatus

log = logging.getLogger(__name__)

# Calls in a row that failed before seating holds the model out.
FAILING_AFTER = 2

# store -> alias -> failures as this process last wrote them.
_written: weakref.WeakKeyDictionary[Store, dict[str, int]] = weakref.WeakKeyDictionary()


def hard_failure(status: SeatStatus, failure: ProviderError | None) -> bool | None:
    """True: the model failed (connection, 5xx, timeout); False: it answered;
    None: the call says nothing about the model's health."""
    if status in ("ok", "empty"):
        return False
    if failure is None or isinstance(failure, ProviderBusy):  # never went out, or the caller stopped
        return None
    if isinstance(failure, ProviderTimeout | ProviderConnectError):
        return status != "rate_limited"
    return failure.status is not None and failure.status >= 500


async def note(store: Store, alias: str, *, failed: bool) -> None:
    """Count one more failure (up to the threshold), or clear the count."""
    seen = _written.get(store)  # not setdefault: that makes a weak reference and a dict on every call
    if seen is None:
        seen = _written[store] = {}
    known = seen.get(alias)
    if failed and known is not None and known >= FAILING_AFTER:
        return
    if not failed and known == 0:
        return
    statement = update(Model).where(Model.alias == alias)
    if failed:
        now = datetime.now(UTC)
        statement = statement.where(Model.failures < FAILING_AFTER).values(
            failures=Model.failures + 1,
            failing_since=func.coalesce(Model.failing_since, now),
        )
    else:
        statement = statement.where(Model.failures > 0).values(failures=0, failing_since=None)
    try:
        async with store.write() as session:
            await session.execute(statement)
    except Exception:  # the call's own record matters more than this note
        log.exception("could not note the health of %s", alias)
        return
    # What this process knows now: an answer clears; a failure counts (a write elsewhere
    # may have counted others, so the count read back is not needed: the threshold caps it).
    seen[alias] = 0 if not failed else (known or 0) + 1
