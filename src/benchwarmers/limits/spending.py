"""Budgets enforced: each call reserves its estimate before it goes out and
settles its real cost on the reply.

    hold = await spending.reserve(key=..., collection=..., price_in=..., price_out=...,
                                  tokens_in=estimate_in, tokens_out=estimate_out)
    ...                                  # the call
    await spending.settle(hold, usage)   # its real tokens; Usage() releases it

`reserve` counts the call's estimate (the limiter's token estimate:
`calls/tokens.py`, the prompt and the reply it allows, times the model's
price) against every budget that applies to it (its gateway key's, its
collection's, the install's; each period set, in USD and in tokens) all at
once or not at all, on the limiter's counters (`counters.py`): fixed
windows that end when the budget's period does, in this process or in
Redis, where the check-and-count is one Lua script, so two workers or two
replicas never both take the last dollar. A call that does not fit raises
`BudgetExceeded` (a `LimitExceeded`: the caller's 429, with `Retry-After`
the seconds to the reset, in its format). `settle` moves each counter by
the difference between the real cost and the estimate, so a call that
failed or was cut before its usage came (no usage: nothing) gives its
whole reservation back.

A model of unknown price (None: the catalog does not know it and nobody
set it) counts in tokens only: a USD budget cannot price it, and refusing
every such call would stop local models nobody pays for; a token budget
bounds them (docs/budgets.md).

Which key: the gateway key the request came with, set by the core
services for the request's task (`paying`); the collection is the call's
own (`CallContext.collection`). A panel reserves its seats while seating
(`seat`), so a budget that cannot pay for every seat seats those it can.

A counter starts, once per process, from what `budget_spend` (and this
process's sums not yet written) says was spent in its period, unless it
runs in Redis already: a restart does not forget a period's spend.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from contextvars import ContextVar
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from benchwarmers.errors import LimitExceeded
from benchwarmers.limits.budget_spend import SpendBook, spent_since
from benchwarmers.limits.budgets import NANO, Budget, all_budgets, cost_nano, to_nano, window
from benchwarmers.limits.counters import Charge, Counters
from benchwarmers.store.db import Store
from benchwarmers.types import LeftOff, Usage

# The gateway key paying for the calls of this request ("" for the owner).
_PAYER: ContextVar[str] = ContextVar("budget_payer", default="")


def paying(key: str) -> None:
    """Name the gateway key this request's calls spend from (the core
    services do, for the request's task and the tasks it starts)."""
    _PAYER.set(key)


class BudgetExceeded(LimitExceeded):
    """A call a budget cannot pay for: refused before it was sent."""


@dataclass(slots=True)
class Hold:
    """What one call reserved: its counters' charges (each the estimate in
    its unit), whom it spends for, and the prices it is settled at."""

    charges: tuple[Charge, ...]
    scopes: tuple[tuple[str, str], ...]
    price_in: float | None
    price_out: float | None
    # Each charge's unit: "usd" (nano-dollars) or "tokens".
    units: tuple[str, ...] = ()
    settled: bool = False


@dataclass(frozen=True, slots=True)
class _Counted:
    """One counter a budget keeps: in USD (nano-dollars) or in tokens, its
    limit in that unit, and its key in `Spending._keys`. Made once per read
    of the budgets, so a call only looks them up."""

    budget: Budget
    unit: str
    limit: int
    memo: tuple[str, str, str, str]


@dataclass(frozen=True, slots=True)
class BudgetStatus:
    """A budget with its period's spend, for `GET /bench/budgets` and Quotas."""

    budget: Budget
    spent_nano: int
    spent_tokens: int
    resets_at: datetime

    @property
    def left_usd(self) -> float | None:
        return None if self.budget.usd is None else max(self.budget.usd - self.spent_nano / NANO, 0.0)

    @property
    def left_tokens(self) -> int | None:
        return None if self.budget.tokens is None else max(self.budget.tokens - self.spent_tokens, 0)


def money(usd: float) -> str:
    """Dollars as a message says them: "$0.0012", "$5"."""
    text = f"{usd:.6f}".rstrip("0").rstrip(".")
    return f"${text or '0'}"


def _iso(when: float) -> str:
    return datetime.fromtimestamp(when, UTC).isoformat(timespec="seconds")


class Spending:
    def __init__(self, store: Store, counters: Counters, *, clock: Callable[[], float] = time.time) -> None:
        self.store = store
        self.counters = counters
        self.clock = clock
        self.book = SpendBook(store)
        # (budget's scope, name, period, unit) -> its counter's key now and when its window ends.
        self._keys: dict[tuple[str, str, str, str], tuple[str, float]] = {}
        self._restored: set[str] = set()
        # The counters each (scope, name) keeps, made again when the cached read is a new one.
        self._index: tuple[tuple[Budget, ...], dict[tuple[str, str], list[_Counted]]] = ((), {})
        # The UTC day settled calls count in ("YYYY-MM-DD") and the Unix times
        # it starts and ends: worked out once a day, not per call (`_day_of`).
        self._day: tuple[str, float, float] = ("", 0.0, 0.0)

    async def _applying(self, scopes: tuple[tuple[str, str], ...]) -> list[_Counted]:
        """The counters of every budget that applies to a call in `scopes`."""
        every = await all_budgets(self.store)
        if every is not self._index[0]:
            index: dict[tuple[str, str], list[_Counted]] = {}
            for budget in every:
                counted = index.setdefault((budget.scope, budget.name), [])
                memo = (budget.scope, budget.name, budget.period)
                if budget.usd is not None:
                    counted.append(_Counted(budget, "usd", to_nano(budget.usd), (*memo, "usd")))
                if budget.tokens is not None:
                    counted.append(_Counted(budget, "tokens", budget.tokens, (*memo, "tokens")))
            self._index = (every, index)
        index = self._index[1]
        if not index:
            return []
        found: list[_Counted] = []
        for scope in scopes:
            found += index.get(scope, ())
        return found

    async def applies(self, collection: str) -> bool:
        """Whether any budget counts this request's calls to `collection`."""
        return bool(await self._applying(_scopes(_PAYER.get(), collection)))

    # ---------------------------------------------------------------- reserve

    async def reserve(
        self,
        *,
        collection: str,
        price_in: float | None,
        price_out: float | None,
        tokens_in: int,
        tokens_out: int,
        key: str | None = None,
    ) -> Hold:
        """Count this call's estimate against every budget that applies, or
        raise `BudgetExceeded` (nothing counted) naming the one it does not fit."""
        payer = _PAYER.get() if key is None else key
        scopes = _scopes(payer, collection)
        applying = await self._applying(scopes)
        hold = Hold((), scopes, price_in, price_out)
        if not applying:
            return hold
        now = self.clock()
        nano = cost_nano(tokens_in, tokens_out, price_in, price_out)
        tokens = tokens_in + tokens_out
        charges: list[Charge] = []
        owners: list[_Counted] = []
        units: list[str] = []
        keys = self._keys
        for counted in applying:
            amount = tokens if counted.unit == "tokens" else nano
            if amount is None:  # a USD budget cannot price a model of unknown price
                continue
            # The counter's key from memory; awaited only for a budget's first call or a new period.
            counter = keys.get(counted.memo)
            if counter is None or counter[1] <= now:
                counter = await self._counter(counted.budget, counted.unit, now)
            charges.append(Charge(counter[0], amount, counted.limit, 0.0, counter[1]))
            owners.append(counted)
            units.append(counted.unit)
        if not charges:
            return hold
        admission = await self.counters.take(charges, now)
        if not admission.admitted:
            blocked = admission.blocked_by
            index = charges.index(blocked) if blocked is not None else 0
            raise await self._refusal(owners[index].budget, owners[index].unit, charges[index], now)
        hold.charges = tuple(charges)
        hold.units = tuple(units)
        return hold

    async def _counter(self, budget: Budget, unit: str, now: float) -> tuple[str, float]:
        """The key of `budget`'s counter in `unit` for the period `now` is in,
        and when that period ends; the counter started from the store's
        spend the first time this process uses it. Remembered in `_keys`,
        which `reserve` reads first (a dict lookup a call, no await)."""
        start, end = window(budget.period, datetime.fromtimestamp(now, UTC))
        key = f"budget|{budget.scope}|{budget.name}|{budget.period}|{unit}|{start:%Y-%m-%d}"
        resets_at = end.timestamp()
        if key not in self._restored:
            nano, tokens = await self._spent(budget.scope, budget.name, start)
            await self.counters.put(
                key, nano if unit == "usd" else tokens, resets_at, now, only_if_absent=True
            )
            self._restored.add(key)
        self._keys[(budget.scope, budget.name, budget.period, unit)] = (key, resets_at)
        return key, resets_at

    async def _spent(self, scope: str, name: str, start: datetime) -> tuple[int, int]:
        """What the store and this process's unwritten sums say was spent since `start`."""
        nano, tokens = await spent_since(self.store, scope, name, start)
        more_nano, more_tokens = self.book.pending(scope, name, start.strftime("%Y-%m-%d"))
        return nano + more_nano, tokens + more_tokens

    async def _refusal(self, budget: Budget, unit: str, charge: Charge, now: float) -> BudgetExceeded:
        used = await self.counters.used(charge.key, now) or 0
        left = max(charge.limit - used, 0)
        if unit == "usd":
            amounts = f"{money(left / NANO)} of {money(charge.limit / NANO)} left"
        else:
            amounts = f"{left} of {charge.limit} tokens left"
        message = f"{budget.label}: {amounts}, resets {_iso(charge.resets_at)}"
        return BudgetExceeded(message, frees_at=charge.resets_at)

    # ----------------------------------------------------------------- settle

    async def settle(self, hold: Hold, usage: Usage) -> None:
        """Count the call's real cost in place of its estimate (once; a call
        that never went out, failed or was cut settles with `Usage()`: its
        reservation given back), and add it to the spend kept in the store."""
        if hold.settled:
            return
        hold.settled = True
        tokens = usage.input_tokens + usage.output_tokens
        nano = cost_nano(usage.input_tokens, usage.output_tokens, hold.price_in, hold.price_out)
        now = self.clock()
        if hold.charges:
            moves = []
            for charge, unit in zip(hold.charges, hold.units, strict=True):
                actual = tokens if unit == "tokens" else (nano or 0)
                if actual != charge.amount:  # (`_replace` costs six times a named tuple made whole)
                    moves.append(
                        Charge(charge.key, actual - charge.amount, charge.limit, 0.0, charge.resets_at)
                    )
            if moves:
                await self.counters.adjust(moves, now)
        self.book.add(hold.scopes, self._day_of(now), nano or 0, tokens)

    def _day_of(self, now: float) -> str:
        """`now`'s UTC day as the spend book keys it. Every settled call asks,
        and making and formatting a datetime each time cost 9 µs a call on the
        loaded benchmark box (docs/benchmarks.md, issue 37)."""
        day, starts, ends = self._day
        if not starts <= now < ends:
            start, end = window("day", datetime.fromtimestamp(now, UTC))
            day = start.strftime("%Y-%m-%d")
            self._day = (day, start.timestamp(), end.timestamp())
        return day

    # ------------------------------------------------------------------ seats

    async def seat(
        self,
        seats: Sequence[Any],
        estimates: Sequence[tuple[int, int]],
        *,
        collection: str,
        order: str,
    ) -> tuple[dict[int, Hold], list[LeftOff], list[BudgetExceeded]]:
        """Reserve for a panel's seats (each `seats[i].model` with its
        estimate), cheapest first or in seat order ("record": the seating's
        own, best first); the seats a budget cannot pay for are left off
        with the reason. Holds by seat index, and the refusals."""
        holds: dict[int, Hold] = {}
        left_off: list[LeftOff] = []
        refusals: list[BudgetExceeded] = []
        indices = list(range(len(seats)))
        if order == "cheapest":
            indices.sort(key=lambda i: _price_rank(seats[i].model, *estimates[i]))
        for i in indices:
            model = seats[i].model
            try:
                holds[i] = await self.reserve(
                    collection=collection,
                    price_in=model.price_in,
                    price_out=model.price_out,
                    tokens_in=estimates[i][0],
                    tokens_out=estimates[i][1],
                )
            except BudgetExceeded as exc:
                # "budget: key alice per day: $0.01 of $5 left, resets ...".
                left_off.append(LeftOff(model.alias, f"budget: {exc.message.removeprefix('budget ')}"))
                refusals.append(exc)
        return holds, left_off, refusals

    # ----------------------------------------------------------------- status

    async def status(self) -> list[BudgetStatus]:
        """Every budget with what its period has spent so far and when it resets."""
        now = self.clock()
        moment = datetime.fromtimestamp(now, UTC)
        out = []
        for budget in await all_budgets(self.store):
            start, end = window(budget.period, moment)
            stored: tuple[int, int] | None = None
            spent = []
            for unit, counted in (("usd", budget.usd is not None), ("tokens", budget.tokens is not None)):
                value = None
                if counted:
                    key, _ends = await self._counter(budget, unit, now)  # started, as a call would
                    value = await self.counters.used(key, now)
                if value is None:
                    stored = stored or await self._spent(budget.scope, budget.name, start)
                    value = stored[0 if unit == "usd" else 1]
                spent.append(max(value, 0))
            out.append(BudgetStatus(budget, spent[0], spent[1], end))
        return out

    async def status_of(self, budget: Budget) -> BudgetStatus:
        """One budget's status (a removed one's spend too: what `PUT` answers)."""
        for status in await self.status():
            if status.budget == budget:
                return status
        start, end = window(budget.period, datetime.fromtimestamp(self.clock(), UTC))
        nano, tokens = await self._spent(budget.scope, budget.name, start)
        return BudgetStatus(budget, nano, tokens, end)

    async def close(self) -> None:
        await self.book.close()


def _scopes(key: str, collection: str) -> tuple[tuple[str, str], ...]:
    scopes = [("install", "")]
    if collection:
        scopes.append(("collection", collection))
    if key:
        scopes.append(("key", key))
    return tuple(scopes)


def _price_rank(model: Any, tokens_in: int, tokens_out: int) -> tuple[int, float]:
    """Cheapest first by the estimate's cost; a model of unknown price after the priced ones."""
    nano = cost_nano(tokens_in, tokens_out, model.price_in, model.price_out)
    return (1, 0.0) if nano is None else (0, float(nano))


def status_json(status: BudgetStatus) -> dict[str, Any]:
    """One budget as `GET /bench/budgets` gives it (docs/api.md)."""
    budget = status.budget
    left_usd = status.left_usd
    return {
        "scope": budget.scope,
        "name": budget.name,
        "period": budget.period,
        "usd": budget.usd,
        "tokens": budget.tokens,
        "spentUsd": round(status.spent_nano / NANO, 9),
        "spentTokens": status.spent_tokens,
        "leftUsd": None if left_usd is None else round(left_usd, 9),
        "leftTokens": status.left_tokens,
        "resetsAt": status.resets_at.isoformat(timespec="seconds"),
    }
