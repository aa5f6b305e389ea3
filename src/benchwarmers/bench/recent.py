"""Per model, its newest calls: one statement for a whole bench, built once.

Seating reads two things per model that only the newest calls say: how
quick its recent answers were (the stand-in for a speed probe) and how
often, and when last, it sat on a collection and shape (the explorer
rotation). Each must stay bounded however long the call log: a read per
model newest first down an index, at most a fixed number of entries each,
all in one statement (`UNION ALL`), so one round trip reads a 200-model
bench.

Built with SQLAlchemy's expression language, that statement cost 75-90 ms
of CPU for 200 models on every refresh, nearly all of it Python making,
keying and compiling 200 subqueries (the database's own work is a few
milliseconds of index seeks); refreshes run every few seconds under load
and made seating after one miss its 50 ms bound four times over. So the
SQL is written here once per number of models, as text with bound
parameters (the types of `calls.at` applied, so SQLite and PostgreSQL
compare and return moments as the ORM does), and what is left per refresh
is the database's work.

Forgetting reads the bench's newest verdicts one by one (`verdicts`), down
`ix_verdicts_at` from the newest and stopped at the last one kept, written
here as text for the same reason and to name that index on SQLite: with
`ix_verdicts_alias_at` to choose from, SQLite's planner gathered each
model's verdicts of the window and sorted them all (~20k with 300k calls in
the log) to keep the newest 2,000.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from datetime import datetime

from sqlalchemy import Boolean, Float, Integer, String, TextualSelect, bindparam, column, text
from sqlalchemy.ext.asyncio import AsyncSession

from benchwarmers.store.schema import Call, Verdict
from benchwarmers.store.times import utc

_AT = Call.__table__.c.at.type
_VERDICT_AT = Verdict.__table__.c.at.type


async def first_bytes(
    session: AsyncSession, aliases: Sequence[str], since: datetime, sample: int
) -> dict[str, float]:
    """alias -> the mean first byte (seconds) of its newest `sample` answers
    (status ok, first byte known) since `since`; aliases without one left out.
    Newest first down `ix_calls_alias_at`."""
    if not aliases:
        return {}
    params: dict[str, object] = {f"a{i}": alias for i, alias in enumerate(aliases)}
    rows = await session.execute(_first_bytes(len(aliases), sample), {**params, "since": since})
    return {alias: float(mean) for alias, mean in rows if alias is not None and mean is not None}


async def seats(
    session: AsyncSession, collection: str, shape: str, aliases: Sequence[str], cap: int
) -> dict[str, tuple[int, float]]:
    """alias -> (its seats on `collection` and `shape`, counted up to `cap`;
    the Unix time of the last one), for aliases that sat there. Newest
    first down `ix_calls_seats`: each alias costs at most `cap` index entries."""
    if not aliases:
        return {}
    params: dict[str, object] = {f"a{i}": alias for i, alias in enumerate(aliases)}
    rows = await session.execute(
        _seats(len(aliases), cap), {**params, "collection": collection, "shape": shape}
    )
    return {alias: (int(n), utc(last).timestamp()) for alias, n, last in rows if alias is not None and n}


async def verdicts(
    session: AsyncSession, aliases: Sequence[str], kinds: Sequence[str], since: datetime, cap: int
) -> list[tuple[str, str, str, bool, datetime]]:
    """(alias, collection, shape, useful, at) of the newest `cap` verdicts
    since `since` on these aliases' calls of these kinds, newest first:
    down `ix_verdicts_at`, so the database reads about `cap` entries
    (those of other aliases or kinds in between too), not the whole window."""
    if not aliases or not kinds:
        return []
    dialect = session.bind.dialect.name if session.bind is not None else ""
    params: dict[str, object] = {f"a{i}": alias for i, alias in enumerate(aliases)}
    params |= {f"k{i}": kind for i, kind in enumerate(kinds)}
    rows = await session.execute(
        _verdicts(len(aliases), len(kinds), dialect == "sqlite"), {**params, "since": since, "cap": cap}
    )
    return [(alias, coll, shape, bool(useful), at) for alias, coll, shape, useful, at in rows]


@functools.lru_cache(maxsize=16)
def _first_bytes(count: int, sample: int) -> TextualSelect:
    per_alias = (
        f"SELECT max(alias) AS alias, avg(first_byte_seconds) AS mean FROM ("
        f"SELECT alias, first_byte_seconds FROM calls WHERE alias = :a{i} AND at >= :since "
        f"AND status = 'ok' AND first_byte_seconds IS NOT NULL ORDER BY at DESC LIMIT {int(sample)}) AS r{i}"
        for i in range(count)
    )
    return (
        text(" UNION ALL ".join(per_alias))
        .bindparams(bindparam("since", type_=_AT))
        .columns(column("alias", String), column("mean", Float))
    )


@functools.lru_cache(maxsize=16)
def _seats(count: int, cap: int) -> TextualSelect:
    per_alias = (
        f"SELECT max(alias) AS alias, count(*) AS n, max(at) AS last FROM ("
        f"SELECT alias, at FROM calls WHERE collection = :collection AND shape = :shape "
        f"AND kind = 'seat' AND alias = :a{i} ORDER BY at DESC LIMIT {int(cap)}) AS r{i}"
        for i in range(count)
    )
    return text(" UNION ALL ".join(per_alias)).columns(
        column("alias", String), column("n", Integer), column("last", _AT)
    )


@functools.lru_cache(maxsize=16)
def _verdicts(count: int, kinds: int, sqlite: bool) -> TextualSelect:
    # SQLite's planner, given the statistics of a young store, can still prefer
    # `ix_verdicts_alias_at` (a seek per alias, then the sort): named, the index is the plan.
    indexed = " INDEXED BY ix_verdicts_at" if sqlite else ""
    alias_in = ", ".join(f":a{i}" for i in range(count))
    kind_in = ", ".join(f":k{i}" for i in range(kinds))
    return (
        text(
            f"SELECT alias, collection, shape, useful, at FROM verdicts{indexed} "
            f"WHERE at >= :since AND kind IN ({kind_in}) AND alias IN ({alias_in}) "
            "ORDER BY at DESC LIMIT :cap"
        )
        .bindparams(bindparam("since", type_=_VERDICT_AT))
        .columns(
            column("alias", String),
            column("collection", String),
            column("shape", String),
            column("useful", Boolean),
            column("at", _VERDICT_AT),
        )
    )
