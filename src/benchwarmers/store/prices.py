"""Model prices over time: every change is dated (`model_prices`), whoever
made it, so a call is costed at the price of its own time (`calls/cost.py`)
and a price change mid-month leaves the calls before it at the old price.

Two writers: the catalog's refresh (`bench/catalog.py`, through `apply`)
and the user (`benchwarmers model set ALIAS --price-in X --price-out Y`,
through `set_prices`). The user's prices win: a model whose prices the user
set is left alone by later refreshes (`models.price_source` = "user") until
the user hands it back (`--catalog-price`).

A model that was free (both prices 0) and that the catalog now finds priced
"went paid" (`models.went_paid_at`): a `free_only` collection seats it
nowhere (`bench/facts.py`) until the user accepts the price
(`benchwarmers model set ALIAS --paid-ok`, or the price the user sets
themselves), because a free tier silently turned into a bill is what this
tool must not let happen.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from datetime import UTC, datetime

from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession

from benchwarmers.errors import NotFound, UserError
from benchwarmers.store import schema
from benchwarmers.store.db import Store
from benchwarmers.store.times import utc

USER = "user"
CATALOG = "catalog"
# A price above this (USD per million tokens) is a typo, not a model: the dearest published is ~$600.
MOST = 100_000.0


@dataclass(frozen=True, slots=True)
class PriceChange:
    """One dated row of a model's price history."""

    at: datetime
    price_in: float | None
    price_out: float | None
    price_cached: float | None
    source: str


def check_price(name: str, value: float | None) -> float | None:
    """A price as given: unknown (None), or a finite USD amount from 0 to `MOST`."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        raise UserError(f"{name} must be a number of USD per million tokens, got {value!r}")
    if value < 0 or value > MOST:
        raise UserError(f"{name} must be from 0 to {MOST:g} USD per million tokens, got {value:g}")
    return float(value)


def _priced(row: schema.Model) -> tuple[float | None, float | None, float | None]:
    return row.price_in, row.price_out, row.price_cached


def _free(price_in: float | None, price_out: float | None) -> bool:
    return price_in == 0 and price_out == 0


def _paid(price_in: float | None, price_out: float | None) -> bool:
    return (price_in or 0) > 0 or (price_out or 0) > 0


def apply(
    session: AsyncSession,
    row: schema.Model,
    price_in: float | None,
    price_out: float | None,
    price_cached: float | None,
    now: datetime,
) -> bool:
    """The catalog's prices onto a bench model, dated when they differ; a
    model whose prices the user set is left alone. A free model priced now
    is marked went paid (a priced one that is free again is not). True when
    the prices changed."""
    if row.price_source == USER:
        return False
    new = (price_in, price_out, price_cached)
    if new == _priced(row):
        return False
    if _free(row.price_in, row.price_out) and _paid(price_in, price_out):
        row.went_paid_at = row.went_paid_at or now
    elif not _paid(price_in, price_out):
        row.went_paid_at = None
    row.price_in, row.price_out, row.price_cached = new
    session.add(
        schema.ModelPrice(
            alias=row.alias,
            at=now,
            price_in=price_in,
            price_out=price_out,
            price_cached=price_cached,
            source=CATALOG,
        )
    )
    return True


async def set_prices(
    store: Store,
    alias: str,
    *,
    price_in: float | None = None,
    price_out: float | None = None,
    price_cached: float | None = None,
    paid_ok: bool = False,
    catalog: bool = False,
    now: datetime | None = None,
) -> None:
    """The user's prices for one model, from now on (`model set`): given ones
    replace the model's own, dated; `paid_ok` accepts a went-paid model's
    price (free-only collections seat it again); `catalog` hands the prices
    back to the catalog's refresh. Checked before anything is written."""
    given = {
        "--price-in": check_price("--price-in", price_in),
        "--price-out": check_price("--price-out", price_out),
        "--price-cached": check_price("--price-cached", price_cached),
    }
    setting = any(v is not None for v in given.values())
    if setting and catalog:
        raise UserError("set prices or hand them back to the catalog (--catalog-price), not both")
    now = now or datetime.now(UTC)
    async with store.write() as session:
        row = await session.scalar(select(schema.Model).where(schema.Model.alias == alias))
        if row is None:
            raise NotFound(f"no model {alias!r} on the bench")
        if setting:
            new = (
                row.price_in if price_in is None else price_in,
                row.price_out if price_out is None else price_out,
                row.price_cached if price_cached is None else price_cached,
            )
            row.price_source = USER
            row.went_paid_at = None  # the user set the price: it is accepted
            if new != _priced(row):
                row.price_in, row.price_out, row.price_cached = new
                session.add(
                    schema.ModelPrice(
                        alias=alias,
                        at=now,
                        price_in=new[0],
                        price_out=new[1],
                        price_cached=new[2],
                        source=USER,
                    )
                )
        if catalog:
            row.price_source = CATALOG  # the next refresh (or `catalog refresh`) prices it again
        if paid_ok:
            row.went_paid_at = None


async def history(store: Store, alias: str) -> list[PriceChange]:
    """A model's prices, oldest first, each with the time it took effect."""
    query = (
        select(schema.ModelPrice)
        .where(schema.ModelPrice.alias == alias)
        .order_by(schema.ModelPrice.at, schema.ModelPrice.id)
    )
    async with store.read() as session:
        rows = (await session.scalars(query)).all()
    return [PriceChange(utc(r.at), r.price_in, r.price_out, r.price_cached, r.source) for r in rows]
