"""Onboarding: a queue in the store, worked one model at a time.

Onboarding spends calls on the user's keys and free tiers, so models go one
at a time, and the queue lives in the database so a restart loses nothing.
One process at a time works the queue: the holder of the "onboarding" lease
(`leases.py`), normally the server, or a CLI `onboard` when no server runs.
An item found `running` by a process that just took the lease was cut off
by one that died, and runs again from the start (registering is
idempotent, and four probe calls are cheap to repeat). Items are also
claimed with a conditional update, so no item ever runs twice at once.

Modes, as the SPEC words them:

* Full: register, probe with four short calls, then run the suite now.
* Quick: register and probe now; the scheduled suite passes fill the suite
  in, six tasks a run (the same calls, spread out).
* Quick + ad hoc: register and probe only, and mark the model ad hoc: the
  bench never calls it on its own again (no explorer seat, no scheduled
  probes or suite); a collection that lists it still calls it.

A model that registered but did not answer any probe stays on the bench as
`unavailable`, so the daily probe keeps watching it (unless it is ad hoc).
A model whose probes a rate limit stopped before any answered (a 429, or
our own limiter refusing the call) is not taken for silent: rate limits are
never death. It rests until the limit frees, and its item waits in the
queue (`not_before`) and runs again then; meanwhile the rest is not woken
(`limits/rest.py`), so it is never seated before it has answered.
Progress (step, fraction) is written on the item for the dashboard's chip
and handed to a callback for the terminal's bar.

A model already waiting or running in the queue is not queued again (a
409 naming its item): two items of one model would probe and run the suite
twice. An item is cancelled while it waits (`cancel`), or while it runs:
its run sees the state change at its next write of progress and stops there
(its model, if registered, is left `unavailable` for the daily probe).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import re
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any, Literal

from sqlalchemy import func, or_, select, update
from sqlalchemy.ext.asyncio import AsyncSession

from benchwarmers.bench import catalog, probes
from benchwarmers.bench.leases import Lease
from benchwarmers.bench.suite import SuiteRun
from benchwarmers.calls.caller import Caller
from benchwarmers.config import tunables
from benchwarmers.errors import Conflict, NotFound, UserError
from benchwarmers.store import schema
from benchwarmers.store.db import Store
from benchwarmers.store.models import (
    add_model,
    check_alias,
    check_role,
    check_served,
    get_model,
    list_models,
    set_status,
)
from benchwarmers.store.settings import SCHEDULER, Settings
from benchwarmers.store.times import iso_utc, utc

if TYPE_CHECKING:
    from benchwarmers.runtime import Runtime

log = logging.getLogger(__name__)

Mode = Literal["full", "quick", "quick_ad_hoc"]
MODES: tuple[Mode, ...] = ("full", "quick", "quick_ad_hoc")
Progress = Callable[[int, str, float], None]  # item id, step, fraction 0..1
# `suite.run_suite(runtime, alias, limit=, progress=(done, total), caller=)`.
SuiteRunner = Callable[..., Awaitable[SuiteRun]]

# Share of the bar the probe takes in Full mode; the suite takes the rest.
FULL_PROBE_SHARE = 0.3
QUEUE_LEASE = "onboarding"
OPEN_STATES = ("queued", "running")  # also: done, failed, cancelled
POLL_SECONDS = tunables.ONBOARDING_POLL_SECONDS.value


@dataclass(frozen=True, slots=True)
class OnboardRequest:
    endpoint: str
    served: str
    mode: Mode = "full"
    alias: str = ""
    role: str = ""


def now_utc() -> datetime:
    return datetime.now(UTC)


def mode_for(quick: bool, ad_hoc: bool) -> Mode:
    if ad_hoc:
        return "quick_ad_hoc"
    return "quick" if quick else "full"


def default_alias(served: str) -> str:
    """`meta-llama/Llama-3.3-70B-Instruct:free` -> `llama-3.3-70b-instruct`."""
    name = served.rsplit("/", 1)[-1].split(":", 1)[0].lower()
    return re.sub(r"[^a-z0-9.\-]+", "-", name).strip("-.") or "model"


# ------------------------------------------------------------------- queue


async def enqueue(store: Store, requests: list[OnboardRequest], now: datetime | None = None) -> list[int]:
    """Queue models (checked first: the endpoint exists, the mode and role
    are known, an explicit alias is not another model's). Returns item ids."""
    now = now or now_utc()
    async with store.write() as session:
        ids = []
        asked: set[tuple[str, str]] = set()
        for req in requests:
            if req.mode not in MODES:
                raise UserError(f"unknown mode {req.mode!r}; use one of {', '.join(MODES)}")
            if req.role:
                check_role(req.role)
            if req.alias:
                check_alias(req.alias)
            if not req.served.strip():
                raise UserError("a served model id is required")
            check_served(req.served)  # refused now, not as a traceback in the worker
            endpoint = await session.scalar(
                select(schema.Endpoint).where(schema.Endpoint.name == req.endpoint)
            )
            if endpoint is None:
                raise NotFound(f"no endpoint {req.endpoint!r}")
            if req.alias:
                other = await session.scalar(select(schema.Model).where(schema.Model.alias == req.alias))
                if other is not None and (other.endpoint_id, other.served) != (endpoint.id, req.served):
                    raise Conflict(f"alias {req.alias!r} is already {other.served} on another entry")
            existing = await session.scalar(
                select(schema.Model).where(
                    schema.Model.endpoint_id == endpoint.id, schema.Model.served == req.served.strip()
                )
            )
            if existing is not None:
                _check_again(existing, req)
            key = (req.endpoint, req.served.strip())
            if key in asked:
                continue  # named twice in one request: one item
            asked.add(key)
            await _check_not_queued(session, *key)
            item = schema.OnboardingItem(
                endpoint=req.endpoint,
                served=req.served.strip(),
                alias=req.alias,
                role=req.role,
                mode=req.mode,
                state="queued",
                step="queued",
                created_at=now,
            )
            session.add(item)
            await session.flush()
            ids.append(item.id)
    return ids


async def _check_not_queued(session: AsyncSession, endpoint: str, served: str) -> None:
    waiting = await session.scalar(
        select(schema.OnboardingItem).where(
            schema.OnboardingItem.endpoint == endpoint,
            schema.OnboardingItem.served == served,
            schema.OnboardingItem.state.in_(OPEN_STATES),
        )
    )
    if waiting is not None:
        raise Conflict(
            f"{served} on {endpoint} is already in the onboarding queue "
            f"(item {waiting.id}, {waiting.state}); cancel it first to queue it again"
        )


async def cancel(store: Store, item_id: int) -> schema.OnboardingItem:
    """Cancel a waiting or running item (a finished one: 409). A running
    item's run stops at its next progress write (`ItemRun._write`)."""
    async with store.write() as session:
        item = await session.get(schema.OnboardingItem, item_id)
        if item is None:
            raise NotFound(f"no onboarding item {item_id}")
        if item.state not in OPEN_STATES:
            raise Conflict(f"onboarding item {item_id} is already {item.state}: nothing to cancel")
        item.state = "cancelled"
        item.step = "cancelled"
        item.finished_at = now_utc()
        item.not_before = None
        await session.flush()
        return item


def _check_again(existing: schema.Model, req: OnboardRequest) -> None:
    """Onboarding a model already on the bench runs it again as it is: an
    alias other than its own, or `--ad-hoc` on a model the bench calls on
    its own, would be ignored or would change it quietly, so both are refused."""
    where = f"{req.served} on {req.endpoint} is already on the bench as {existing.alias!r}"
    if req.alias and req.alias != existing.alias:
        raise Conflict(f"{where}; onboard it again without --alias, or give the new alias to another id")
    if req.mode == "quick_ad_hoc" and not existing.ad_hoc:
        raise Conflict(
            f"{where} and the bench calls it on its own; --ad-hoc would stop that: "
            f"onboard it without --ad-hoc, or retire it (`benchwarmers model retire {existing.alias}`)"
        )


async def queue_items(
    store: Store, *, include_finished: bool = True, limit: int = 100
) -> list[schema.OnboardingItem]:
    query = select(schema.OnboardingItem).order_by(schema.OnboardingItem.id.desc()).limit(limit)
    if not include_finished:
        query = query.where(schema.OnboardingItem.state.in_(("queued", "running")))
    async with store.read() as session:
        return list(reversed((await session.scalars(query)).all()))


async def queue_depth(store: Store) -> dict[str, int]:
    """How many items are `queued` and `running` now (one small count, for `/metrics`)."""
    query = (
        select(schema.OnboardingItem.state, func.count())
        .where(schema.OnboardingItem.state.in_(("queued", "running")))
        .group_by(schema.OnboardingItem.state)
    )
    async with store.read() as session:
        counted = {state: int(n) for state, n in (await session.execute(query)).all()}
    return {state: counted.get(state, 0) for state in ("queued", "running")}


def outcome(item: schema.OnboardingItem, now: datetime) -> str:
    """What the item came to, in one word for the dashboard: `ok`, `unavailable`
    (registered, did not answer: state done, with its error), `failed`,
    `cancelled`; or, while open, `running`, `queued`, `waiting` (for a rate
    limit to free, until `not_before`)."""
    if item.state == "done":
        return "unavailable" if item.error else "ok"
    if item.state == "queued" and item.not_before is not None and utc(item.not_before) > now:
        return "waiting"
    return item.state


def item_view(item: schema.OnboardingItem) -> dict[str, Any]:
    return {
        "outcome": outcome(item, now_utc()),
        "id": item.id,
        "endpoint": item.endpoint,
        "served": item.served,
        "alias": item.alias,
        "role": item.role,
        "mode": item.mode,
        "state": item.state,
        "step": item.step,
        "progress": round(item.progress, 3),
        "error": item.error,
        "created_at": iso_utc(item.created_at),
        "started_at": iso_utc(item.started_at),
        "finished_at": iso_utc(item.finished_at),
        "not_before": iso_utc(item.not_before),
    }


async def resume_interrupted(store: Store) -> int:
    """Items left `running` by a stopped process go back to the front of the
    queue (their ids are the oldest, so they run first)."""
    async with store.write() as session:
        result = await session.execute(
            update(schema.OnboardingItem)
            .where(schema.OnboardingItem.state == "running")
            .values(state="queued", step="resumed after a restart", progress=0.0)
        )
    return int(result.rowcount or 0)  # type: ignore[attr-defined]


async def claim_next(store: Store, only: set[int] | None = None) -> int | None:
    """The oldest queued item that is due (a rate-limited one waits for its
    `not_before`), marked running; None when there is none."""
    async with store.write() as session:
        query = select(schema.OnboardingItem.id).where(
            schema.OnboardingItem.state == "queued",
            or_(schema.OnboardingItem.not_before.is_(None), schema.OnboardingItem.not_before <= now_utc()),
        )
        if only is not None:
            query = query.where(schema.OnboardingItem.id.in_(only))
        for item_id in (await session.scalars(query.order_by(schema.OnboardingItem.id))).all():
            claimed = await session.execute(
                update(schema.OnboardingItem)
                .where(schema.OnboardingItem.id == item_id, schema.OnboardingItem.state == "queued")
                .values(state="running", started_at=now_utc(), step="starting", progress=0.0, error="")
            )
            if claimed.rowcount:  # type: ignore[attr-defined]
                return item_id
    return None


# ------------------------------------------------------------ one item


class Cancelled(Exception):
    """The item was cancelled while it ran: its run stops."""


class ItemRun:
    """Runs one claimed item, keeping its step and progress current."""

    def __init__(
        self,
        runtime: Runtime,
        caller: Caller,
        item_id: int,
        *,
        suite: SuiteRunner | None,
        suite_limit: int | None = None,
        progress: Progress | None = None,
    ) -> None:
        self.runtime = runtime
        self.store: Store = runtime.store
        self.caller = caller
        self.item_id = item_id
        self.suite = suite
        self.suite_limit = suite_limit
        self.progress = progress
        self._pending: list[asyncio.Task[None]] = []
        self.alias = ""
        self.cancelled = False

    async def run(self) -> schema.OnboardingItem:
        try:
            await self._run()
        except Exception as exc:  # any failure ends the item as failed, never the worker
            if isinstance(exc, Cancelled):
                log.info("onboarding item %s was cancelled", self.item_id)
            else:
                log.exception("onboarding item %s failed", self.item_id)
            message = str(exc) if isinstance(exc, UserError) else f"{type(exc).__name__}: {exc}"
            if self.alias:
                # Registered but cut short: not `onboarding` forever; the daily probe will look again.
                await _set_model_status(
                    self.store,
                    self.alias,
                    "unavailable",
                    f"onboarding failed: {message}",
                    only_if="onboarding",
                )
            await self._finish("failed", message)
        async with self.store.read() as session:
            item = await session.get(schema.OnboardingItem, self.item_id)
        assert item is not None
        return item

    async def _run(self) -> None:
        async with self.store.read() as session:
            item = await session.get(schema.OnboardingItem, self.item_id)
        if item is None:
            raise NotFound(f"no onboarding item {self.item_id}")
        mode: Mode = item.mode  # type: ignore[assignment]
        await self.step("registering", 0.02)
        alias = self.alias = await register(self.store, item)
        await catalog.apply_to_bench(self.store)  # context window, limits, price: known before any seat
        probe_share = FULL_PROBE_SHARE if mode == "full" else 1.0

        def probe_progress(step: str, fraction: float) -> None:
            self.note(step, 0.05 + fraction * (probe_share - 0.05))

        model = await get_model(self.store, alias)
        outcomes = await probes.onboarding_probe(self.caller, self.store, model, now_utc(), probe_progress)
        answered = [o for o in outcomes if o.answered]
        passed = sum(o.passed for o in outcomes)
        if not answered and (any(o.limited for o in outcomes) or not any(o.evidence for o in outcomes)):
            await self._rest(alias, outcomes)
            return
        if not answered:
            errors = "; ".join(sorted({o.error for o in outcomes if o.error}))
            await _set_model_status(
                self.store, alias, "unavailable", f"did not answer the onboarding probe: {errors}"
            )
            await self._finish(
                "done", errors or "no answer", step=f"registered; did not answer ({errors}): unavailable"
            )
            return
        await _set_model_status(self.store, alias, "available", "")
        summary = f"answered {len(answered)}/{len(outcomes)} probes, passed {passed}"
        if mode != "full":
            later = await _later(self.store) if mode == "quick" else "ad hoc: never called by the bench"
            await self._finish("done", "", step=f"{summary}; {later}")
            return
        if self.suite is None:
            raise UserError("the suite is not available in this build")
        await self.step(f"{summary}; running the suite", probe_share)

        def suite_progress(done: int, total: int) -> None:
            fraction = done / total if total else 1.0
            self.note(f"suite: {done}/{total} tasks", probe_share + fraction * (1 - probe_share))

        run = await self.suite(
            self.runtime, alias, limit=self.suite_limit, progress=suite_progress, caller=self.caller
        )
        await self._finish("done", "", step=f"{summary}; suite {run.passed}/{len(run.results)} passed")

    async def _rest(self, alias: str, outcomes: list[probes.ProbeOutcome]) -> None:
        """Rate limited before it answered: a 429 or our own limiter proves
        nothing about whether the model answers, so it is not `unavailable`.
        It rests until the limit frees (the limiter's default rest when
        nobody said when), and the item waits in the queue until then and
        runs again from the start."""
        frees = [o.frees_at for o in outcomes if o.frees_at is not None]
        until = datetime.fromtimestamp(
            max(frees) if frees else time.time() + self.runtime.limiter.default_rest, UTC
        )
        when = until.isoformat(timespec="seconds")
        error = next((o.error for o in reversed(outcomes) if o.error), "rate limited")
        await set_status(
            self.store,
            alias,
            "resting",
            reason=f"rate limited while onboarding ({error}); onboarded again after {when}",
            resting_until=until,
        )
        await asyncio.gather(*self._pending, return_exceptions=True)
        self._pending.clear()
        step = f"rate limited until {when}; tried again then"
        if self.progress:
            self.progress(self.item_id, step, 1.0)
        await self._write(state="queued", not_before=until, step=step[:64], progress=0.0)

    def note(self, step: str, fraction: float) -> None:
        """Progress from inside a synchronous callback: written soon after.
        Raises `Cancelled` once a write found the item cancelled, which stops
        the probe or the suite that called it."""
        if self.cancelled:
            raise Cancelled(f"onboarding item {self.item_id} was cancelled")
        if self.progress:
            self.progress(self.item_id, step, fraction)
        self._pending.append(asyncio.ensure_future(self._write(step=step, progress=fraction)))

    async def step(self, step: str, fraction: float) -> None:
        if self.cancelled:
            raise Cancelled(f"onboarding item {self.item_id} was cancelled")
        if self.progress:
            self.progress(self.item_id, step, fraction)
        await self._write(step=step, progress=fraction)

    async def _finish(self, state: str, error: str, step: str = "") -> None:
        await asyncio.gather(*self._pending, return_exceptions=True)
        self._pending.clear()
        step = step or ("failed" if state == "failed" else "done")
        if self.progress:
            self.progress(self.item_id, step, 1.0)
        await self._write(state=state, error=error, step=step, progress=1.0, finished_at=now_utc())

    async def _write(self, **values: Any) -> None:
        """Write the running item; an item no longer running was cancelled:
        nothing is written and the run stops at its next step."""
        async with self.store.write() as session:
            written = await session.execute(
                update(schema.OnboardingItem)
                .where(schema.OnboardingItem.id == self.item_id, schema.OnboardingItem.state == "running")
                .values(**values)
            )
        if not written.rowcount:  # type: ignore[attr-defined]
            self.cancelled = True


async def register(store: Store, item: schema.OnboardingItem) -> str:
    """The model for this item, created or (after a restart, or onboarding
    again) reused; the ad hoc flag follows the mode. Returns its alias."""
    ad_hoc = item.mode == "quick_ad_hoc"
    same = [m for m in await list_models(store, endpoint=item.endpoint) if m.served == item.served]
    if same:
        alias = same[0].alias
        values: dict[str, Any] = {"ad_hoc": ad_hoc}
        if item.role:
            values["role"] = check_role(item.role)
        async with store.write() as session:
            await session.execute(update(schema.Model).where(schema.Model.alias == alias).values(**values))
        await set_status(store, alias, "onboarding", reason="onboarding")
    else:
        alias = item.alias or await _free_alias(store, item.served, item.endpoint)
        await add_model(
            store,
            alias,
            item.endpoint,
            item.served,
            item.role or "general",
            status="onboarding",
            ad_hoc=ad_hoc,
        )
    async with store.write() as session:
        await session.execute(
            update(schema.OnboardingItem).where(schema.OnboardingItem.id == item.id).values(alias=alias)
        )
    return alias


async def _free_alias(store: Store, served: str, endpoint: str) -> str:
    """The served id's default alias or, another model's already, the first
    free of: with the id's tag (Ollama's sizes of one family, `llama3.2:1b`
    and `llama3.2:3b`, differ only there), with the endpoint's name, then
    that numbered."""
    alias = default_alias(served)
    tag = served.rsplit("/", 1)[-1].partition(":")[2]
    tagged = [default_alias(f"{alias}-{tag}")] if tag else []
    candidates = [alias, *tagged, f"{alias}-{endpoint}"]
    candidates += [f"{alias}-{endpoint}-{n}" for n in range(2, 100)]
    async with store.read() as session:
        found = await session.scalars(select(schema.Model.alias).where(schema.Model.alias.in_(candidates)))
        taken = set(found)
    return next(c for c in candidates if c not in taken)


async def _set_model_status(store: Store, alias: str, status: str, reason: str, only_if: str = "") -> None:
    if only_if and (await get_model(store, alias)).status != only_if:
        return
    await set_status(store, alias, status, reason=reason)


# ---------------------------------------------------------------- workers


async def drain(
    runtime: Runtime,
    caller: Caller,
    *,
    suite: SuiteRunner | None,
    only: set[int] | None = None,
    suite_limit: int | None = None,
    progress: Progress | None = None,
) -> list[schema.OnboardingItem]:
    """Work queued items (or only the given ones) until none is left. The
    caller holds the queue's lease (see `work_items`, `OnboardingWorker`)."""
    done = []
    while (item_id := await claim_next(runtime.store, only)) is not None:
        run = ItemRun(runtime, caller, item_id, suite=suite, suite_limit=suite_limit, progress=progress)
        done.append(await run.run())
    return done


def queue_lease(runtime: Runtime) -> Lease:
    """Whoever holds it works the queue; an item `running` while nobody
    holds it was cut off by a process that died."""
    return Lease(runtime.store, runtime.home, QUEUE_LEASE)


async def work_items(
    runtime: Runtime,
    caller: Caller,
    only: set[int],
    *,
    suite: SuiteRunner | None,
    suite_limit: int | None = None,
    progress: Progress | None = None,
) -> list[schema.OnboardingItem] | None:
    """Work the given items in this process (the CLI), or return None when
    another process (a running server) works the queue and will run them."""
    lease = queue_lease(runtime)
    if not await lease.acquire():
        return None
    try:
        await resume_interrupted(runtime.store)
        return await drain(
            runtime, caller, suite=suite, only=only, suite_limit=suite_limit, progress=progress
        )
    finally:
        await lease.release()


class OnboardingWorker:
    """The server's single worker: one item at a time, woken when items are
    queued (and every few seconds, for items another process queued). It
    works only while it holds the queue's lease; on first taking it, items
    left `running` by a dead process go back to the front of the queue."""

    def __init__(
        self,
        runtime: Runtime,
        caller: Caller,
        *,
        suite: SuiteRunner | None,
        suite_limit: int | None = None,
        poll_seconds: float = POLL_SECONDS,
    ) -> None:
        self.runtime = runtime
        self.caller = caller
        self.suite = suite
        self.suite_limit = suite_limit
        self.poll_seconds = poll_seconds
        self.lease = queue_lease(runtime)
        self._wake = asyncio.Event()
        self._task: asyncio.Task[None] | None = None
        # Set whenever the worker holds the lease and the queue is empty.
        self.idle = asyncio.Event()

    async def start(self) -> None:
        self._task = asyncio.create_task(self._loop(), name="onboarding-worker")

    def wake(self) -> None:
        self._wake.set()

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            await asyncio.gather(self._task, return_exceptions=True)
            self._task = None
        await self.lease.release()

    async def _loop(self) -> None:
        while True:
            try:
                await self._work()
            except Exception:  # the store hiccuped: try again on the next wake
                log.exception("onboarding worker: working the queue failed")
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._wake.wait(), self.poll_seconds)
            self._wake.clear()

    async def _work(self) -> None:
        if not self.lease.held:
            if not await self.lease.acquire():
                return  # another process works the queue
            resumed = await resume_interrupted(self.runtime.store)
            if resumed:
                log.info("onboarding: resuming %d item(s) interrupted by a stopped process", resumed)
        self.idle.clear()
        await drain(self.runtime, self.caller, suite=self.suite, suite_limit=self.suite_limit)
        self.idle.set()


async def _later(store: Store) -> str:
    """When a quick-onboarded model's suite runs: by the scheduler's passes,
    which a fresh install has off (and then how to switch it on)."""
    if await Settings(store).get(SCHEDULER):
        return "suite by scheduled passes"
    return (
        "its suite runs by scheduled passes, and the scheduler is off: "
        "`benchwarmers settings set scheduler true` (or `benchwarmers suite run MODEL` now)"
    )
