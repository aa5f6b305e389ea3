"""Operations, for one identity: the onboarding queue, probes, retire and
restore, the scheduler, the suite, and what the bench says of one model.

The CLI (the owner) and `/bench/ops/*` (the request's identity) run the
bench through this service. Its rule: anything that changes the bench or
spends calls (onboarding, probing, retiring, a role, the scheduler) needs
an identity that may administer; reading the queue, the catalog, the
alerts and probe histories is open to every admitted identity, as the
HTTP API always allowed.

In the server the bench's background work runs for as long as the app
(`bench_services`: the one onboarding worker and the scheduler); a service
built with them wakes the worker when it queues an item and shows the
scheduler's next runs. Without them (the CLI) an onboarding runs in this
process, unless a running server holds the queue, which then runs it while
this process follows it in the store.
"""

from __future__ import annotations

import asyncio
import difflib
from collections.abc import AsyncIterator, Callable, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from sqlalchemy import select

from benchwarmers.bench import discover, onboarding, probes, retirement, scheduler
from benchwarmers.bench.explain import Standings, model_report
from benchwarmers.bench.onboarding import OnboardRequest
from benchwarmers.bench.suite import rebench, rebench_fetch, runner
from benchwarmers.bench.suite.tasks import Task, load_tasks
from benchwarmers.calls import pairs
from benchwarmers.config import keys as endpoint_keys
from benchwarmers.config import tunables
from benchwarmers.config.home import resolve_home
from benchwarmers.core.views import OnboardingView, ProbeView, onboarding_view, probe_view
from benchwarmers.errors import NotFound, Refused, UserError
from benchwarmers.identity.scope import OWNER, Identity, may_administer
from benchwarmers.store import schema
from benchwarmers.store.endpoints import get_endpoint
from benchwarmers.store.models import get_model, list_models, restore, retire, set_role, set_structured_output
from benchwarmers.store.settings import SCHEDULER
from benchwarmers.store.times import iso_utc, utc
from benchwarmers.store.views import ModelView

if TYPE_CHECKING:
    from benchwarmers.runtime import Runtime

FOLLOW_SECONDS = tunables.FOLLOW_SECONDS.value


@dataclass
class BenchServices:
    """The bench's background work in a server: its jobs, the single
    onboarding worker and the scheduler."""

    jobs: scheduler.BenchJobs
    worker: onboarding.OnboardingWorker
    clock: scheduler.BenchScheduler


@asynccontextmanager
async def bench_services(runtime: Runtime) -> AsyncIterator[BenchServices]:
    """Start the worker (which resumes items a restart interrupted) and the
    scheduler (which does nothing until the settings switch it on); stop
    both on the way out."""
    jobs = scheduler.bench_jobs(runtime)
    services = BenchServices(
        jobs=jobs,
        worker=onboarding.OnboardingWorker(runtime, jobs.caller, suite=jobs.run_suite),
        clock=scheduler.BenchScheduler(jobs),
    )
    await services.worker.start()
    await services.clock.start()
    try:
        yield services
    finally:
        await services.clock.shutdown()
        await services.worker.stop()


def onboard_requests(body: object) -> list[OnboardRequest]:
    """An onboarding request as the HTTP API and the dashboard's form send it,
    read in this one place: `{"endpoint", "models", "mode"}`, where `models`
    are served ids or `{"served", "alias", "role"}` objects (a form may send
    the ids as one text, separated by commas or spaces) and `mode` is one of
    `onboarding.MODES` (default full). A refusal names its field; what needs
    the store (the endpoint exists, the role is known, an alias is free) is
    `onboarding.enqueue`'s, as for the CLI's typed options."""
    if not isinstance(body, dict):
        raise UserError("send a JSON object")
    endpoint, mode, models = body.get("endpoint"), body.get("mode") or "full", body.get("models")
    if not isinstance(endpoint, str) or not endpoint.strip():
        raise UserError('"endpoint" (the endpoint\'s name) is required', field="endpoint")
    if mode not in onboarding.MODES:
        raise UserError(f'"mode" must be one of {", ".join(onboarding.MODES)}', field="mode")
    if isinstance(models, str):
        models = models.replace(",", " ").split()
    if not isinstance(models, list) or not models:
        raise UserError(
            'name at least one model in "models": served ids, or {"served", "alias", "role"} objects',
            field="models",
        )
    requests = []
    for entry in models:
        if isinstance(entry, str):
            entry = {"served": entry}
        served = entry.get("served") if isinstance(entry, dict) else None
        if not isinstance(served, str) or not served.strip():
            raise UserError('each of "models" is a served id or an object with "served"', field="models")
        alias, role = entry.get("alias") or "", entry.get("role") or ""
        if not isinstance(alias, str) or not isinstance(role, str):
            raise UserError('"alias" and "role" are text', field="models")
        requests.append(
            OnboardRequest(
                endpoint=endpoint.strip(), served=served.strip(), mode=mode, alias=alias, role=role
            )
        )
    return requests


def suite_tasks(home: Path | None = None) -> list[Task]:
    """The suite's tasks: the shipped ones and those in the data folder's tasks/."""
    return load_tasks(home if home is not None else resolve_home())


async def import_tasks(
    source: Path, checkout: Path | None = None, home: Path | None = None
) -> rebench.Imported:
    """Real-bug tasks from a SWE-rebench-style JSONL file, into the data
    folder's tasks/; with `checkout` (a clone of the rows' repository) their
    code and tests come from it, and only rows whose own fix passes are kept."""
    return await rebench.import_jsonl(source, home if home is not None else resolve_home(), checkout)


class Operations:
    """What an identity may run on the bench, over one open runtime (and,
    in a server, its background services)."""

    def __init__(
        self, runtime: Runtime, identity: Identity = OWNER, services: BenchServices | None = None
    ) -> None:
        self.runtime = runtime
        self.identity = identity
        self.services = services
        self._jobs = services.jobs if services is not None else scheduler.bench_jobs(runtime)

    def check_allowed(self) -> None:
        """Refused (403) unless this identity may administer the bench."""
        if not may_administer(self.identity):
            raise Refused("this key is limited to some collections and may not change the bench", status=403)

    def _server(self) -> BenchServices:
        if self.services is None:
            raise UserError("the scheduler runs in the server (benchwarmers serve)")
        return self.services

    # ----------------------------------------------------------- onboarding

    async def enqueue(self, requests: Sequence[OnboardRequest]) -> list[int]:
        """Queue models for onboarding; the server's worker takes them at once."""
        self.check_allowed()
        ids = await onboarding.enqueue(self.runtime.store, list(requests))
        if self.services is not None:
            self.services.worker.wake()
        return ids

    async def check_onboard(self, endpoint: str, served: str, *, keep: bool = False) -> bool:
        """Whether `served` is new on `endpoint` (NotFound for an unknown
        endpoint); a new one is refused, unless `keep`, when it cannot work:
        an endpoint with no key, or a served id the endpoint's own list does
        not have (naming the closest ids it does serve). An endpoint that
        cannot list its models, or lists none (some servers list nothing),
        is given the benefit of the doubt: the probe decides."""
        self.check_allowed()
        store = self.runtime.store
        target = await get_endpoint(store, endpoint)
        new = not any(m.served == served for m in await list_models(store, endpoint=endpoint))
        if not new or keep:
            return new
        if target.needs_key and endpoint_keys.key_source(target.name) is None:
            raise UserError(
                f"endpoint {target.name!r} has no key yet: run `benchwarmers endpoint key set {target.name}` "
                f"(or set {endpoint_keys.env_var_name(target.name)}) first"
            )
        listed = await retirement.endpoint_lists(self.runtime.outbound, target)
        if not listed or served in listed:  # None (no list) or empty: no evidence
            return new
        close = difflib.get_close_matches(served, sorted(listed), n=5, cutoff=0.5)
        some = close or sorted(listed)[:5]
        label = "close ids it serves" if close else f"it serves {len(listed)}, e.g."
        raise UserError(
            f"{target.name} does not serve {served!r} ({label}: {', '.join(some) or 'none'}); "
            "fix the id, or add --keep to register it anyway"
        )

    async def onboard(self, request: OnboardRequest, progress: onboarding.Progress) -> OnboardingView:
        """Queue one model and see it through, in this process; or, when a
        running server holds the queue, follow the server running it."""
        [item_id] = await self.enqueue([request])
        done = await onboarding.work_items(
            self.runtime, self._jobs.caller, {item_id}, suite=self._jobs.run_suite, progress=progress
        )
        if done:
            return onboarding_view(done[0])
        while True:
            async with self.runtime.store.read() as session:
                item = await session.get(schema.OnboardingItem, item_id)
            assert item is not None
            progress(item_id, item.step, item.progress)
            waiting = item.not_before is not None and utc(item.not_before) > datetime.now(UTC)
            if item.state in ("done", "failed") or (item.state == "queued" and waiting):
                return onboarding_view(item)  # a rate-limited item runs again after its limit frees
            await asyncio.sleep(FOLLOW_SECONDS)

    async def cancel_onboarding(self, item_id: int) -> dict[str, Any]:
        """Cancel a waiting or running onboarding item (its view)."""
        self.check_allowed()
        return onboarding.item_view(await onboarding.cancel(self.runtime.store, item_id))

    async def queue_depth(self) -> dict[str, int]:
        """How many onboarding items are `queued` and `running` (for `/metrics`,
        which names the whole bench: only an identity that may administer)."""
        if not may_administer(self.identity):
            raise Refused(
                "this key is limited to some collections and may not read the server's metrics", status=403
            )
        return await onboarding.queue_depth(self.runtime.store)

    async def queue(self, *, include_finished: bool = True) -> dict[str, Any]:
        """The onboarding queue with each item's step and progress."""
        items = await onboarding.queue_items(self.runtime.store, include_finished=include_finished)
        views = [onboarding.item_view(item) for item in items]
        running = next((v for v in views if v["state"] == "running"), None)
        # `queued`: ready to run now; `waiting`: queued until a rate limit frees
        # (not "onboarding" yet: the chip leaves them out).
        waiting = [v for v in views if v["outcome"] == "waiting"]
        return {
            "items": views,
            "running": running,
            "queued": sum(v["outcome"] == "queued" for v in views),
            "waiting": len(waiting),
            "next_at": min((v["not_before"] for v in waiting), default=None),
        }

    # ---------------------------------------------------- discover, alerts

    async def discover(self, *, free_only: bool = False) -> list[dict[str, Any]]:
        """models.dev and FreeLLMAPI merged, marked reachable and on the bench."""
        found = await discover.discover(self.runtime.store, free_only=free_only, home=self.runtime.home)
        return [e.as_dict() for e in found]

    async def alerts(self, *, include_dismissed: bool = False) -> list[dict[str, Any]]:
        """Went paid, retired, unlisted: the newest 200."""
        query = select(schema.Alert).order_by(schema.Alert.at.desc()).limit(200)
        if not include_dismissed:
            query = query.where(schema.Alert.dismissed.is_(False))
        async with self.runtime.store.read() as session:
            rows = (await session.scalars(query)).all()
        return [
            {
                "id": a.id,
                "kind": a.kind,
                "subject": a.subject,
                "message": a.message,
                "at": iso_utc(a.at),
                "dismissed": a.dismissed,
            }
            for a in rows
        ]

    async def dismiss_alert(self, alert_id: int) -> None:
        self.check_allowed()
        async with self.runtime.store.write() as session:
            alert = await session.get(schema.Alert, alert_id)
            if alert is None:
                raise NotFound(f"no alert {alert_id}")
            alert.dismissed = True

    # ------------------------------------------------------ probes, models

    async def probe(
        self, alias: str | None = None, progress: retirement.Progress | None = None
    ) -> retirement.HealthReport:
        """Probe one model now (even an ad hoc one: someone asked), or the
        daily pass over the bench (`progress(done, total, alias)` before each
        model); a failure is confirmed once before a model is retired, and a
        rate limit is never one."""
        self.check_allowed()
        jobs = self._jobs
        if alias:
            return await retirement.probe_now(jobs.caller, jobs.store, jobs.runtime.outbound, alias)
        return await retirement.daily_health(
            jobs.caller, jobs.store, jobs.runtime.outbound, scheduler.now_utc(), progress
        )

    async def probes(self, alias: str, limit: int = 50) -> list[ProbeView]:
        """A model's probe history, newest first (NotFound for an unknown alias)."""
        await get_model(self.runtime.store, alias)
        return [probe_view(p) for p in await probes.probe_history(self.runtime.store, alias, limit=limit)]

    async def retire(self, alias: str, reason: str = "retired by the user") -> ModelView:
        self.check_allowed()
        return await retire(self.runtime.store, alias, reason)

    async def restore(self, alias: str) -> ModelView:
        self.check_allowed()
        return await restore(self.runtime.store, alias)

    async def set_role(self, alias: str, role: str) -> ModelView:
        self.check_allowed()
        return await set_role(self.runtime.store, alias, role)

    async def set_structured_output(self, alias: str, value: bool | None) -> ModelView:
        """Whether a model answers in JSON when its API is asked to (None: unknown)."""
        self.check_allowed()
        return await set_structured_output(self.runtime.store, alias, value)

    async def model_report(self, alias: str, standings: Standings | None = None) -> dict[str, Any]:
        """One model and why it sits or does not: the model, its recent
        probes, its record per collection and shape (with the reasons) and
        its suite results. `standings`, shared across models' reports, ranks
        each collection and shape once (`explain.model_report`)."""
        self.check_allowed()
        store = self.runtime.store
        return {
            "model": await get_model(store, alias),
            "probes": [probe_view(p) for p in await probes.probe_history(store, alias, limit=20)],
            "record": await model_report(store, alias, standings),
            "suite": await runner.suite_summary(self.runtime, alias),
            "notes": await pairs.model_notes(store, alias),
        }

    # ------------------------------------------------------------ scheduler

    async def scheduler(self) -> dict[str, Any]:
        """On or off, whether this replica runs the jobs (`active`: on, and
        holding the lease), each job's last and next run."""
        self.check_allowed()
        services = self._server()
        jobs = await scheduler.job_status(self.runtime.store)
        next_runs = services.clock.next_runs()
        for job in jobs:
            job["next_run_at"] = next_runs.get(job["job"])
        return {
            "enabled": await self.runtime.settings.get(SCHEDULER),
            "active": services.clock.active,
            "jobs": jobs,
        }

    async def switch_scheduler(self, enabled: bool) -> dict[str, Any]:
        self.check_allowed()
        await self._server().clock.set_enabled(enabled)
        return await self.scheduler()

    async def run_job(self, job: str) -> dict[str, Any]:
        """Run one scheduled job now."""
        self.check_allowed()
        if job not in scheduler.JOBS:
            raise NotFound(f"no job {job!r}; jobs: {', '.join(scheduler.JOBS)}")
        row = await scheduler.run_job(self._server().jobs, job)
        return {"job": job, "status": row.last_status, "detail": row.detail, "at": iso_utc(row.last_run_at)}

    async def settings_changed(self) -> None:
        """A setting changed: the scheduler re-reads its switch at once (in a server)."""
        if self.services is not None:
            await self.services.clock.reconcile()

    # ---------------------------------------------------------------- suite

    async def suite_models(self, alias: str | None = None) -> list[str]:
        """One model, or every model the bench may call on its own
        (available, not ad hoc, not an image model)."""
        self.check_allowed()
        store = self.runtime.store
        if alias is not None:
            return [(await get_model(store, alias)).alias]
        aliases = [
            m.alias
            for m in await list_models(store, include_retired=False)
            if m.status == "available" and not m.ad_hoc and m.role != "image"
        ]
        if not aliases:
            raise UserError("no model the bench may call on its own: add or onboard one first")
        return aliases

    async def suite_tasks_for(self, alias: str, shape: str | None = None) -> list[Task]:
        """The tasks that fit a model (its role, its vision), of one shape or all."""
        return [t for t in await runner.tasks_for(self.runtime, alias) if shape is None or t.shape == shape]

    async def run_suite(
        self,
        alias: str,
        tasks: list[Task],
        *,
        limit: int | None = None,
        gap: float | None = None,
        progress: Callable[[int, int], None] | None = None,
    ) -> runner.SuiteRun:
        self.check_allowed()
        return await runner.run_suite(
            self.runtime, alias, tasks=tasks, limit=limit, progress=progress, gap=gap
        )

    async def fetch_tasks(
        self,
        *,
        dataset: str = rebench_fetch.DEFAULT_DATASET,
        split: str = rebench_fetch.DEFAULT_SPLIT,
        offset: int = 0,
        limit: int = rebench_fetch.DEFAULT_LIMIT,
        progress: Callable[[int, int], None] | None = None,
    ) -> rebench_fetch.Fetched:
        """Real-bug tasks from a public SWE-rebench dataset online, into the
        data folder's tasks/ (already imported ones are kept)."""
        self.check_allowed()
        return await rebench_fetch.fetch_tasks(
            self.runtime.http,
            self.runtime.home,
            dataset=dataset,
            split=split,
            offset=offset,
            limit=limit,
            progress=progress,
        )
