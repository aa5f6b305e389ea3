"""Budgets the user sets: how much a gateway key, a collection or the whole
install may spend per calendar day, week or month (UTC), in USD, in tokens,
or both (`budget set`, `PUT /bench/budgets`, the Settings page).

This module is the budgets as the user sees them: checked, stored, listed.
Enforcing them on each call (reserve before, settle after) is
`limits/spending.py`; what was spent, kept across restarts, is
`limits/budget_spend.py`.

Periods are calendar windows in UTC: a day from midnight, a week from
Monday, a month from the first. A budget names its scope ("key",
"collection", "install") and, but for the install, the key's or the
collection's name, which must exist when the budget is set. Money is USD
only: another currency is refused rather than converted at a rate nobody
chose. A budget with neither USD nor tokens is no budget: setting one so
removes it.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Literal, TypeAlias

from sqlalchemy import delete, select

from benchwarmers.errors import NotFound, UserError
from benchwarmers.store.changes import Cached
from benchwarmers.store.db import Store
from benchwarmers.store.schema import Budget as BudgetRow
from benchwarmers.store.schema import Collection, GatewayKey

BudgetScope: TypeAlias = Literal["key", "collection", "install"]
BudgetPeriod: TypeAlias = Literal["day", "week", "month"]
SCOPES: tuple[BudgetScope, ...] = ("key", "collection", "install")
PERIODS: tuple[BudgetPeriod, ...] = ("day", "week", "month")
CURRENCIES = ("USD",)
# USD are counted in nano-dollars: integers, so sums across processes stay exact.
NANO = 1_000_000_000
# The largest budget taken: a bound that keeps nano-dollars inside Redis' integers.
MAX_USD = 1_000_000_000.0
MAX_TOKENS = 10**15

# Every budget set, as last read: a set or clear here drops it at once, another process's within seconds.
_ALL: Cached[tuple[Budget, ...]] = Cached(("budgets",))


@dataclass(frozen=True, slots=True)
class Budget:
    scope: BudgetScope
    name: str  # "" for the install
    period: BudgetPeriod
    usd: float | None
    tokens: int | None

    @property
    def label(self) -> str:
        """How messages name it: "key alice per day", "install per month"."""
        who = f"{self.scope} {self.name}" if self.name else self.scope
        return f"budget {who} per {self.period}"


def window(period: BudgetPeriod, now: datetime) -> tuple[datetime, datetime]:
    """The calendar window (UTC) `now` falls in: its start and its reset."""
    day = now.astimezone(UTC).replace(hour=0, minute=0, second=0, microsecond=0)
    if period == "day":
        return day, day + timedelta(days=1)
    if period == "week":
        start = day - timedelta(days=day.weekday())
        return start, start + timedelta(days=7)
    start = day.replace(day=1)
    end = (
        start.replace(year=start.year + 1, month=1)
        if start.month == 12
        else start.replace(month=start.month + 1)
    )
    return start, end


def to_nano(usd: float) -> int:
    return math.floor(usd * NANO + 0.5)


def cost_nano(tokens_in: int, tokens_out: int, price_in: float | None, price_out: float | None) -> int | None:
    """A call's cost in nano-dollars at a model's prices (USD per million
    tokens, None = unknown): None when a price it needs is unknown."""
    if (tokens_in and price_in is None) or (tokens_out and price_out is None):
        return None
    # USD per million tokens is nano-dollars per thousandth of a token: x 1000 per token.
    return math.ceil(tokens_in * (price_in or 0.0) * 1000 + tokens_out * (price_out or 0.0) * 1000)


# ------------------------------------------------------------------ input


def parse_usd(value: object, currency: str = "USD") -> float | None:
    """A USD amount as a person or a client gives it ("5", "$5", 5.0), or
    None (no USD ceiling). Negative, not a number, or another currency: refused."""
    if currency.strip().upper() not in CURRENCIES:
        raise UserError(f"budgets are in USD; currency {currency!r} is not taken")
    if value is None:
        return None
    if isinstance(value, bool):
        raise UserError(f"usd must be a number of US dollars, not {value!r}")
    text = str(value).strip()
    if text.upper().startswith("USD"):
        text = text[3:].strip()
    text = text.removeprefix("$").strip()
    try:
        usd = float(text)
    except ValueError:
        raise UserError(f"usd must be a number of US dollars, not {value!r}") from None
    if not math.isfinite(usd) or usd < 0:
        raise UserError(f"usd must be a number of US dollars, 0 or more, not {value!r}")
    if usd > MAX_USD:
        raise UserError(f"usd must be at most {MAX_USD:.0f}")
    return usd


def parse_tokens(value: object) -> int | None:
    """A token count (a whole number, 0 or more) or None (no token ceiling)."""
    if value is None:
        return None
    if isinstance(value, bool) or (isinstance(value, float) and not value.is_integer()):
        raise UserError(f"tokens must be a whole number, not {value!r}")
    try:
        tokens = int(str(value).strip().replace("_", "")) if not isinstance(value, float) else int(value)
    except ValueError:
        raise UserError(f"tokens must be a whole number, not {value!r}") from None
    if tokens < 0 or tokens > MAX_TOKENS:
        raise UserError(f"tokens must be a whole number from 0 to {MAX_TOKENS}, not {value!r}")
    return tokens


def check_scope(scope: object, period: object) -> tuple[BudgetScope, BudgetPeriod]:
    if scope not in SCOPES:
        raise UserError(f"scope must be one of {', '.join(SCOPES)}, not {scope!r}")
    if period not in PERIODS:
        raise UserError(f"period must be one of {', '.join(PERIODS)}, not {period!r}")
    return scope, period


# ------------------------------------------------------------------ store


async def _check_name(store: Store, scope: BudgetScope, name: str) -> str:
    """The name a budget of `scope` is for, once it names something that exists."""
    if scope == "install":
        if name:
            raise UserError("a budget for the whole install names nothing (leave the name out)")
        return ""
    if not name:
        raise UserError(f"name the {scope} the budget is for")
    table, column = (GatewayKey, GatewayKey.name) if scope == "key" else (Collection, Collection.name)
    async with store.read() as session:
        found = await session.scalar(select(table).where(column == name))
    if found is None or (isinstance(found, GatewayKey) and found.revoked_at is not None):
        raise NotFound(f"there is no {'gateway key' if scope == 'key' else 'collection'} named {name!r}")
    return name


async def set_budget(
    store: Store, scope: object, name: str, period: object, *, usd: float | None, tokens: int | None
) -> Budget | None:
    """Set (or replace) one budget; both amounts None removes it. Checked
    whole before anything is written. Returns the budget, or None when removed."""
    checked_scope, checked_period = check_scope(scope, period)
    name = await _check_name(store, checked_scope, name.strip())
    where = (BudgetRow.scope == checked_scope, BudgetRow.name == name, BudgetRow.period == checked_period)
    async with store.write() as session:
        row = await session.scalar(select(BudgetRow).where(*where))
        if usd is None and tokens is None:
            if row is not None:
                await session.delete(row)
            return None
        if row is None:
            session.add(
                BudgetRow(scope=checked_scope, name=name, period=checked_period, usd=usd, tokens=tokens)
            )
        else:
            row.usd, row.tokens = usd, tokens
    return Budget(checked_scope, name, checked_period, usd, tokens)


async def clear_budgets(store: Store, scope: object, name: str = "", period: object = None) -> int:
    """Remove a scope's budgets (one period's, when named); how many went."""
    checked_scope, _ = check_scope(scope, period or "day")
    statement = delete(BudgetRow).where(BudgetRow.scope == checked_scope, BudgetRow.name == name.strip())
    if period is not None:
        statement = statement.where(BudgetRow.period == period)
    async with store.write() as session:
        result = await session.execute(statement)
        return int(result.rowcount or 0)  # type: ignore[attr-defined]


async def all_budgets(store: Store) -> tuple[Budget, ...]:
    """Every budget, scope by scope; asked on every call, so from a cache."""
    return await _ALL.get(store, lambda: _read_all(store))


async def _read_all(store: Store) -> tuple[Budget, ...]:
    order = {scope: i for i, scope in enumerate(SCOPES)}
    periods = {period: i for i, period in enumerate(PERIODS)}
    async with store.read() as session:
        rows = await session.scalars(select(BudgetRow))
        budgets = [
            Budget(row.scope, row.name, row.period, row.usd, row.tokens)  # type: ignore[arg-type]
            for row in rows
        ]
    return tuple(sorted(budgets, key=lambda b: (order[b.scope], b.name, periods[b.period])))
