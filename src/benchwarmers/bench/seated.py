"""The table as it stands: who sits on a collection and shape now, each
collection's explorer seats, and how often the untried have sat.

Seating starts from here: the newest seating line (which the decider keeps
seated unless the record says otherwise), whether the collection has
explorer seats, and for the explorers' rotation each untried model's seats
here, read at most every `SEAT_COUNT_TTL` seconds with the seats planned
in this process meanwhile counted as they go (`note_seated`, called by the
panel after each plan).
"""

from __future__ import annotations

import time
from collections.abc import Sequence

from sqlalchemy import func, select

from benchwarmers.bench import recent
from benchwarmers.calls.verdicts import collection_name
from benchwarmers.store.changes import Cached
from benchwarmers.store.db import Store
from benchwarmers.store.schema import Collection, SeatingHistory

# Explorer rotation counts an untried model's seats on a collection and shape up to this many.
SEAT_COUNT_CAP = 100
# Seat counts are read again this often; seats planned here meanwhile are added as they go.
SEAT_COUNT_TTL = 30.0
# Cached as `facts.FACTS` is: until a write to these tables commits here, or the time-to-live.
SEATED: Cached[dict[tuple[str, str], tuple[str, ...]]] = Cached(("seating_history",))
EXPLORING: Cached[dict[str, tuple[int, bool]]] = Cached(("collections",))


class _SeatCounts:
    """(database, collection, shape) -> (read at, alias -> (seats, last
    seated)): see `seat_counts`. Forgotten with the caches."""

    def __init__(self) -> None:
        self.entries: dict[tuple[str, str, str], tuple[float, dict[str, tuple[int, float]]]] = {}

    def forget(self) -> None:
        self.entries.clear()


SEAT_COUNTS = _SeatCounts()


async def latest_seatings(store: Store) -> dict[tuple[str, str], tuple[str, ...]]:
    """(collection, shape) -> the aliases on its newest seating line: one
    cached read for the seating (who sits now) and the history's note (did
    it change), so a refresh round reads the table once."""

    async def load() -> dict[tuple[str, str], tuple[str, ...]]:
        newest = (
            select(func.max(SeatingHistory.id))
            .group_by(SeatingHistory.collection, SeatingHistory.shape)
            .scalar_subquery()
        )
        async with store.read() as session:
            rows = await session.execute(
                select(SeatingHistory.collection, SeatingHistory.shape, SeatingHistory.seated).where(
                    SeatingHistory.id.in_(newest)
                )
            )
            return {(coll, shp): tuple(seated or ()) for coll, shp, seated in rows}

    return await SEATED.get(store, load)


async def seated_now(store: Store, collection: str, shape: str) -> tuple[tuple[str, ...], bool]:
    """Who sits on this collection and shape now (its newest seating line),
    and whether it has explorer seats (then they explore, not optimism)."""
    seated = (await latest_seatings(store)).get((collection, shape), ())
    return seated, bool((await collection_seating(store)).get(collection, (0, False))[0])


async def collection_seating(store: Store) -> dict[str, tuple[int, bool]]:
    """name -> (explorer seats, free only)."""

    async def load() -> dict[str, tuple[int, bool]]:
        async with store.read() as session:
            rows = await session.execute(
                select(Collection.name, Collection.explorer_seats, Collection.free_only)
            )
            return {name: (explorers or 0, bool(free)) for name, explorers, free in rows}

    return await EXPLORING.get(store, load)


async def seat_counts(
    store: Store, collection: str, shape: str, aliases: Sequence[str]
) -> dict[str, tuple[int, float]]:
    """Seats (up to `SEAT_COUNT_CAP`) and the last one's time of these
    aliases here, read at most every `SEAT_COUNT_TTL` seconds (and for an
    alias not read yet); seats planned here meanwhile are counted by
    `note_seated`. Only the untried need them (`decider`), so a settled bench reads none."""
    key = (store.database_key, collection, shape)
    entry = SEAT_COUNTS.entries.get(key)
    fresh = entry is not None and time.monotonic() - entry[0] < SEAT_COUNT_TTL
    counts = entry[1] if entry is not None and fresh else {}
    missing = [a for a in aliases if a not in counts]
    if missing or not fresh:
        asked = missing if fresh else list(aliases)
        read = {}
        if asked:
            async with store.read() as session:
                read = await recent.seats(session, collection, shape, asked, SEAT_COUNT_CAP)
        counts = {**counts, **{a: read.get(a, (0, 0.0)) for a in asked}}
        SEAT_COUNTS.entries[key] = (entry[0] if entry is not None and fresh else time.monotonic(), counts)
    return {a: counts[a] for a in aliases}


def note_seated(store: Store, collection: str, shape: str, aliases: Sequence[str]) -> None:
    """Count seats planned in this process until the seat counts are read
    again, so explorer seats rotate between reads."""
    entry = SEAT_COUNTS.entries.get((store.database_key, collection_name(collection), shape))
    if entry is None:
        return
    now = time.time()
    counts = entry[1]
    for alias in aliases:
        if alias in counts or len(counts) < 10_000:
            seats, _ = counts.get(alias, (0, 0.0))
            counts[alias] = (seats + 1, now)
