"""The limiter: may this call go out now, and what did the provider say?

The caller (`calls/caller.py`) asks three things of it, in order:

    await limiter.admit(endpoint, served, tokens=estimate, max_wait=timeout)
    await limiter.learn(endpoint, served, status=..., headers=..., body=..., retry_after=...)
    await limiter.spent(endpoint, served, usage=usage)

`admit` counts the request and its estimated tokens against every limit
that applies (the user's, on the endpoint and on the model; what the
provider last said; a rest after a 429) all at once or not at all. When a
limit is full it waits, without blocking the loop, if room frees within
`max_wait`, else it raises `LimitExceeded` with the time it frees, so the
call is never sent. Waiters on one model queue first come, first served.

`learn` keeps what headers and 429 bodies say, per endpoint when its
limits count per key (models behind one key share them) or per model when
they count per model (`scope.py` says which, and learns it from the
headers), in the counters and in `learned_limits` for the quotas view (when
they are news: see `_worth_keeping`); a 429 rests the model until the reset
(`rest.py`): its row says `resting` (seating skips
it: `rest.is_resting(model)`), this limiter refuses calls to it meanwhile,
and it is made `available` again the moment the rest ends. What was
learned and who rests is read back from the store on an endpoint's first
call, so a restarted server keeps to it.

`spent` settles the token estimate with the provider's real count, on
the token limits the estimate was counted against, in place (a call is
charged once: `Counters.settle`). Both are remembered in a
context variable, so it must be called from the task that called `admit`
(or one started from it), which the caller does; a call that no token limit
counted costs `spent` nothing.

Counters are keyed so several servers sharing a Redis share them: the
user's minute limits are sliding windows, day and month limits fixed
calendar (UTC) windows restored from the store on first use after a start.
"""

from __future__ import annotations

import asyncio
import functools
import math
import time
from collections.abc import Awaitable, Callable, Mapping
from contextvars import ContextVar
from datetime import UTC, datetime
from typing import Any, NamedTuple, cast

from sqlalchemy import Table, delete, select
from sqlalchemy.dialects.postgresql import insert as pg_insert
from sqlalchemy.dialects.sqlite import insert as sqlite_insert

from benchwarmers import metrics
from benchwarmers.config import tunables
from benchwarmers.errors import LimitExceeded
from benchwarmers.limits import ledger
from benchwarmers.limits.counters import Admission, Charge, Counters
from benchwarmers.limits.headers import LearnedLimit, learn
from benchwarmers.limits.rest import as_utc, rest_model, wake_rested
from benchwarmers.limits.scope import effective_scope, endpoint_scopes
from benchwarmers.limits.user_limits import MAX_AMOUNT, UserLimit, limits_for
from benchwarmers.store.db import Store
from benchwarmers.store.schema import Endpoint, Model
from benchwarmers.store.schema import LearnedLimit as LearnedLimitRow
from benchwarmers.types import LimitScope, Usage

MINUTE = 60.0
DEFAULT_REST = tunables.DEFAULT_REST.value
KEEP_EVERY = tunables.LIMITS_KEEP_EVERY.value

# Counter keys of what providers said start so (`_learned_key`).
LEARNED = "learned|"

_ADMITTED = Admission(True)

# (endpoint, served) -> the user's token-limit charges made at admit (each
# counting the estimate) and the take's receipt, for `spent` to settle.
_Estimate = tuple[tuple[Charge, ...], object]
_NO_ESTIMATE: _Estimate = ((), None)
_estimates: ContextVar[dict[tuple[str, str], _Estimate] | None] = ContextVar("limit_estimates", default=None)


class _Known(NamedTuple):
    """A provider's limit as the limiter enforces it until `resets_at`:
    `limit` is the ceiling counted against (what is left, when the provider
    named no limit), `stated` the limit the provider named, if it did; `key`
    its counter's (`_learned_key`). Made on every reply that states it: a
    named tuple, not a frozen dataclass, for that."""

    limit: int
    resets_at: float
    stated: int | None
    key: str


class _UserCharges(NamedTuple):
    """The charges a call to one model makes against the user's limits
    (`Limiter._user_charges`), the same call after call: made again only
    when the limits are read again, the token estimate changes or a day's
    (month's) window ends (`until`)."""

    limits: tuple[UserLimit, ...]
    tokens: int
    until: float
    charges: tuple[Charge, ...]
    # Those that count tokens (the estimate `spent` settles).
    estimated: tuple[Charge, ...]


# What a learned limit is keyed by on its endpoint: (served, or "" when per key; unit; window).
_Who = tuple[str, str, str]
# A limit a reply stated: (unit, window, the limit it named).
_Ceiling = tuple[str, str, int | None]


def _iso(when: float) -> str:
    return datetime.fromtimestamp(when, UTC).isoformat(timespec="seconds")


class Limiter:
    def __init__(
        self,
        store: Store,
        counters: Counters,
        *,
        clock: Callable[[], float] = time.time,
        sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
        default_rest: float = DEFAULT_REST,
    ) -> None:
        self.store = store
        self.counters = counters
        # The time it runs by: waits, rests and their end are reckoned on `clock` and
        # waited out with `sleep` (a test moves both: a controllable clock, no real wait).
        self.clock = clock
        self.sleep = sleep
        self.default_rest = default_rest
        self._known: dict[str, dict[_Who, _Known]] = {}
        # Endpoints whose models reported different ceilings for one limit: per model.
        self._per_model: set[str] = set()
        # endpoint -> (unit, window) -> served -> the ceiling it reported.
        self._ceilings: dict[str, dict[tuple[str, str], dict[str, int]]] = {}
        self._rests: dict[tuple[str, str], float] = {}
        self._queues: dict[tuple[str, str], asyncio.Lock] = {}
        self._restored: set[str] = set()
        # A user's limit -> its counter's key now, and when that key's
        # calendar window ends (0 for a minute: the key never changes).
        self._keys: dict[UserLimit, tuple[str, float]] = {}
        # A user's limit -> the charge last made against it, made again only
        # when the amount (a token estimate) or the calendar window changes.
        self._last_charges: dict[UserLimit, Charge] = {}
        self._recalled: set[str] = set()
        # (endpoint, served) -> its user charges as last made.
        self._made: dict[tuple[str, str], _UserCharges] = {}
        self._wakers: set[asyncio.Task[None]] = set()
        # endpoint -> when its learned limits were last written, and their ceilings then.
        self._kept: dict[tuple[str, str], tuple[float, tuple[_Ceiling, ...]]] = {}
        # (endpoint, served) -> the ceilings its last reply stated (`learn`).
        self._said: dict[tuple[str, str], tuple[_Ceiling, ...]] = {}

    # ------------------------------------------------------------------ scope

    async def scope(self, endpoint: str) -> LimitScope:
        """Whom `endpoint`'s provider limits count (`scope.py`)."""
        return self._scope_in(await endpoint_scopes(self.store), endpoint)

    def _scope_in(self, scopes: dict[str, tuple[str, str]], endpoint: str) -> LimitScope:
        chosen, base_url = scopes.get(endpoint, ("", ""))
        return effective_scope(chosen, base_url, endpoint in self._per_model)

    def learned_per_model(self, endpoint: str) -> bool:
        return endpoint in self._per_model

    def _who(self, scopes: dict[str, tuple[str, str]], endpoint: str, served: str) -> str:
        """Whose limits `served`'s calls count ("" for the key's), by `scopes`
        (`endpoint_scopes`, which the caller awaits: asked at every admit and
        reply of an endpoint with learned limits, one coroutine fewer)."""
        return served if self._scope_in(scopes, endpoint) == "model" else ""

    async def _compare_ceilings(self, endpoint: str, served: str, limits: tuple[LearnedLimit, ...]) -> None:
        """Two models stating different ceilings for one limit cannot share a
        counter: the endpoint counts per model from now on, and what was kept
        for the whole key is dropped (it was one model's count)."""
        seen = self._ceilings.setdefault(endpoint, {})
        for limit in limits:
            if limit.limit is None:
                continue
            by_model = seen.setdefault((limit.unit, limit.window), {})
            if by_model.get(served) == limit.limit:
                continue  # what this model said before: nothing new
            by_model[served] = limit.limit
            if len(set(by_model.values())) > 1 and endpoint not in self._per_model:
                self._per_model.add(endpoint)
                known = self._known.get(endpoint, {})
                for key in [k for k in known if not k[0]]:
                    del known[key]
                async with self.store.write() as session:
                    await session.execute(
                        delete(LearnedLimitRow).where(
                            LearnedLimitRow.endpoint == endpoint, LearnedLimitRow.served == ""
                        )
                    )

    # ------------------------------------------------------------------ admit

    async def admit(self, endpoint: str, served: str, *, tokens: int, max_wait: float) -> None:
        started = self.clock()
        deadline = started + max(max_wait, 0.0)
        # First come, first served: one model's admits take turns (a check
        # is one small read; seats of a panel are different models and do
        # not queue behind each other).
        waited = False
        try:
            queue = self._queues.get((endpoint, served))
            if queue is None:
                queue = self._queues[(endpoint, served)] = asyncio.Lock()
            async with queue:
                while (frees_at := await self._attempt(endpoint, served, tokens, deadline)) is not None:
                    waited = True
                    await self.sleep(max(frees_at - self.clock(), 0.0))
        except LimitExceeded:
            metrics.LIMITER_REFUSALS.labels(endpoint).inc()
            raise
        if waited:
            metrics.LIMITER_WAITS.labels(endpoint).inc()
            metrics.LIMITER_WAIT_SECONDS.labels(endpoint).observe(self.clock() - started)

    async def _attempt(self, endpoint: str, served: str, tokens: int, deadline: float) -> float | None:
        """Count the call if it fits now (None), else say when room frees;
        raise when that is after the deadline, or never."""
        now = self.clock()
        await self._recall(endpoint, now)
        rest = self._rests.get((endpoint, served), 0.0)
        if rest > now:
            admission, reached = Admission(False, rest), f"{endpoint}/{served} is resting after a 429"
        else:
            limits = await limits_for(self.store, endpoint, served)
            made = self._made.get((endpoint, served))
            if made is None or made.limits is not limits or made.tokens != tokens or made.until <= now:
                made = await self._user_charges(endpoint, served, limits, tokens, now)
            charges = list(made.charges)
            learned = self._known.get(endpoint)
            if learned:  # what providers said of their limits here
                who = self._who(await endpoint_scopes(self.store), endpoint, served)
                _learned_charges(charges, learned, who, tokens, now)
            # No limit applies (the usual call): nothing to count, not even in Redis.
            admission = await self.counters.take(charges, now) if charges else _ADMITTED
            if admission.admitted:
                estimated = made.estimated
                known = _estimates.get()
                # Only a call a token limit counted has an estimate to settle
                # (or one that replaces an earlier admit's in this task).
                if estimated or (known and (endpoint, served) in known):
                    estimates = dict(known or {})
                    estimates[(endpoint, served)] = (estimated, admission.receipt)
                    _estimates.set(estimates)
                return None
            blocked = admission.blocked_by
            limit = self._describe(endpoint, limits, blocked) if blocked else "a limit"
            frees_at = admission.frees_at
            if frees_at is None and blocked is not None and blocked.key.startswith(LEARNED):
                # What a provider said is used up frees when it resets, whatever the call needs.
                frees_at = blocked.resets_at
            if frees_at is None:  # only a token count bigger than the user's limit never fits
                raise LimitExceeded(f"this call needs about {tokens} tokens, more than {limit} allows")
            admission = Admission(False, frees_at, blocked)
            reached = f"{limit} is used up"
        assert admission.frees_at is not None
        if admission.frees_at > deadline:
            raise LimitExceeded(
                f"{reached}; it frees at {_iso(admission.frees_at)}", frees_at=admission.frees_at
            )
        return admission.frees_at

    async def _recall(self, endpoint: str, now: float) -> None:
        """Once per endpoint per process, take up what the store says is still
        in force (limits providers reported, models resting after a 429), so
        a restarted server, or another one, does not call into a known wall."""
        if endpoint in self._recalled:
            return
        self._recalled.add(endpoint)
        moment = datetime.fromtimestamp(now, UTC)
        async with self.store.read() as session:
            learned = list(
                await session.scalars(select(LearnedLimitRow).where(LearnedLimitRow.endpoint == endpoint))
            )
            resting = (
                await session.execute(
                    select(Model.served, Model.resting_until)
                    .join(Endpoint)
                    .where(Endpoint.name == endpoint, Model.status == "resting", Model.resting_until > moment)
                )
            ).all()
        known = self._known.setdefault(endpoint, {})
        if any(row.served for row in learned):  # kept per model: that is what was learned
            self._per_model.add(endpoint)
        for row in learned:
            if row.remaining is None or row.resets_at is None or as_utc(row.resets_at).timestamp() <= now:
                continue
            resets_at = as_utc(row.resets_at).timestamp()
            ceiling = row.limit if row.limit is not None else row.remaining
            key = (row.served, row.unit, row.window)
            if key not in known:
                known[key] = _Known(ceiling, resets_at, row.limit, _learned_key(endpoint, *key))
                used = max(ceiling - row.remaining, 0)
                await self.counters.put(
                    _learned_key(endpoint, *key), used, resets_at, now, only_if_absent=True
                )
        for served, until in resting:  # the query only finds rests with an end
            rest = as_utc(until).timestamp() if until is not None else now
            self._rests[(endpoint, served)] = max(rest, self._rests.get((endpoint, served), 0.0))

    async def _user_charges(
        self, endpoint: str, served: str, limits: tuple[UserLimit, ...], tokens: int, now: float
    ) -> _UserCharges:
        """The call's charges against the user's `limits`, in their order,
        kept for the calls after it (`_made`)."""
        charges: tuple[Charge, ...] = ()
        for limit in limits:
            charges += (await self._user_charge(limit, 1 if limit.unit == "requests" else tokens, now),)
        until = min((c.resets_at for c in charges if not c.is_sliding), default=math.inf)
        estimated = tuple(c for c, x in zip(charges, limits, strict=True) if x.unit == "tokens")
        made = self._made[(endpoint, served)] = _UserCharges(limits, tokens, until, charges, estimated)
        return made

    def _describe(self, endpoint: str, limits: tuple[UserLimit, ...], blocked: Charge) -> str:
        """The limit that refused a call, in words."""
        for limit in limits:
            if self._keys.get(limit, ("", 0.0))[0] == blocked.key:
                return f"the limit of {limit.describe}"
        for (owner, unit, window), known in self._known.get(endpoint, {}).items():
            if known.key == blocked.key:
                return _describe_learned(endpoint, owner, unit, window, known.stated)
        return "a limit"

    async def _user_charge(self, limit: UserLimit, amount: int, now: float) -> Charge:
        """`amount` against `limit`: its counter's key, and for a day or a
        month the calendar window `now` falls in (worked out once per
        window, not per call: `_keys`)."""
        last = self._last_charges.get(limit)
        if last is not None and last.amount == amount and (last.is_sliding or last.resets_at > now):
            return last  # a request limit's charge is the same call after call (Charge is immutable)
        charge = await self._new_user_charge(limit, amount, now)
        self._last_charges[limit] = charge
        return charge

    async def _new_user_charge(self, limit: UserLimit, amount: int, now: float) -> Charge:
        key, resets_at = self._keys.get(limit, ("", 0.0))
        if limit.window == "minute":
            if not key:
                key = _period_key(limit, "minute")
                self._keys[limit] = (key, 0.0)
            return Charge.sliding(key, amount, limit.amount, MINUTE)
        if resets_at <= now:  # the first call, or the day (month) turned
            when = datetime.fromtimestamp(now, UTC)
            if limit.window == "day":
                period, resets = when.strftime("%Y-%m-%d"), ledger.next_day(when)
            else:
                period, resets = when.strftime("%Y-%m"), ledger.next_month(when)
            key, resets_at = _period_key(limit, period), resets.timestamp()
            await self._restore(key, limit, when, resets_at, now)
            self._keys[limit] = (key, resets_at)
        return Charge.fixed(key, amount, limit.amount, resets_at)

    async def _restore(
        self, key: str, limit: UserLimit, when: datetime, resets_at: float, now: float
    ) -> None:
        """Start a day or month counter from what the store says was spent,
        once per process, unless the counter (in Redis) already runs."""
        if key in self._restored:
            return
        if limit.window == "day":
            spent = await ledger.spent_since(self.store, ledger.day_start(when), limit.endpoint, limit.served)
        else:
            spent = await ledger.spent_in_month(
                self.store, ledger.month_of(when), limit.endpoint, limit.served
            )
        used = spent.requests if limit.unit == "requests" else spent.tokens
        await self.counters.put(key, used, resets_at, now, only_if_absent=True)
        self._restored.add(key)

    # ------------------------------------------------------------------ learn

    async def learn(
        self,
        endpoint: str,
        served: str,
        *,
        status: int,
        headers: Mapping[str, str],
        body: str = "",
        retry_after: float | None = None,
    ) -> None:
        now = self.clock()
        learned = learn(status, headers, body, now, retry_after=retry_after)
        limits = learned.limits
        if not limits and status != 429:
            return  # the reply said nothing about limits (most replies of most providers)
        # Every reply repeats its provider's ceilings: compared only when they are not what
        # this model said last (`_compare_ceilings` would find nothing new).
        ceilings = tuple([(limit.unit, limit.window, limit.limit) for limit in limits])
        if self._said.get((endpoint, served)) != ceilings:
            await self._compare_ceilings(endpoint, served, limits)
            self._said[(endpoint, served)] = ceilings
        who = self._who(await endpoint_scopes(self.store), endpoint, served)
        known = self._known.setdefault(endpoint, {})
        used_up = False
        for unit, window, stated, remaining, resets_at, _source in limits:
            used_up = used_up or remaining == 0
            if remaining is None or resets_at is None or resets_at <= now:
                continue
            ceiling = stated if stated is not None else remaining
            key = _learned_key(endpoint, who, unit, window)
            known[(who, unit, window)] = _Known(ceiling, resets_at, stated, key)
            await self.counters.put(key, max(ceiling - remaining, 0), resets_at, now)
        if limits and self._worth_keeping((endpoint, who), ceilings, status == 429 or used_up, now):
            await self._keep(endpoint, who, limits, now)
        if status == 429:
            await self._rest(endpoint, served, learned.retry_at, learned.limits, now)

    async def _rest(
        self, endpoint: str, served: str, retry_at: float | None, limits: tuple[LearnedLimit, ...], now: float
    ) -> None:
        if retry_at is None:
            exhausted = [
                x.resets_at for x in limits if x.remaining == 0 and x.resets_at and x.resets_at > now
            ]
            retry_at = max(exhausted) if exhausted else now + self.default_rest
        until = max(retry_at, self._rests.get((endpoint, served), 0.0))
        self._rests[(endpoint, served)] = until
        reason = f"rate limited by {endpoint} (HTTP 429) until {_iso(until)}"
        if await rest_model(self.store, endpoint, served, datetime.fromtimestamp(until, UTC), reason):
            task = asyncio.get_running_loop().create_task(self._wake_at(until))
            self._wakers.add(task)
            task.add_done_callback(self._wakers.discard)

    async def forget_learned(self, endpoint: str, served: str, unit: str, window: str) -> int:
        """Forget what a provider said of one limit (the user knows better: a
        plan changed, a one-off 429 rested a whole endpoint): its row in
        `learned_limits`, and this process's memory of it, so calls stop
        counting against it now. Another process forgets it when the window
        the provider named resets. Returns the rows removed."""
        self._known.get(endpoint, {}).pop((served, unit, window), None)
        self._kept.pop((endpoint, served), None)
        async with self.store.write() as session:
            removed = await session.execute(
                delete(LearnedLimitRow).where(
                    LearnedLimitRow.endpoint == endpoint,
                    LearnedLimitRow.served == served,
                    LearnedLimitRow.unit == unit,
                    LearnedLimitRow.window == window,
                )
            )
        return int(removed.rowcount or 0)  # type: ignore[attr-defined]

    async def _wake_at(self, until: float) -> None:
        """Bring rested models back the moment their rest ends."""
        await self.sleep(max(until - self.clock(), 0.0) + 0.01)
        await wake_rested(self.store, datetime.fromtimestamp(self.clock(), UTC))

    def _worth_keeping(
        self, endpoint: tuple[str, str], ceilings: tuple[_Ceiling, ...], urgent: bool, now: float
    ) -> bool:
        """Providers repeat their limits on every reply, and a write per call
        would sit in front of each seat's first byte. The store (the quotas
        view, a restart) gets them when they are news: the first time, new
        `ceilings`, one used up or a 429 (`urgent`), or `KEEP_EVERY` seconds
        after the last write. Enforcement never waits for this: it uses the counters."""
        last = self._kept.get(endpoint)
        news = urgent or last is None or last[1] != ceilings or now - last[0] >= KEEP_EVERY
        if news:
            self._kept[endpoint] = (now, ceilings)
        return news

    async def _keep(self, endpoint: str, who: str, limits: tuple[LearnedLimit, ...], now: float) -> None:
        """Write what was learned to `learned_limits`, for the quotas view
        (`who` is the model when the endpoint's limits count per model)."""
        seen = datetime.fromtimestamp(now, UTC)
        rows = [
            {
                "endpoint": endpoint,
                "served": who,
                "unit": limit.unit,
                "window": limit.window,
                "limit": _fits(limit.limit),
                "remaining": _fits(limit.remaining),
                "resets_at": datetime.fromtimestamp(limit.resets_at, UTC) if limit.resets_at else None,
                "source": limit.source,
                "seen_at": seen,
            }
            for limit in limits
        ]
        async with self.store.write() as session:
            await session.execute(_keep_statement(self.store.is_sqlite), rows)

    # ------------------------------------------------------------------ spent

    async def spent(self, endpoint: str, served: str, *, usage: Usage) -> None:
        """Settle the estimate counted at admit with the real tokens, on the
        token limits it was counted against: in place, so a call is one
        entry of a minute's window, ageing out when its admit does, and its
        day's counter is the one it was admitted in."""
        charges, receipt = (_estimates.get() or {}).get((endpoint, served), _NO_ESTIMATE)
        if charges:
            await self.counters.settle(
                list(charges), receipt, usage.input_tokens + usage.output_tokens, self.clock()
            )

    async def close(self) -> None:
        """Stop the wakers and wait until they have unwound. A waker cancelled
        inside its store write closes its session as it unwinds; left to do
        so after the store has closed, the loop's end cancels that close too,
        and the connection is left to the garbage collector (SQLAlchemy's
        "non-checked-in connection" warning)."""
        wakers = list(self._wakers)
        for task in wakers:
            task.cancel()
        await asyncio.gather(*wakers, return_exceptions=True)
        await self.counters.close()


def _learned_charges(
    charges: list[Charge], learned: dict[_Who, _Known], who: str, tokens: int, now: float
) -> None:
    """Add to `charges` what a call counts against of what providers said
    (each described in words only if it refuses: `Limiter._describe`)."""
    for (owner, unit, _window), known in learned.items():
        if owner == who and known.resets_at > now:
            charges.append(
                Charge(known.key, 1 if unit == "requests" else tokens, known.limit, 0.0, known.resets_at)
            )


def _fits(amount: int | None) -> int | None:
    """A provider's figure as the store's 32-bit column can keep it: a
    ceiling past 2^31 (some state tokens a day in the billions) is as good
    as none for the quotas view, and must not fail the write."""
    return None if amount is None else min(amount, MAX_AMOUNT)


@functools.cache
def _keep_statement(is_sqlite: bool) -> Any:
    """`_keep`'s one statement, built once per dialect and run once for all
    of a reply's limits (an executemany): a row per limit, replaced in place.
    Built per write through the ORM's bulk insert it cost more CPU than the
    calls of the second between two writes spent in the limiter."""
    table = cast(Table, LearnedLimitRow.__table__)
    statement = (sqlite_insert if is_sqlite else pg_insert)(table)
    kept = ("limit", "remaining", "resets_at", "source", "seen_at")
    return statement.on_conflict_do_update(
        index_elements=["endpoint", "served", "unit", "window"],
        set_={name: statement.excluded[name] for name in kept},
    )


def _period_key(limit: UserLimit, period: str) -> str:
    """The counter of `limit` in one window ("minute", a day, a month)."""
    return f"set|{limit.endpoint}|{limit.served}|{limit.unit}|{period}"


@functools.lru_cache(maxsize=1024)
def _learned_key(endpoint: str, who: str, unit: str, window: str) -> str:
    """The counter of what a provider said of one limit (made on every reply
    that says it, of the same few names: cached)."""
    owner = f"{endpoint}|{who}" if who else endpoint
    return f"{LEARNED}{owner}|{unit}|{window or 'any'}"


def _describe_learned(endpoint: str, who: str, unit: str, window: str, stated: int | None) -> str:
    """A provider's limit in words, naming what it counts: "groq's limit of
    30 requests a minute for llama-3 (from the provider)"."""
    per = f" a {window}" if window else ""
    owner = f" for {who}" if who else ""
    if stated is None:
        return f"{endpoint}'s {unit}{per} limit{owner} (from the provider)"
    return f"{endpoint}'s limit of {stated} {unit}{per}{owner} (from the provider)"
