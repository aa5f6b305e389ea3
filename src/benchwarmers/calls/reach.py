"""Whether an endpoint can be reached: its last call connected, or not.

An explorer seat given to a model whose endpoint cannot be reached (a local
server that is off, a provider's outage) is a seat wasted on every ask, so
the caller notes it: a call that could not connect marks the endpoint
`unreachable_since`, any reply (even an error or a 429: something answered)
clears it. Only changes are written, remembered per store in this process,
so an answering endpoint costs no write per call; it is written as the call
ends, beside its log row, and a failure to write it is logged, never the
call's failure.
"""

from __future__ import annotations

import logging
from datetime import UTC, datetime

from sqlalchemy import update

from benchwarmers.store.db import Store
from benchwarmers.store.schema import Endpoint

log = logging.getLogger(__name__)

# In `Store.local`: endpoint -> reachable, as this process last wrote it.
_WRITTEN = "reach.written"


async def note(store: Store, endpoint: str, *, reachable: bool) -> None:
    """Record that a call to `endpoint` connected (or could not), if that is news."""
    seen: dict[str, bool] | None = store.local.get(_WRITTEN)  # not setdefault: a dict on every call
    if seen is None:
        seen = store.local[_WRITTEN] = {}
    if seen.get(endpoint) == reachable:
        return
    statement = update(Endpoint).where(Endpoint.name == endpoint)
    if reachable:
        statement = statement.where(Endpoint.unreachable_since.is_not(None)).values(unreachable_since=None)
    else:
        statement = statement.where(Endpoint.unreachable_since.is_(None)).values(
            unreachable_since=datetime.now(UTC)
        )
    try:
        async with store.write() as session:
            await session.execute(statement)
    except Exception:  # the call's own record matters more than this note
        log.exception("could not note whether %s is reachable", endpoint)
        return
    seen[endpoint] = reachable
