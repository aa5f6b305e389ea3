"""Budgets enforced: each call reserves its estimate before it goes out and
settles its real cost on the reply.

    hold = await spending.reserve(key=..., collection=..., price_in=..., price_out=...,
                                  tokens_in=estimate_in, tokens_out=estimate_out)
    ...                                  # the call
    await spending.settle(hold, usage)   # its real tokens; Usage() releases it

`reserve` counts the call's estimate (the limiter's token estimate:
`calls/tokens.py`, the prompt and the reply it allows, times the model's
price) against every budget that applies to it (its gateway key's, its
collection's, the install's; each period set) all at once or not at all,
on the limiter's counters (`counters.py`): one window per budget and
period that counts its USD and its tokens together (a pair) and ends when
the period does, in this process or in Redis, where the check-and-count is
one Lua script, so two workers or two replicas never both take the last
dollar. A call that does not fit raises `BudgetExceeded` (a
`LimitExceeded`: the caller's 429, with `Retry-After` the seconds to the
reset, in its format). `settle` moves each window by the difference
between the real cost and the estimate, so a call that failed or was cut
before its usage came (no usage: nothing) gives its whole reservation back.

A model of unknown price (None: the catalog does not know it and nobody
set it) counts in tokens only: a USD budget cannot price it, and refusing
every such call would stop local models nobody pays for; a token budget
bounds them (docs/budgets.md).

Which key: the gateway key the request came with, set by the core
services for the request's task (`paying`); the collection is the call's
own (`CallContext.collection`). A panel reserves its seats while seating
(`seat`), so a budget that cannot pay for every seat seats those it can;
one it can pay for whole reserves them all in one take.

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
from benchwarmers.limits.budget_spend import SpendBook, scopes, spent_since
from benchwarmers.limits.budgets import NANO, Budget, all_budgets, cost_nano, to_nano, window
from benchwarmers.limits.counters import UNLIMITED, Counters, PairCharge
from benchwarmers.store.db import Store
from benchwarmers.types import LeftOff, Usage

# The gateway key paying for the calls of this request ("" for the owner).
_PAYER: ContextVar[str] = ContextVar("budget_payer", default="")
# The budgets a (key, collection) counts against, kept for this many pairs at most.
_APPLYING_CAP = 4096


def paying(key: str) -> None:
    """Name the gateway key this request's calls spend from (the core
    services do, for the request's task and the tasks it starts)."""
    _PAYER.set(key)


class BudgetExceeded(LimitExceeded):
    """A call a budget cannot pay for: refused before it was sent."""


@dataclass(slots=True)
class Hold:
    """What one call reserved: the windows it was counted in (their keys,
    limits and ends; the amounts are not this call's where a panel counted
    its seats in one take), its estimate in nano-dollars (None: a model of
    unknown price, counted in tokens only) and in tokens, whom it spends
    for, and the prices it is settled at."""

    windows: tuple[PairCharge, ...]
    key: str
    collection: str
    price_in: float | None
    price_out: float | None
    nano: int | None = None
    tokens: int = 0
    settled: bool = False


@dataclass(frozen=True, slots=True)
class Counted:
    """One budget as a call counts against it: its limits in nano-dollars
    and in tokens (`UNLIMITED` for the one it has not), and its window's
    key in `Spending._windows`. Made once per read of the budgets."""

    budget: Budget
    nano_limit: int
    token_limit: int
    memo: tuple[str, str, str]


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
        # (budget's scope, name, period) -> its window's key now and when the window ends.
        self._windows: dict[tuple[str, str, str], tuple[str, float]] = {}
        # The windows this process has started (from the store's spend), with their budgets.
        self._opened: dict[str, Budget] = {}
        # The budgets as last read, the counters each (scope, name) keeps, and
        # those each (key, collection) counts against: made again when the cached read is a new one.
        self._every: tuple[Budget, ...] = ()
        self._by_scope: dict[tuple[str, str], list[Counted]] = {}
        self._by_call: dict[tuple[str, str], tuple[Counted, ...]] = {}
        # The UTC day settled calls count in ("YYYY-MM-DD") and the Unix times
        # it starts and ends: worked out once a day, not per call (`_day_of`).
        self._day: tuple[str, float, float] = ("", 0.0, 0.0)

    async def _applying(self, key: str, collection: str) -> tuple[Counted, ...]:
        """The budgets a call of `key` to `collection` counts against."""
        every = await all_budgets(self.store)
        if every is not self._every:
            by_scope: dict[tuple[str, str], list[Counted]] = {}
            for budget in every:
                nano_limit = UNLIMITED if budget.usd is None else to_nano(budget.usd)
                token_limit = UNLIMITED if budget.tokens is None else budget.tokens
                counted = Counted(budget, nano_limit, token_limit, (budget.scope, budget.name, budget.period))
                by_scope.setdefault((budget.scope, budget.name), []).append(counted)
            self._every, self._by_scope, self._by_call = every, by_scope, {}
        if not self._by_scope:
            return ()
        found = self._by_call.get((key, collection))
        if found is None:
            found = tuple(c for scope in scopes(key, collection) for c in self._by_scope.get(scope, ()))
            if len(self._by_call) >= _APPLYING_CAP:
                self._by_call.clear()
            self._by_call[(key, collection)] = found
        return found

    async def applying(self, collection: str) -> tuple[Counted, ...]:
        """The budgets this request's calls to `collection` count against
        (none, the usual ask: `()`), for `seat`."""
        return await self._applying(_PAYER.get(), collection)

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
        applying = await self._applying(payer, collection)
        if not applying:
            return Hold((), payer, collection, price_in, price_out)
        nano = cost_nano(tokens_in, tokens_out, price_in, price_out)
        tokens = tokens_in + tokens_out
        now = self.clock()
        while (charges := self._charges(applying, nano, tokens, now)) is None:
            await self._open(applying, now)
        if charges:
            refused = await self.counters.take_pairs(charges, now)
            if refused >= 0:
                raise await self._refusal(charges[refused], now)
        return Hold(tuple(charges), payer, collection, price_in, price_out, nano, tokens)

    def unbudgeted(self, *, collection: str, price_in: float | None, price_out: float | None) -> Hold:
        """What `reserve` returns when no budget applies, for a call whose
        panel's plan has just found none (`panel/plan.py`): the same hold,
        without reading the budgets again for each seat."""
        return Hold((), _PAYER.get(), collection, price_in, price_out)

    def _charges(
        self, applying: tuple[Counted, ...], nano: int | None, tokens: int, now: float
    ) -> list[PairCharge] | None:
        """`nano` and `tokens` in the window of each budget that applies; a
        model of unknown price (`nano` None) in tokens only, so a budget in
        USD alone cannot price it and does not count it. None when a window
        is not open yet (a budget's first call here, or a new period): `_open`."""
        charges = []
        windows = self._windows
        for counted in applying:
            found = windows.get(counted.memo)
            if found is None or found[1] <= now:
                return None
            if nano is not None:
                charge = PairCharge(found[0], nano, tokens, counted.nano_limit, counted.token_limit, found[1])
            elif counted.budget.tokens is not None:
                charge = PairCharge(found[0], 0, tokens, UNLIMITED, counted.token_limit, found[1])
            else:
                continue
            charges.append(charge)
        return charges

    async def _open(self, applying: tuple[Counted, ...], now: float) -> None:
        """The windows of these budgets for the period `now` is in, opened."""
        for counted in applying:
            found = self._windows.get(counted.memo)
            if found is None or found[1] <= now:
                await self._window(counted.budget, now)

    async def _window(self, budget: Budget, now: float) -> tuple[str, float]:
        """The key of `budget`'s window for the period `now` is in, and when
        that period ends; the window started from the store's spend the
        first time this process uses it. Remembered in `_windows`, which
        `_charges` reads (a dict lookup a call, no await)."""
        start, end = window(budget.period, datetime.fromtimestamp(now, UTC))
        key = f"budget|{budget.scope}|{budget.name}|{budget.period}|{start:%Y-%m-%d}"
        resets_at = end.timestamp()
        if key not in self._opened:
            nano, tokens = await self._spent(budget.scope, budget.name, start)
            await self.counters.put_pair(key, nano, tokens, resets_at, now, only_if_absent=True)
        self._opened[key] = budget
        self._windows[(budget.scope, budget.name, budget.period)] = (key, resets_at)
        return key, resets_at

    async def _spent(self, scope: str, name: str, start: datetime) -> tuple[int, int]:
        """What the store and this process's unwritten sums say was spent since `start`."""
        nano, tokens = await spent_since(self.store, scope, name, start)
        more_nano, more_tokens = self.book.pending(scope, name, start.strftime("%Y-%m-%d"))
        return nano + more_nano, tokens + more_tokens

    async def _refusal(self, charge: PairCharge, now: float) -> BudgetExceeded:
        """The refusal of the budget whose window `charge` would not fit, in
        the unit it does not fit in (USD first when both)."""
        used = await self.counters.used_pair(charge.key, now) or (0, 0)
        if used[0] + charge.first > charge.first_limit:
            left = max(charge.first_limit - used[0], 0)
            amounts = f"{money(left / NANO)} of {money(charge.first_limit / NANO)} left"
        else:
            left = max(charge.second_limit - used[1], 0)
            amounts = f"{left} of {charge.second_limit} tokens left"
        message = f"{self._opened[charge.key].label}: {amounts}, resets {_iso(charge.resets_at)}"
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
        if hold.windows:
            more_nano = 0 if hold.nano is None else (nano or 0) - hold.nano
            more_tokens = tokens - hold.tokens
            if more_nano or more_tokens:
                await self.counters.adjust_pairs(hold.windows, more_nano, more_tokens, now)
        self.book.add(hold.key, hold.collection, self._day_of(now), nano or 0, tokens)

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
        applying: tuple[Counted, ...],
        seats: Sequence[Any],
        estimates: Sequence[tuple[int, int]],
        *,
        collection: str,
        order: str,
    ) -> tuple[dict[int, Hold], list[LeftOff], list[BudgetExceeded]]:
        """Reserve for a panel's seats (each `seats[i].model` with its
        estimate) on the budgets `applying` (from `applying`): all in one
        take when the budgets pay for every seat (the usual ask), else one
        at a time, cheapest first or in seat order ("record": the seating's
        own, best first), the seats a budget cannot pay for left off with
        the reason. Holds by seat index, and the refusals."""
        key = _PAYER.get()
        models = [seat.model for seat in seats]
        nanos = [
            cost_nano(tokens_in, tokens_out, model.price_in, model.price_out)
            for model, (tokens_in, tokens_out) in zip(models, estimates, strict=True)
        ]
        tokens = [tokens_in + tokens_out for tokens_in, tokens_out in estimates]
        priced = [nano for nano in nanos if nano is not None]
        if len(priced) == len(nanos):
            # Every seat priced: one take of them all counts what taking them
            # one by one would, and fits only if each would (amounts are not negative).
            now = self.clock()
            while (charges := self._charges(applying, sum(priced), sum(tokens), now)) is None:
                await self._open(applying, now)
            if await self.counters.take_pairs(charges, now) < 0:
                windows = tuple(charges)
                paid = {
                    i: Hold(windows, key, collection, model.price_in, model.price_out, nanos[i], tokens[i])
                    for i, model in enumerate(models)
                }
                return paid, [], []
        holds: dict[int, Hold] = {}
        left_off: list[LeftOff] = []
        refusals: list[BudgetExceeded] = []
        indices = list(range(len(seats)))
        if order == "cheapest":  # by the estimate's cost; a model of unknown price after the priced ones
            indices.sort(key=lambda i: (1, 0) if nanos[i] is None else (0, nanos[i]))
        for i in indices:
            model = models[i]
            try:
                holds[i] = await self.reserve(
                    collection=collection,
                    price_in=model.price_in,
                    price_out=model.price_out,
                    tokens_in=estimates[i][0],
                    tokens_out=estimates[i][1],
                    key=key,
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
            key, _ends = await self._window(budget, now)  # started, as a call would
            spent = await self.counters.used_pair(key, now)
            if spent is None:
                spent = await self._spent(budget.scope, budget.name, start)
            out.append(BudgetStatus(budget, max(spent[0], 0), max(spent[1], 0), end))
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
