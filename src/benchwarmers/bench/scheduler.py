"""The scheduler: the bench's recurring work, inside the server.

Jobs: the daily probe (with the listing check and retirements), the weekly
speed run, the daily catalog refresh, and suite passes that fill in Quick
models' suites six tasks at a time. Every job is an async function of
`(BenchJobs, now)`, so tests call it with a fake "now" instead of waiting.

Off on a fresh install: nothing here spends a call until Settings switches
the scheduler on (`settings.SCHEDULER`). The switch is watched once a minute
and applied at once when it changes through the API, so on/off works at
runtime from any path (dashboard, CLI, another replica).

Missed runs: `job_runs.last_run_at` says when each job last ran. When the
scheduler becomes active (server start, or switched on), a job overdue by
less than seven days runs once (however many periods were missed); one
overdue by more is not made up, it just resumes its rhythm. A job that
never ran has missed nothing: its first run is one period after switching on.

Scale-out: only the process holding the "scheduler" lease (`leases.py`: a
PostgreSQL advisory lock across replicas, a file lock on SQLite) runs jobs;
the others retry each minute, so when the holder dies another takes over.
"""

from __future__ import annotations

import asyncio
import logging
import os
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any, cast

from apscheduler.schedulers.asyncio import AsyncIOScheduler
from apscheduler.triggers.interval import IntervalTrigger
from sqlalchemy import select

from benchwarmers.bench import catalog, discover, probes, retirement, suite
from benchwarmers.bench.leases import Lease
from benchwarmers.bench.suite import SuiteRun, Task
from benchwarmers.calls.caller import Caller
from benchwarmers.config import environment, tunables
from benchwarmers.runtime import Runtime
from benchwarmers.store import schema
from benchwarmers.store.db import Store
from benchwarmers.store.settings import SCHEDULER
from benchwarmers.store.times import iso_utc, utc

log = logging.getLogger(__name__)

MODELS_DEV_URL_ENV = environment.MODELS_DEV_URL.name
CATCH_UP_WINDOW = timedelta(days=7)
SUITE_TASKS_PER_RUN = 6
WATCH_SECONDS = tunables.SCHEDULER_WATCH_SECONDS.value


def now_utc() -> datetime:
    return datetime.now(UTC)


@dataclass
class BenchJobs:
    """What the jobs need: the runtime, the caller, and the suite's two
    entry points (run a model's tasks; the next tasks a model has not run)
    and where the catalog comes from. Tests set a short `gap` on `run_suite`
    with `functools.partial` and point `catalog_url` at loopback."""

    runtime: Runtime
    caller: Caller
    run_suite: Callable[..., Awaitable[SuiteRun]] = suite.run_suite
    next_tasks_for: Callable[[Runtime, str, int], Awaitable[list[Task]]] = suite.next_tasks_for
    catalog_url: str = catalog.MODELS_DEV_URL
    freellmapi_url: str = ""  # FreeLLMAPI publishes no feed; a copy's URL when one is set

    @property
    def store(self) -> Store:
        return self.runtime.store


def bench_jobs(runtime: Runtime) -> BenchJobs:
    """The jobs' dependencies as the server and the CLI build them
    (`BENCHWARMERS_MODELS_DEV_URL` points the catalog at a mirror,
    `BENCHWARMERS_FREELLMAPI_URL` at a copy of FreeLLMAPI's catalogue)."""
    url = os.environ.get(MODELS_DEV_URL_ENV, "").strip() or catalog.MODELS_DEV_URL
    freellmapi = os.environ.get(discover.FREELLMAPI_URL_ENV, "").strip()
    return BenchJobs(runtime=runtime, caller=Caller(runtime), catalog_url=url, freellmapi_url=freellmapi)


# ------------------------------------------------------------------- jobs


async def daily_probe(jobs: BenchJobs, now: datetime) -> str:
    report = await retirement.daily_health(jobs.caller, jobs.store, jobs.runtime.outbound, now)
    return report.summary()


async def weekly_speed(jobs: BenchJobs, now: datetime) -> str:
    models = await retirement.scheduled_models(jobs.store, ("available",))
    for model in models:
        await probes.speed_probe(jobs.caller, jobs.store, model, now)
    return f"{len(models)} models timed"


async def daily_catalog(jobs: BenchJobs, now: datetime) -> str:
    models_dev = await catalog.refresh(jobs.store, jobs.runtime.http, now, url=jobs.catalog_url)
    freellmapi = await discover.refresh_freellmapi(jobs.runtime.http, jobs.runtime.home, jobs.freellmapi_url)
    return f"{models_dev}; {freellmapi}"


async def suite_pass(jobs: BenchJobs, now: datetime) -> str:
    """Six tasks per model whose suite is not complete (Quick models);
    never ad hoc models (scheduled_models leaves them out)."""
    ran = []
    for model in await retirement.scheduled_models(jobs.store, ("available",)):
        tasks = await jobs.next_tasks_for(jobs.runtime, model.alias, SUITE_TASKS_PER_RUN)
        if tasks:
            await jobs.run_suite(jobs.runtime, model.alias, tasks=tasks, caller=jobs.caller)
            ran.append(f"{model.alias} ({len(tasks)})")
    return "suite tasks for " + (", ".join(ran) if ran else "nobody: every suite is complete")


@dataclass(frozen=True, slots=True)
class Job:
    name: str
    period: timedelta
    run: Callable[[BenchJobs, datetime], Awaitable[str]]
    description: str


JOBS: dict[str, Job] = {
    job.name: job
    for job in (
        Job(
            "daily_probe",
            timedelta(days=1),
            daily_probe,
            "one-word probe per model; retire after one confirming call",
        ),
        Job("weekly_speed", timedelta(days=7), weekly_speed, "time to first token and tokens per second"),
        Job(
            "daily_catalog",
            timedelta(days=1),
            daily_catalog,
            "models.dev facts, went-paid alerts, FreeLLMAPI where it publishes",
        ),
        Job(
            "suite_pass", timedelta(hours=6), suite_pass, f"{SUITE_TASKS_PER_RUN} suite tasks per Quick model"
        ),
    )
}


async def last_runs(store: Store) -> dict[str, schema.JobRun]:
    async with store.read() as session:
        return {row.job: row for row in (await session.scalars(select(schema.JobRun))).all()}


async def run_job(jobs: BenchJobs, name: str, now: datetime | None = None) -> schema.JobRun:
    """Run one job now and record when, and how it went."""
    job = JOBS[name]
    now = now or now_utc()
    try:
        detail, status = await job.run(jobs, now), "ok"
    except Exception as exc:  # one failing job must not stop the scheduler
        log.exception("scheduled job %s failed", name)
        detail, status = f"{type(exc).__name__}: {exc}", "error"
    async with jobs.store.write() as session:
        row = await session.get(schema.JobRun, name)
        if row is None:
            row = schema.JobRun(job=name, last_run_at=now)
            session.add(row)
        row.last_run_at, row.last_status, row.detail = now, status, detail[:2000]
    return row


def next_due(job: Job, last: datetime | None, now: datetime) -> datetime:
    """When a job is next due: one period after its last run; a job that
    never ran is due one period from now."""
    return utc(last) + job.period if last is not None else now + job.period


def missed(job: Job, last: datetime | None, now: datetime) -> bool:
    """Whether a run was missed and may still be made up (overdue by less
    than the catch-up window)."""
    if last is None:
        return False
    due = next_due(job, last, now)
    return due <= now and now - due < CATCH_UP_WINDOW


async def catch_up(jobs: BenchJobs, now: datetime) -> list[str]:
    """Make up each missed run once; returns the jobs that ran."""
    runs = await last_runs(jobs.store)
    ran = []
    for job in JOBS.values():
        last = runs[job.name].last_run_at if job.name in runs else None
        if missed(job, last, now):
            await run_job(jobs, job.name, now)
            ran.append(job.name)
    return ran


async def job_status(store: Store, now: datetime | None = None) -> list[dict[str, Any]]:
    now = now or now_utc()
    runs = await last_runs(store)
    rows = []
    for job in JOBS.values():
        run = runs.get(job.name)
        last = utc(run.last_run_at) if run else None
        rows.append(
            {
                "job": job.name,
                "description": job.description,
                "every_hours": job.period.total_seconds() / 3600,
                "last_run_at": iso_utc(last),
                "last_status": run.last_status if run else None,
                "detail": run.detail if run else "",
                "next_due_at": iso_utc(max(next_due(job, last, now), now)) if last else None,
            }
        )
    return rows


# --------------------------------------------------------------- the clock


class BenchScheduler:
    """APScheduler's AsyncIOScheduler running the jobs while the setting is
    on and this replica holds the lease."""

    def __init__(self, jobs: BenchJobs) -> None:
        self.jobs = jobs
        self.lease = Lease(jobs.store, jobs.runtime.home, "scheduler")
        self._clock = AsyncIOScheduler(timezone=UTC)
        self.active = False
        self.catching_up: asyncio.Task[list[str]] | None = None
        # The clock's runs under way: APScheduler cancels them on shutdown but waits for none.
        self._running: set[asyncio.Task[Any]] = set()

    async def start(self) -> None:
        """Start watching the setting (from the server's lifespan)."""
        self._clock.add_job(
            self._run,
            IntervalTrigger(seconds=WATCH_SECONDS),
            args=[self.reconcile],
            id="watch",
            coalesce=True,
            max_instances=1,
        )
        self._clock.start()
        await self.reconcile()

    async def shutdown(self) -> None:
        if self.catching_up is not None:
            self.catching_up.cancel()
            await asyncio.gather(self.catching_up, return_exceptions=True)
        if self._clock.running:
            self._clock.shutdown(wait=False)  # cancels the runs under way
        # Let them unwind while the store is open: one cancelled in a read closes its session as it
        # unwinds, and after the store's close and the loop's end it could not (the connection is
        # then left to the garbage collector, SQLAlchemy's "non-checked-in connection" warning).
        await asyncio.gather(*self._running, return_exceptions=True)
        await self.lease.release()
        self.active = False

    async def set_enabled(self, enabled: bool) -> None:
        await self.jobs.runtime.settings.set(SCHEDULER, enabled)
        await self.reconcile()

    async def reconcile(self, now: datetime | None = None) -> None:
        """Bring the jobs in line with the setting and the lease."""
        enabled = await self.jobs.runtime.settings.get(SCHEDULER)
        if enabled and not self.active:
            if not await self.lease.acquire():
                return  # another replica runs the jobs
            self.active = True
            await self._activate(now or now_utc())
        elif not enabled and self.active:
            for job in JOBS:
                if self._clock.get_job(job):
                    self._clock.remove_job(job)
            await self.lease.release()
            self.active = False

    async def _activate(self, now: datetime) -> None:
        """Schedule every job at its rhythm and make missed runs up in the
        background (a switch flipped over HTTP answers at once)."""
        runs = await last_runs(self.jobs.store)
        for job in JOBS.values():
            last = runs[job.name].last_run_at if job.name in runs else None
            first = next_due(job, last, now)
            if first <= now:  # made up now, or overdue beyond the window: either way the rhythm resumes
                first = now + job.period
            self._clock.add_job(
                self._run,
                IntervalTrigger(seconds=job.period.total_seconds(), start_date=first),
                args=[self._tick, job.name],
                id=job.name,
                next_run_time=first,
                coalesce=True,  # several runs missed while the machine slept run once
                misfire_grace_time=int(CATCH_UP_WINDOW.total_seconds()),
                max_instances=1,
                replace_existing=True,
            )
        self.catching_up = asyncio.create_task(catch_up(self.jobs, now), name="scheduler-catch-up")

    def next_runs(self) -> dict[str, str]:
        """When each scheduled job runs next (empty while inactive)."""
        runs = {}
        for name in JOBS:
            job = self._clock.get_job(name)
            if job is not None and job.next_run_time is not None:
                runs[name] = iso_utc(job.next_run_time)
        return runs

    async def settled(self) -> None:
        """Wait until the missed runs found on activation are made up."""
        if self.catching_up is not None:
            await self.catching_up

    async def _run(self, work: Callable[..., Awaitable[None]], *args: Any) -> None:
        """One run of the clock's, known to `shutdown` until it ends."""
        task = cast(asyncio.Task[Any], asyncio.current_task())  # APScheduler runs each in a task
        self._running.add(task)
        try:
            await work(*args)
        finally:
            self._running.discard(task)

    async def _tick(self, name: str) -> None:
        if await self.jobs.runtime.settings.get(SCHEDULER) and self.lease.held:
            await run_job(self.jobs, name)
