"""What was spent, per scope and UTC day, kept in the store for budgets.

The budget counters (`spending.py`) live in memory or in Redis; this is
their durable copy, so a restarted server (or a new replica, once Redis
forgot) starts a period's counter from what was spent in it instead of
from zero. Each settled call adds to one sum in memory (by its key, its
collection and its day: one dict update, nothing awaited; the sums are
spread over the scopes they count for, the key, the collection and the
install, only when written or asked for), and those sums are written in
one transaction at most every `FLUSH_EVERY` seconds, and when the store
closes. Each process writes only what its own calls spent, as increments,
so replicas add up rather than overwrite.

A crash loses at most the last `FLUSH_EVERY` seconds of sums; the calls
themselves are in the call log whatever happens.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import logging
from datetime import datetime
from typing import Any, cast

from sqlalchemy import Table, func, select
from sqlalchemy.dialects.postgresql import insert as pg_insert
from sqlalchemy.dialects.sqlite import insert as sqlite_insert

from benchwarmers.config import tunables
from benchwarmers.store.db import Store
from benchwarmers.store.schema import BudgetSpend

FLUSH_EVERY = tunables.BUDGET_FLUSH_SECONDS.value

log = logging.getLogger(__name__)

# (gateway key, collection, day "YYYY-MM-DD") -> [nano-dollars, tokens] not yet written.
_Sums = dict[tuple[str, str, str], list[int]]


def scopes(key: str, collection: str) -> tuple[tuple[str, str], ...]:
    """The (scope, name) a call of gateway key `key` ("" for the owner) to
    `collection` ("" for none) spends for: the install, its collection, its key."""
    found = [("install", "")]
    if collection:
        found.append(("collection", collection))
    if key:
        found.append(("key", key))
    return tuple(found)


@functools.cache
def _add_statement(is_sqlite: bool) -> Any:
    """The flush's one statement, built once per dialect and run once for all
    sums (an executemany): add each sum to its row, or make the row. Built
    per flush through the ORM's bulk insert, two rows' statements cost more
    CPU than a thousand calls' bookkeeping."""
    table = cast(Table, BudgetSpend.__table__)
    statement = (sqlite_insert if is_sqlite else pg_insert)(table)
    return statement.on_conflict_do_update(
        index_elements=["scope", "name", "day"],
        set_={
            "nano_usd": table.c.nano_usd + statement.excluded.nano_usd,
            "tokens": table.c.tokens + statement.excluded.tokens,
        },
    )


class SpendBook:
    """The sums waiting to be written, and their writer."""

    def __init__(self, store: Store) -> None:
        self.store = store
        self._pending: _Sums = {}
        self._timer: asyncio.TimerHandle | None = None
        self._flushes: set[asyncio.Task[None]] = set()
        store.on_close(self.flush)

    def add(self, key: str, collection: str, day: str, nano: int, tokens: int) -> None:
        """Count a settled call's spend (no await; `scopes` says for whom)."""
        if not nano and not tokens:
            return
        sums = self._pending.get((key, collection, day))
        if sums is None:
            self._pending[(key, collection, day)] = [nano, tokens]
        else:
            sums[0] += nano
            sums[1] += tokens
        if self._timer is None:
            self._timer = asyncio.get_running_loop().call_later(FLUSH_EVERY, self._flush_soon)

    def pending(self, scope: str, name: str, since: str) -> tuple[int, int]:
        """What this process counted for `scope name` but has not written, from day `since` on."""
        nano = tokens = 0
        for (key, collection, day), sums in self._pending.items():
            if day >= since and (scope, name) in scopes(key, collection):
                nano += sums[0]
                tokens += sums[1]
        return nano, tokens

    def _flush_soon(self) -> None:
        self._timer = None
        task = asyncio.get_running_loop().create_task(self.flush())
        self._flushes.add(task)
        task.add_done_callback(self._flushes.discard)

    async def flush(self) -> None:
        """Write the sums waiting, as increments; a store out of reach keeps them for the next try."""
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        taken, self._pending = self._pending, {}
        if not taken:
            return
        by_scope: dict[tuple[str, str, str], list[int]] = {}
        for (key, collection, day), (nano, tokens) in taken.items():
            for scope, name in scopes(key, collection):
                sums = by_scope.setdefault((scope, name, day), [0, 0])
                sums[0] += nano
                sums[1] += tokens
        rows = [
            {"scope": scope, "name": name, "day": day, "nano_usd": nano, "tokens": tokens}
            for (scope, name, day), (nano, tokens) in sorted(by_scope.items())
        ]
        try:
            async with self.store.write() as session:
                await session.execute(_add_statement(self.store.is_sqlite), rows)
        except Exception as exc:  # kept for the next flush: the sums are not lost to a brief outage
            log.warning("budget spend not written yet: %s", exc)
            for who, (nano, tokens) in taken.items():
                sums = self._pending.setdefault(who, [0, 0])
                sums[0] += nano
                sums[1] += tokens

    async def close(self) -> None:
        with contextlib.suppress(Exception):
            await asyncio.gather(*self._flushes, return_exceptions=True)
        await self.flush()


async def spent_since(store: Store, scope: str, name: str, start: datetime) -> tuple[int, int]:
    """Nano-dollars and tokens the store says `scope name` spent from `start`'s day on."""
    since = start.strftime("%Y-%m-%d")
    query = select(
        func.coalesce(func.sum(BudgetSpend.nano_usd), 0), func.coalesce(func.sum(BudgetSpend.tokens), 0)
    ).where(BudgetSpend.scope == scope, BudgetSpend.name == name, BudgetSpend.day >= since)
    async with store.read() as session:
        nano, tokens = (await session.execute(query)).one()
    return int(nano), int(tokens)
