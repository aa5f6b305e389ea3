"""The call log's rows as the store writes them: a call's row and its
month's line in the usage ledger, two statements for one transaction.

Two writers send them: the call log's (`calls/log.py`, as calls end) and
the journal's replay (`store/journal.py`, at start-up, or once the store
takes a batch again, for calls a process had told its clients of but not
committed). Both must add to the
ledger exactly what they add to the log, so both build their statements
here.

A row is the `calls` table's column values (its `at` an aware datetime)
and whether the call went out (`sent`): a call our own limits refused is in
the log, but the ledger counts no request for it.
"""

from __future__ import annotations

import functools
import random
from collections.abc import Sequence
from typing import Any, cast

from sqlalchemy import Executable, String, Table, select
from sqlalchemy.dialects import postgresql
from sqlalchemy.dialects.postgresql import insert as pg_insert
from sqlalchemy.dialects.sqlite import insert as sqlite_insert
from sqlalchemy.ext.asyncio import AsyncSession

from benchwarmers.store.schema import Call, UsageMonth

# A call's column values, and whether it went out.
Row = tuple[dict[str, Any], bool]
Statements = list[tuple[Executable, list[dict[str, Any]]]]

# The tables a batch writes (`changes.committed`: the caches learn of it).
TABLES = (Call.__tablename__, UsageMonth.__tablename__)
# Rows a month of one model may be split over on PostgreSQL, where writers in several
# processes add to the ledger at once. On one row every batch waited for the one before
# it to commit: two workers spent 12-22% more CPU a request than one, and PostgreSQL 0.83
# ms a batch; on 8 rows, -4 to +8% and 0.58-0.72 ms (docs/benchmarks.md, "The ledger's
# shards"). Two batches at once meet on a row one time in this many; a read adds up at
# most this many rows.
LEDGER_SHARDS = 8
# Ids looked up in one statement (SQLite allows 32,766 parameters a statement).
LOOKUP_CHUNK = 500


async def logged_ids(session: AsyncSession, ids: Sequence[str]) -> set[str]:
    """Which of these call ids the log has: for the journal's replay, which
    writes the others, and for a reader waiting for calls on their way
    (`log.settled`)."""
    logged: set[str] = set()
    for start in range(0, len(ids), LOOKUP_CHUNK):
        chunk = ids[start : start + LOOKUP_CHUNK]
        logged.update(await session.scalars(select(Call.id).where(Call.id.in_(chunk))))
    return logged


def statements(rows: Sequence[Row], sqlite: bool) -> Statements:
    """The rows and their ledger lines: two statements, for one transaction.
    Their lines go to the first shard: an SQLite file has one writer."""
    return [(call_insert(), [values for values, _sent in rows]), (ledger_upsert(sqlite), ledger_lines(rows))]


def ledger_lines(rows: Sequence[Row], shard: int = 0) -> list[dict[str, Any]]:
    """What the rows add to the ledger: one line per month, endpoint and model, in `shard`."""
    sums: dict[tuple[str, str, str], list[Any]] = {}
    for values, sent in rows:
        at = values["at"]
        line = sums.setdefault(
            (f"{at.year:04d}-{at.month:02d}", values["endpoint"], values["served"]), [0, 0, 0, 0.0, 0]
        )
        line[0] += 1 if sent else 0
        line[1] += values["tokens_in"]
        line[2] += values["tokens_out"]
        # A journal line of an older version has no cost: unknown, as a price would be.
        cost = values.get("cost_usd")
        if cost is None:
            line[4] += 1 if sent else 0
        else:
            line[3] += cost
    return [
        {
            "month": month,
            "endpoint": endpoint,
            "served": served,
            "shard": shard,
            "requests": n,
            "tokens_in": i,
            "tokens_out": o,
            "cost_usd": usd,
            "unpriced": unpriced,
        }
        for (month, endpoint, served), (n, i, o, usd, unpriced) in sums.items()
    ]


def postgres_batch(rows: Sequence[Row]) -> tuple[str, list[list[Any]]]:
    """The rows and their ledger lines as one PostgreSQL statement, and its
    arguments: each column's values as one array. One statement is one
    round trip and a transaction of its own, where BEGIN, a statement per
    table and COMMIT are four round trips, each a wake-up of the writer's
    event loop (docs/benchmarks.md, "Issue 15: workers"). Its ledger lines
    go to a shard picked at random (`LEDGER_SHARDS`)."""
    lines = ledger_lines(rows, random.randrange(LEDGER_SHARDS))
    columns = tuple(rows[0][0])
    arguments = [[values[name] for values, _sent in rows] for name in columns]
    arguments += [[line[name] for line in lines] for name in _LEDGER_COLUMNS]
    return _postgres_sql(columns), arguments


# The ledger's key, then what a line adds.
_LEDGER_KEY = ("month", "endpoint", "served", "shard")
_LEDGER_COLUMNS = (*_LEDGER_KEY, "requests", "tokens_in", "tokens_out", "cost_usd", "unpriced")


@functools.cache
def _postgres_sql(columns: tuple[str, ...]) -> str:
    """The call rows inserted in a WITH, the ledger's lines added to after it:
    PostgreSQL runs a WITH's insert whether or not anything reads it, and
    the two commit or fail together."""
    calls, ledger = cast(Table, Call.__table__), cast(Table, UsageMonth.__table__)
    dialect = postgresql.dialect()  # type: ignore[no-untyped-call]

    quote = dialect.identifier_preparer.quote

    def arrays(table: Table, names: Sequence[str], first: int) -> str:
        # Text arrays for strings: the insert's own cast to a column's VARCHAR(n) refuses a longer
        # value, as a row's insert would, where a cast to VARCHAR(n)[] would cut it short.
        types = (
            "TEXT" if isinstance(table.c[name].type, String) else table.c[name].type.compile(dialect=dialect)
            for name in names
        )
        return ", ".join(f"${first + i}::{kind}[]" for i, kind in enumerate(types))

    def names(of: Sequence[str]) -> str:
        return ", ".join(quote(name) for name in of)

    added = ", ".join(
        f"{quote(name)} = {ledger.name}.{quote(name)} + excluded.{quote(name)}"
        for name in _LEDGER_COLUMNS[len(_LEDGER_KEY) :]
    )
    return (
        f"WITH logged AS (INSERT INTO {calls.name} ({names(columns)})"
        f" SELECT * FROM unnest({arrays(calls, columns, 1)}))"
        f" INSERT INTO {ledger.name} ({names(_LEDGER_COLUMNS)})"
        f" SELECT * FROM unnest({arrays(ledger, _LEDGER_COLUMNS, len(columns) + 1)})"
        f" ON CONFLICT ({names(_LEDGER_KEY)}) DO UPDATE SET {added}"
    )


@functools.cache
def call_insert() -> Executable:
    """The log's insert, one object for good (so the log's writer compiles it once)."""
    return cast(Table, Call.__table__).insert()  # Core, not the ORM's unit of work: less work per row


@functools.cache
def ledger_upsert(sqlite: bool) -> Executable:
    """The ledger's add-to-the-month upsert, built once per dialect: building
    it (its `excluded` columns) cost more than the batch it writes."""
    ledger = cast(Table, UsageMonth.__table__)
    insert = sqlite_insert if sqlite else pg_insert
    upsert = insert(ledger)
    return upsert.on_conflict_do_update(
        index_elements=list(_LEDGER_KEY),
        set_={
            "requests": ledger.c.requests + upsert.excluded.requests,
            "tokens_in": ledger.c.tokens_in + upsert.excluded.tokens_in,
            "tokens_out": ledger.c.tokens_out + upsert.excluded.tokens_out,
            "cost_usd": ledger.c.cost_usd + upsert.excluded.cost_usd,
            "unpriced": ledger.c.unpriced + upsert.excluded.unpriced,
        },
    )
