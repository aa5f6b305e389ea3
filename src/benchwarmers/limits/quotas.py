"""The quotas view: every limit with what is used, what is left and when it
resets, this month's ledger, and who is resting.

Shown by `benchwarmers quotas`, `GET /bench/quotas` and the Quotas page.
It is read from the store alone (the call log, the ledger, learned limits),
not from the limiter's counters, so a CLI process sees what the server
spent and several servers show the same figures. A user's per-minute limit
is a rolling window, so it has no single reset time; its `resets_at` is when
the oldest call in the window ages out, which is when room frees.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

from sqlalchemy import func, select
from sqlalchemy.orm import selectinload

from benchwarmers.limits import ledger
from benchwarmers.limits.ledger import LedgerRow, Spent
from benchwarmers.limits.rest import wake_rested
from benchwarmers.limits.user_limits import UserLimit, list_limits
from benchwarmers.store.db import Store
from benchwarmers.store.schema import Call, LearnedLimit, Model
from benchwarmers.store.times import utc
from benchwarmers.types import NOT_SERVED


@dataclass(frozen=True, slots=True)
class Quota:
    endpoint: str
    served: str  # "" for the whole endpoint
    unit: str  # "requests" | "tokens"
    window: str  # "minute" | "day" | "month" | "" when the provider did not say
    source: str  # "set" for the user's, else how the provider said it
    limit: int | None
    used: int | None
    left: int | None
    resets_at: datetime | None


@dataclass(frozen=True, slots=True)
class Exhausted:
    """A limit used up now: every model it counts for is refused until it
    resets (`served` "": the whole endpoint, whatever each model's status)."""

    endpoint: str
    served: str
    why: str
    until: datetime | None


def exhausted(view: QuotasView, now: datetime | None = None) -> list[Exhausted]:
    """The limits in `view` with nothing left that have not reset: what makes
    a model `limited` although its own row says `available` (one model's 429
    on an endpoint whose limits count per key rests all of its models)."""
    now = now or datetime.now(UTC)
    found = []
    for q in view.quotas:
        if q.left != 0 or (q.resets_at is not None and q.resets_at <= now):
            continue
        per = f" per {q.window}" if q.window else ""
        whose = f"{q.endpoint}'s" if not q.served else f"{q.served}'s"
        source = "your limit" if q.source == "set" else f"said by {q.source or 'the provider'}"
        found.append(
            Exhausted(q.endpoint, q.served, f"{whose} {q.unit}{per} used up ({source})", q.resets_at)
        )
    return found


@dataclass(frozen=True, slots=True)
class Resting:
    alias: str
    endpoint: str
    served: str
    until: datetime | None
    reason: str


@dataclass(frozen=True, slots=True)
class QuotasView:
    month: str
    quotas: tuple[Quota, ...]
    usage: tuple[LedgerRow, ...]
    resting: tuple[Resting, ...]


async def quotas_view(store: Store, now: datetime | None = None) -> QuotasView:
    now = now or datetime.now(UTC)
    await wake_rested(store, now)  # a rest that is over is not shown as one
    month = ledger.month_of(now)
    quotas = [await _user_quota(store, limit, now) for limit in await list_limits(store)]
    quotas += await _learned_quotas(store, now)
    return QuotasView(
        month=month,
        quotas=tuple(quotas),
        usage=tuple(await ledger.ledger(store, month)),
        resting=tuple(await _resting(store)),
    )


async def _user_quota(store: Store, limit: UserLimit, now: datetime) -> Quota:
    resets_at: datetime | None
    if limit.window == "minute":
        since = now - timedelta(minutes=1)
        spent = await ledger.spent_since(store, since, limit.endpoint, limit.served)
        oldest = await _oldest_call_since(store, since, limit.endpoint, limit.served)
        resets_at = oldest + timedelta(minutes=1) if oldest else None
    elif limit.window == "day":
        spent = await ledger.spent_since(store, ledger.day_start(now), limit.endpoint, limit.served)
        resets_at = ledger.next_day(now)
    else:
        spent = await ledger.spent_in_month(store, ledger.month_of(now), limit.endpoint, limit.served)
        resets_at = ledger.next_month(now)
    used = _amount(spent, limit.unit)
    return Quota(
        endpoint=limit.endpoint,
        served=limit.served,
        unit=limit.unit,
        window=limit.window,
        source="set",
        limit=limit.amount,
        used=used,
        left=max(limit.amount - used, 0),
        resets_at=resets_at,
    )


def _amount(spent: Spent, unit: str) -> int:
    return spent.requests if unit == "requests" else spent.tokens


async def _oldest_call_since(store: Store, since: datetime, endpoint: str, served: str) -> datetime | None:
    query = select(func.min(Call.at)).where(
        Call.endpoint == endpoint, Call.at >= since, Call.status.notin_(NOT_SERVED)
    )
    if served:
        query = query.where(Call.served == served)
    async with store.read() as session:
        oldest = await session.scalar(query)
    return utc(oldest) if oldest is not None else None


async def _learned_quotas(store: Store, now: datetime) -> list[Quota]:
    """What providers last said and is still in force: a limit whose window
    has reset is gone (what it said no longer holds, and the provider says
    it again on the next reply). Per model where the endpoint counts so."""
    async with store.read() as session:
        rows = list(
            await session.scalars(
                select(LearnedLimit).order_by(LearnedLimit.endpoint, LearnedLimit.served, LearnedLimit.unit)
            )
        )
    quotas = []
    for row in rows:
        resets_at = utc(row.resets_at) if row.resets_at is not None else None
        if resets_at is not None and resets_at <= now:
            continue
        remaining = row.remaining
        used = row.limit - remaining if row.limit is not None and remaining is not None else None
        quotas.append(
            Quota(
                endpoint=row.endpoint,
                served=row.served,
                unit=row.unit,
                window=row.window,
                source=row.source,
                limit=row.limit,
                used=used,
                left=remaining,
                resets_at=resets_at,
            )
        )
    return quotas


async def _resting(store: Store) -> list[Resting]:
    async with store.read() as session:
        rows = await session.scalars(
            select(Model)
            .options(selectinload(Model.endpoint))
            .where(Model.status == "resting")
            .order_by(Model.alias)
        )
        return [
            Resting(
                alias=row.alias,
                endpoint=row.endpoint.name,
                served=row.served,
                until=utc(row.resting_until) if row.resting_until else None,
                reason=row.status_reason,
            )
            for row in rows
        ]


def _iso(when: datetime | None) -> str | None:
    return when.isoformat(timespec="seconds") if when is not None else None


def as_json(view: QuotasView) -> dict[str, Any]:
    """The view as `GET /bench/quotas` returns it (times in ISO 8601 UTC)."""
    return {
        "month": view.month,
        "quotas": [
            {
                "endpoint": q.endpoint,
                "model": q.served or None,
                "unit": q.unit,
                "window": q.window or None,
                "source": q.source,
                "limit": q.limit,
                "used": q.used,
                "left": q.left,
                "resets_at": _iso(q.resets_at),
            }
            for q in view.quotas
        ],
        "usage": [
            {
                "month": row.month,
                "endpoint": row.endpoint,
                "model": row.served,
                "requests": row.spent.requests,
                "tokens_in": row.spent.tokens_in,
                "tokens_out": row.spent.tokens_out,
            }
            for row in view.usage
        ],
        "resting": [
            {
                "alias": r.alias,
                "endpoint": r.endpoint,
                "model": r.served,
                "until": _iso(r.until),
                "reason": r.reason,
            }
            for r in view.resting
        ],
    }
