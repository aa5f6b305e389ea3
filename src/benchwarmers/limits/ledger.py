"""Reading what was spent: the monthly usage ledger and the call log.

The caller writes both as each call ends (`calls/log.py`); this module only
reads them, for two readers: the quotas view (used and left per limit) and
the limiter, which restores its day and month counters from here after a
restart, so a restart never hands out a fresh daily or monthly allowance.

Per month the ledger is the record. Shorter windows (a minute, a day) are
counted from the call log's rows, which carry a time; calls our own limits
refused, or that a provider refused with a 429, are not counted (nothing
was served).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from sqlalchemy import func, select

from benchwarmers.store.db import Store
from benchwarmers.store.schema import Call, UsageMonth
from benchwarmers.types import NOT_SERVED


@dataclass(frozen=True, slots=True)
class Spent:
    requests: int = 0
    tokens_in: int = 0
    tokens_out: int = 0

    @property
    def tokens(self) -> int:
        return self.tokens_in + self.tokens_out


@dataclass(frozen=True, slots=True)
class LedgerRow:
    month: str
    endpoint: str
    served: str
    spent: Spent


def month_of(when: datetime) -> str:
    return when.astimezone(UTC).strftime("%Y-%m")


def day_start(when: datetime) -> datetime:
    return when.astimezone(UTC).replace(hour=0, minute=0, second=0, microsecond=0)


def next_day(when: datetime) -> datetime:
    return day_start(when) + timedelta(days=1)


def month_start(when: datetime) -> datetime:
    return day_start(when).replace(day=1)


def next_month(when: datetime) -> datetime:
    start = month_start(when)
    return (
        start.replace(year=start.year + 1, month=1)
        if start.month == 12
        else start.replace(month=start.month + 1)
    )


async def ledger(store: Store, month: str) -> list[LedgerRow]:
    """The ledger for one month ("2026-11"), a row per endpoint and model
    (its shards added up: `schema.UsageMonth`)."""
    key = (UsageMonth.endpoint, UsageMonth.served)
    query = (
        select(
            *key,
            func.sum(UsageMonth.requests),
            func.sum(UsageMonth.tokens_in),
            func.sum(UsageMonth.tokens_out),
        )
        .where(UsageMonth.month == month)
        .group_by(*key)
        .order_by(*key)
    )
    async with store.read() as session:
        rows = await session.execute(query)
        return [
            LedgerRow(month, endpoint, served, Spent(int(requests), int(tokens_in), int(tokens_out)))
            for endpoint, served, requests, tokens_in, tokens_out in rows
        ]


async def spent_in_month(store: Store, month: str, endpoint: str, served: str = "") -> Spent:
    """One endpoint's month from the ledger; one model's when `served` is set."""
    query = select(
        func.coalesce(func.sum(UsageMonth.requests), 0),
        func.coalesce(func.sum(UsageMonth.tokens_in), 0),
        func.coalesce(func.sum(UsageMonth.tokens_out), 0),
    ).where(UsageMonth.month == month, UsageMonth.endpoint == endpoint)
    if served:
        query = query.where(UsageMonth.served == served)
    async with store.read() as session:
        requests, tokens_in, tokens_out = (await session.execute(query)).one()
    return Spent(int(requests), int(tokens_in), int(tokens_out))


async def spent_since(store: Store, since: datetime, endpoint: str, served: str = "") -> Spent:
    """What the call log says was served since a time."""
    query = select(
        func.count(Call.id),
        func.coalesce(func.sum(Call.tokens_in), 0),
        func.coalesce(func.sum(Call.tokens_out), 0),
    ).where(Call.endpoint == endpoint, Call.at >= since, Call.status.notin_(NOT_SERVED))
    if served:
        query = query.where(Call.served == served)
    async with store.read() as session:
        requests, tokens_in, tokens_out = (await session.execute(query)).one()
    return Spent(int(requests), int(tokens_in), int(tokens_out))
