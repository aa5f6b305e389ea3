"""The scheduler spends nothing until switched on, makes a missed run up
once (within seven days, never twice), and never calls an ad hoc model.
Jobs are called directly with a fake "now"."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from functools import partial

import pytest

from benchwarmers.bench import scheduler
from benchwarmers.bench.scheduler import BenchJobs, BenchScheduler
from benchwarmers.bench.suite import run_suite
from benchwarmers.runtime import Runtime
from benchwarmers.store import schema
from benchwarmers.store.models import add_model
from benchwarmers.testing import FakeModel, FakeProvider

NOW = datetime(2026, 11, 30, 6, 0, tzinfo=UTC)


@pytest.fixture
def jobs(bench: Runtime) -> BenchJobs:
    """The server's jobs, with the suite's pacing shortened for a test."""
    jobs = scheduler.bench_jobs(bench)
    jobs.run_suite = partial(run_suite, gap=0.01)
    jobs.catalog_url = "http://127.0.0.1:9/api.json"  # nothing listens: the offline path, no internet
    return jobs


async def ran_at(rt: Runtime, job: str, when: datetime) -> None:
    async with rt.store.write() as session:
        session.add(schema.JobRun(job=job, last_run_at=when))


async def last_run(rt: Runtime, job: str) -> datetime | None:
    runs = await scheduler.last_runs(rt.store)
    return runs[job].last_run_at.replace(tzinfo=UTC) if job in runs else None


async def test_off_on_a_fresh_install_and_switchable_at_runtime(
    bench: Runtime, jobs: BenchJobs, fake_provider: FakeProvider, add_fake: Callable[..., FakeModel]
) -> None:
    add_fake("m")
    await add_model(bench.store, "m", "fake", "m")
    await ran_at(bench, "daily_probe", scheduler.now_utc() - timedelta(days=2))  # a missed run waiting
    clock = BenchScheduler(jobs)
    await clock.start()
    try:
        assert not clock.active and fake_provider.calls["m"] == 0
        await clock.set_enabled(True)
        assert clock.active
        await clock.settled()
        assert fake_provider.calls["m"] == 1  # the missed daily probe, made up once on switching on
        assert {job.id for job in clock._clock.get_jobs()} == {"watch", *scheduler.JOBS}
        await clock.set_enabled(False)
        assert not clock.active and {job.id for job in clock._clock.get_jobs()} == {"watch"}
        await clock.set_enabled(True)  # on again: the probe just ran, nothing to make up
        await clock.settled()
        assert fake_provider.calls["m"] == 1
    finally:
        await clock.shutdown()


async def test_a_missed_run_is_made_up_once_not_twice(
    bench: Runtime, jobs: BenchJobs, fake_provider: FakeProvider, add_fake: Callable[..., FakeModel]
) -> None:
    add_fake("m")
    await add_model(bench.store, "m", "fake", "m")
    await ran_at(bench, "daily_probe", NOW - timedelta(days=5))  # four runs missed
    assert await scheduler.catch_up(jobs, NOW) == ["daily_probe"]
    assert fake_provider.calls["m"] == 1  # once, however many runs were missed
    assert await last_run(bench, "daily_probe") == NOW
    assert await scheduler.catch_up(jobs, NOW + timedelta(hours=1)) == []
    assert fake_provider.calls["m"] == 1


async def test_a_run_missed_more_than_seven_days_ago_is_not_made_up(
    bench: Runtime, jobs: BenchJobs, fake_provider: FakeProvider, add_fake: Callable[..., FakeModel]
) -> None:
    add_fake("m")
    await add_model(bench.store, "m", "fake", "m")
    await ran_at(bench, "daily_probe", NOW - timedelta(days=9))  # due 8 days ago: too old
    await ran_at(bench, "weekly_speed", NOW - timedelta(days=13))  # due 6 days ago: still made up
    assert await scheduler.catch_up(jobs, NOW) == ["weekly_speed"]
    assert fake_provider.calls["m"] == 2  # the short and the long speed prompts
    assert await last_run(bench, "daily_probe") == NOW - timedelta(days=9)


async def test_a_job_that_never_ran_has_missed_nothing(bench: Runtime, jobs: BenchJobs) -> None:
    assert await scheduler.catch_up(jobs, NOW) == []
    status = {row["job"]: row for row in await scheduler.job_status(bench.store, NOW)}
    assert set(status) == set(scheduler.JOBS) and status["daily_probe"]["last_run_at"] is None


async def test_the_bench_never_calls_an_ad_hoc_model_on_its_own(
    bench: Runtime, jobs: BenchJobs, fake_provider: FakeProvider, add_fake: Callable[..., FakeModel]
) -> None:
    add_fake("adhoc")
    add_fake("regular")
    await add_model(bench.store, "adhoc", "fake", "adhoc", ad_hoc=True)
    await add_model(bench.store, "regular", "fake", "regular")
    for name in scheduler.JOBS:
        row = await scheduler.run_job(jobs, name, NOW)
        assert row.last_status == "ok", row.detail
    assert fake_provider.calls["adhoc"] == 0
    # A Quick model's suite pass: six tasks. Plus the daily probe and the two speed prompts.
    assert fake_provider.calls["regular"] == 1 + 2 + scheduler.SUITE_TASKS_PER_RUN


async def test_speed_probe_measures_first_token_and_rate(
    bench: Runtime, jobs: BenchJobs, add_fake: Callable[..., FakeModel]
) -> None:
    from benchwarmers.bench import probes

    # Streamed over half a second: long enough between first byte and last to measure a rate.
    add_fake("fast", answer=" ".join(["word"] * 30), ttfb=0.05, tokens_per_second=60)
    await add_model(bench.store, "fast", "fake", "fast")
    await scheduler.run_job(jobs, "weekly_speed", NOW)
    rows = {p.name: p for p in await probes.probe_history(bench.store, "fast")}
    assert set(rows) == {"short", "long"}
    for row in rows.values():
        assert row.kind == "speed" and row.ok
        assert row.first_byte_seconds is not None and row.first_byte_seconds >= 0.04
        assert row.tokens_per_second is not None and row.tokens_per_second > 0


async def test_shutdown_waits_for_a_run_it_cancels_inside_a_store_session(jobs: BenchJobs) -> None:
    """APScheduler cancels its runs on shutdown and waits for none; a run
    cancelled in a session must close it before the store closes after the
    scheduler (else the loop's end leaves its connection to the collector)."""
    entered, unwound = asyncio.Event(), asyncio.Event()

    async def held_read() -> None:
        try:
            async with jobs.store.read():
                entered.set()
                await asyncio.Event().wait()
        finally:
            unwound.set()

    clock = BenchScheduler(jobs)
    await clock.start()
    clock._clock.add_job(clock._run, args=[held_read], next_run_time=datetime.now(UTC))
    await asyncio.wait_for(entered.wait(), 10)
    await clock.shutdown()
    assert unwound.is_set()
