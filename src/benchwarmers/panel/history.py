"""The seating history a panel keeps: a dated line (`bench.explain`)
whenever who sits on a collection for a shape changes.

Most asks seat the same panel as the last one, so the engine first compares
with the last line written, from a cached read of the latest line of every
collection and shape (one statement after a change, none while nothing
changes), and only then ranks the seats for the reason (several reads) and
writes. It runs after the reply is out, but its reads would still compete
with the next ask's, so the common case must cost nothing.

One note per collection, shape and seating is under way at a time: the
asks that find the cached line stale meanwhile (a new shape, a seating
that just changed, a cold start) leave it to the one already noting it.
Each of them would otherwise rank the seats and queue a write session of
its own, and the cache's read again waits behind those writes: under wrk
at 10 connections a cold one-seat panel queued ~480 of them in its first
second, still draining seconds later (docs/benchmarks.md).
"""

from __future__ import annotations

import logging
from collections.abc import Sequence

from benchwarmers.bench import decisions
from benchwarmers.bench.explain import record_seating, seating_reason
from benchwarmers.bench.seated import latest_seatings
from benchwarmers.store.db import Store
from benchwarmers.types import LeftOff

log = logging.getLogger(__name__)

# (database, collection, shape, seated) whose note is under way.
_NOTING: set[tuple[str, str, str, tuple[str, ...]]] = set()


async def note_panel(
    store: Store,
    collection: str,
    shape: str,
    seated: Sequence[str],
    explorers: Sequence[str],
    left_off: Sequence[LeftOff],
) -> None:
    """Write a history line when these seats differ from the last line's;
    the reason names each seat's record and why members were left off.
    Never raises: the history is a record of the panel, never a reason to fail it."""
    try:
        latest = await latest_seatings(store)
        seats = tuple(seated)
        noting = (store.database_key, collection, shape, seats)
        if latest.get((collection, shape)) == seats or noting in _NOTING:
            return
        _NOTING.add(noting)
        try:
            rankings = await decisions.rank(store, collection, shape, list(seated))
            reason = seating_reason(rankings, seated, explorers)
            left = "; ".join(f"{m.alias} left off: {m.reason}" for m in left_off)
            await record_seating(
                store, collection, shape, list(seated), "; ".join(p for p in (reason, left) if p)
            )
        finally:
            _NOTING.discard(noting)
    except Exception:
        log.exception("could not write the seating history of bench/%s", collection)
