"""Limits the user sets, per endpoint or per model (`limit set`, Settings page).

Five kinds, named as the CLI names them: requests per minute, day and month
(`rpm`, `rpd`, `rpmonth`) and tokens per minute and day (`tpm`, `tpd`). An
endpoint-wide limit (`served` empty) covers every model behind the key,
since that is how providers count; a model's own limit narrows it further.
Both apply to a call at once.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal, TypeAlias

from sqlalchemy import and_, delete, or_, select

from benchwarmers.errors import UserError
from benchwarmers.store.changes import Cached
from benchwarmers.store.db import Store
from benchwarmers.store.schema import LimitSetting

LimitWindow: TypeAlias = Literal["minute", "day", "month"]
LimitUnit: TypeAlias = Literal["requests", "tokens"]

# CLI name -> (window, unit); the only combinations there are.
KINDS: dict[str, tuple[LimitWindow, LimitUnit]] = {
    "rpm": ("minute", "requests"),
    "rpd": ("day", "requests"),
    "rpmonth": ("month", "requests"),
    "tpm": ("minute", "tokens"),
    "tpd": ("day", "tokens"),
}
KIND_OF = {pair: name for name, pair in KINDS.items()}
# Every limit set, as last read (see `limits_for`).
_ALL: Cached[tuple[UserLimit, ...]] = Cached(("limit_settings",))


@dataclass(frozen=True, slots=True)
class UserLimit:
    endpoint: str
    served: str  # "" for the whole endpoint
    window: LimitWindow
    unit: LimitUnit
    amount: int

    @property
    def kind(self) -> str:
        return KIND_OF[(self.window, self.unit)]

    @property
    def describe(self) -> str:
        scope = f"{self.endpoint}/{self.served}" if self.served else self.endpoint
        return f"{self.amount} {self.unit} a {self.window} on {scope} (set)"


# The store keeps a limit in a 32-bit integer column (PostgreSQL's `integer`):
# a larger amount must be refused here, clearly, not by the database's error.
MAX_AMOUNT = 2**31 - 1


def _view(row: LimitSetting) -> UserLimit:
    return UserLimit(row.endpoint, row.served, row.window, row.unit, row.amount)  # type: ignore[arg-type]


async def set_limits(store: Store, endpoint: str, served: str, amounts: dict[str, int]) -> list[UserLimit]:
    """Set (or replace) limits by kind name, e.g. `{"rpm": 3, "tpd": 100000}`."""
    if not endpoint.strip():
        raise UserError("name the endpoint the limit is for")
    for kind, amount in amounts.items():
        if kind not in KINDS:
            raise UserError(f"unknown limit {kind!r}; use one of {', '.join(KINDS)}")
        if amount < 1:
            raise UserError(f"{kind} must be at least 1 (use `limit clear` to remove a limit)")
        if amount > MAX_AMOUNT:
            raise UserError(f"{kind} must be at most {MAX_AMOUNT} (for no limit, `limit clear` it)")
    async with store.write() as session:
        for kind, amount in amounts.items():
            window, unit = KINDS[kind]
            row = await session.scalar(
                select(LimitSetting).where(
                    LimitSetting.endpoint == endpoint,
                    LimitSetting.served == served,
                    LimitSetting.window == window,
                    LimitSetting.unit == unit,
                )
            )
            if row is None:
                session.add(
                    LimitSetting(endpoint=endpoint, served=served, window=window, unit=unit, amount=amount)
                )
            else:
                row.amount = amount
    return [
        limit for limit in await list_limits(store) if limit.endpoint == endpoint and limit.served == served
    ]


async def list_limits(store: Store) -> list[UserLimit]:
    async with store.read() as session:
        rows = await session.scalars(
            select(LimitSetting).order_by(
                LimitSetting.endpoint, LimitSetting.served, LimitSetting.unit, LimitSetting.window
            )
        )
        return [_view(row) for row in rows]


async def limits_for(store: Store, endpoint: str, served: str) -> tuple[UserLimit, ...]:
    """The endpoint's limits and the model's own: every one a call must fit.
    Asked on every admit, so from a cache that a `set` or `clear` in this
    process drops at once, and another process's within
    `changes.DEFAULT_TTL` seconds; sifted once per (endpoint, model) per
    read of the table, not per call (`_sifted`)."""
    every = await _ALL.get(store, lambda: _read_all(store))
    global _sifted
    read, sifted = _sifted
    if read is not every:  # a new read of the table (or another store's): sift it afresh
        sifted = {}
        _sifted = (every, sifted)
    found = sifted.get((endpoint, served))
    if found is None:
        found = tuple(limit for limit in every if limit.endpoint == endpoint and limit.served in ("", served))
        sifted[(endpoint, served)] = found
    return found


# The last read of every limit, and what it holds for each (endpoint, model)
# a call went to: as many entries as models called between two reads.
_sifted: tuple[tuple[UserLimit, ...], dict[tuple[str, str], tuple[UserLimit, ...]]] = ((), {})


async def _read_all(store: Store) -> tuple[UserLimit, ...]:
    async with store.read() as session:
        rows = await session.scalars(
            select(LimitSetting).order_by(
                LimitSetting.endpoint, LimitSetting.served, LimitSetting.window, LimitSetting.unit
            )
        )
        return tuple(_view(row) for row in rows)


async def clear_limits(store: Store, endpoint: str, served: str = "", kinds: tuple[str, ...] = ()) -> int:
    """Remove an endpoint's (or one model's) limits, all or the named kinds;
    how many were removed."""
    for kind in kinds:
        if kind not in KINDS:
            raise UserError(f"unknown limit {kind!r}; use one of {', '.join(KINDS)}")
    statement = delete(LimitSetting).where(LimitSetting.endpoint == endpoint, LimitSetting.served == served)
    if kinds:
        statement = statement.where(
            or_(*(and_(LimitSetting.window == KINDS[k][0], LimitSetting.unit == KINDS[k][1]) for k in kinds))
        )
    async with store.write() as session:
        result = await session.execute(statement)
        return int(result.rowcount or 0)  # type: ignore[attr-defined]
