"""The call log's rows as the store writes them: a call's row and its
month's line in the usage ledger, two statements for one transaction.

Two writers send them: the call log's (`calls/log.py`, as calls end) and
the journal's replay (`store/journal.py`, at start-up, for calls a killed
process had told its clients of but not committed). Both must add to the
ledger exactly what they add to the log, so both build their statements
here.

A row is the `calls` table's column values (its `at` an aware datetime)
and whether the call went out (`sent`): a call our own limits refused is in
the log, but the ledger counts no request for it.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from typing import Any, cast

from sqlalchemy import Executable, Table
from sqlalchemy.dialects.postgresql import insert as pg_insert
from sqlalchemy.dialects.sqlite import insert as sqlite_insert

from benchwarmers.store.schema import Call, UsageMonth

# A call's column values, and whether it went out.
Row = tuple[dict[str, Any], bool]
Statements = list[tuple[Executable, list[dict[str, Any]]]]

# The tables a batch writes (`changes.committed`: the caches learn of it).
TABLES = (Call.__tablename__, UsageMonth.__tablename__)


def statements(rows: Sequence[Row], sqlite: bool) -> Statements:
    """The rows and their ledger lines: two statements, for one transaction."""
    sums: dict[tuple[str, str, str], list[int]] = {}
    for values, sent in rows:
        at = values["at"]
        line = sums.setdefault(
            (f"{at.year:04d}-{at.month:02d}", values["endpoint"], values["served"]), [0, 0, 0]
        )
        line[0] += 1 if sent else 0
        line[1] += values["tokens_in"]
        line[2] += values["tokens_out"]
    lines = [
        {
            "month": month,
            "endpoint": endpoint,
            "served": served,
            "requests": n,
            "tokens_in": i,
            "tokens_out": o,
        }
        for (month, endpoint, served), (n, i, o) in sums.items()
    ]
    return [(call_insert(), [values for values, _sent in rows]), (ledger_upsert(sqlite), lines)]


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
        index_elements=["month", "endpoint", "served"],
        set_={
            "requests": ledger.c.requests + upsert.excluded.requests,
            "tokens_in": ledger.c.tokens_in + upsert.excluded.tokens_in,
            "tokens_out": ledger.c.tokens_out + upsert.excluded.tokens_out,
        },
    )
