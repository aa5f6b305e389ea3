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
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from datetime import datetime

from sqlalchemy import Float, Integer, String, TextualSelect, bindparam, column, text
from sqlalchemy.ext.asyncio import AsyncSession

from benchwarmers.store.schema import Call
from benchwarmers.store.times import utc

_AT = Call.__table__.c.at.type


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
