"""The bench's operations over HTTP, for scripts (and the dashboard, once built).

    POST /bench/ops/onboard            {"endpoint", "models": ["id" | {"served", "alias", "role"}], "mode"}
    GET  /bench/ops/queue              the onboarding queue with each item's step and progress
    GET  /bench/ops/discover?free=1    models.dev + FreeLLMAPI, marked reachable / on bench
    GET  /bench/ops/alerts?all=1       went paid, retired, unlisted
    POST /bench/ops/alerts/{id}/dismiss
    POST /bench/ops/models/{alias}/probe     probe now (one call; a failure is confirmed once)
    GET  /bench/ops/models/{alias}/probes    probe history, newest first: each probe `answered` (health)
                                             and `passed` its check (quality)
    POST /bench/ops/models/{alias}/retire    {"reason"?}
    POST /bench/ops/models/{alias}/restore
    POST /bench/ops/models/{alias}/role      {"role"}
    GET  /bench/ops/scheduler          on/off, whether this replica runs the jobs, each job's last run
    POST /bench/ops/scheduler          {"enabled": true|false}
    POST /bench/ops/scheduler/run/{job}      run one job now

The router's lifespan starts the bench's background work inside the server:
the single onboarding worker (which resumes items a restart interrupted)
and the scheduler (which does nothing until Settings switches it on).

These change the bench and spend calls, so a gateway key limited to some
collections may not use them; the owner (and unscoped keys) may.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import Annotated, Any

from fastapi import APIRouter, FastAPI, Path, Query, Request

from benchwarmers.bench import discover, onboarding, probes, retirement, scheduler
from benchwarmers.bench.onboarding import OnboardRequest
from benchwarmers.config.settings import SCHEDULER
from benchwarmers.errors import NotFound, Refused, StoreError, UserError
from benchwarmers.server.callers import caller_may_administer, caller_of
from benchwarmers.server.deps import runtime_of
from benchwarmers.server.errors import read_json
from benchwarmers.store import registry, schema
from benchwarmers.store.registry import ModelView
from benchwarmers.store.times import iso_utc


@dataclass
class BenchServices:
    jobs: scheduler.BenchJobs
    worker: onboarding.OnboardingWorker
    clock: scheduler.BenchScheduler


@asynccontextmanager
async def lifespan(app: FastAPI) -> AsyncIterator[None]:
    runtime = app.state.runtime
    jobs = scheduler.bench_jobs(runtime)
    services = BenchServices(
        jobs=jobs,
        worker=onboarding.OnboardingWorker(runtime, jobs.caller, suite=jobs.run_suite),
        clock=scheduler.BenchScheduler(jobs),
    )
    await services.worker.start()
    await services.clock.start()
    app.state.bench = services
    try:
        yield
    finally:
        app.state.bench = None
        await services.clock.shutdown()
        await services.worker.stop()


router = APIRouter(prefix="/bench/ops", lifespan=lifespan)

# The largest id a database integer holds: a bigger one is the caller's mistake (400), not a crash.
SQL_INT_MAX = 2**63 - 1


def services_of(request: Request) -> BenchServices:
    services = getattr(request.app.state, "bench", None)
    if services is None:
        raise StoreError("the server is not started")
    if not caller_may_administer(caller_of(request)):
        raise Refused("this key is limited to some collections and may not change the bench", status=403)
    return services


async def _object(request: Request) -> dict[str, Any]:
    body = await read_json(request)
    if not isinstance(body, dict):
        raise UserError("send a JSON object")
    return body


# -------------------------------------------------------------- onboarding


@router.post("/onboard")
async def onboard(request: Request) -> dict[str, Any]:
    services = services_of(request)
    body = await _object(request)
    endpoint, mode, models = body.get("endpoint"), body.get("mode", "full"), body.get("models")
    if not isinstance(endpoint, str) or not endpoint:
        raise UserError('"endpoint" (the endpoint\'s name) is required')
    if mode not in onboarding.MODES:
        raise UserError(f'"mode" must be one of {", ".join(onboarding.MODES)}')
    if not isinstance(models, list) or not models:
        raise UserError(
            '"models" must be a non-empty list of served ids or {"served", "alias", "role"} objects'
        )
    requests = []
    for entry in models:
        if isinstance(entry, str):
            entry = {"served": entry}
        if not isinstance(entry, dict) or not isinstance(entry.get("served"), str):
            raise UserError('each of "models" is a served id or an object with "served"')
        alias, role = entry.get("alias", ""), entry.get("role", "")
        if not isinstance(alias, str) or not isinstance(role, str):
            raise UserError('"alias" and "role" are text')
        requests.append(
            OnboardRequest(endpoint=endpoint, served=entry["served"], mode=mode, alias=alias, role=role)
        )
    ids = await onboarding.enqueue(services.jobs.store, requests)
    services.worker.wake()
    return {"queued": ids, "mode": mode}


@router.get("/queue")
async def queue(request: Request, all: bool = True) -> dict[str, Any]:
    items = await onboarding.queue_items(runtime_of(request).store, include_finished=all)
    views = [onboarding.item_view(item) for item in items]
    running = next((v for v in views if v["state"] == "running"), None)
    waiting = sum(v["state"] == "queued" for v in views)
    return {"items": views, "running": running, "queued": waiting}


# --------------------------------------------------------- discover, alerts


@router.get("/discover")
async def discover_list(request: Request, free: bool = False) -> dict[str, Any]:
    runtime = runtime_of(request)
    entries = await discover.discover(runtime.store, free_only=free, home=runtime.home)
    return {"models": [e.as_dict() for e in entries]}


@router.get("/alerts")
async def alerts(request: Request, all: bool = False) -> dict[str, Any]:
    from sqlalchemy import select

    query = select(schema.Alert).order_by(schema.Alert.at.desc()).limit(200)
    if not all:
        query = query.where(schema.Alert.dismissed.is_(False))
    async with runtime_of(request).store.read() as session:
        rows = (await session.scalars(query)).all()
    return {
        "alerts": [
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
    }


@router.post("/alerts/{alert_id}/dismiss")
async def dismiss(request: Request, alert_id: Annotated[int, Path(ge=1, le=SQL_INT_MAX)]) -> dict[str, Any]:
    services = services_of(request)
    async with services.jobs.store.write() as session:
        alert = await session.get(schema.Alert, alert_id)
        if alert is None:
            raise NotFound(f"no alert {alert_id}")
        alert.dismissed = True
    return {"ok": True}


# ------------------------------------------------------------------ models


def _model(view: ModelView) -> dict[str, Any]:
    return {
        "alias": view.alias,
        "endpoint": view.endpoint.name,
        "served": view.served,
        "role": view.role,
        "status": view.status,
        "status_reason": view.status_reason,
        "ad_hoc": view.ad_hoc,
    }


@router.post("/models/{alias}/probe")
async def probe_now(request: Request, alias: str) -> dict[str, Any]:
    services = services_of(request)
    report = await retirement.probe_now(
        services.jobs.caller, services.jobs.store, services.jobs.runtime.outbound, alias
    )
    latest = await probes.probe_history(services.jobs.store, alias, limit=2)
    return {
        "model": _model(await registry.get_model(services.jobs.store, alias)),
        "retired": alias in report.retired,
        "probes": [_probe(p) for p in latest],
    }


def _probe(p: schema.Probe) -> dict[str, Any]:
    return {
        "at": iso_utc(p.at),
        "kind": p.kind,
        "name": p.name,
        "answered": p.answered,
        "passed": p.ok,
        "call": p.call_id,
        "seconds": round(p.seconds, 3),
        "first_byte_seconds": p.first_byte_seconds,
        "tokens_per_second": p.tokens_per_second,
        "answer": p.answer,
        "error": p.error,
    }


@router.get("/models/{alias}/probes")
async def probe_list(request: Request, alias: str, limit: Annotated[int, Query(ge=1)] = 50) -> dict[str, Any]:
    store = runtime_of(request).store
    await registry.get_model(store, alias)
    return {"probes": [_probe(p) for p in await probes.probe_history(store, alias, limit=min(limit, 500))]}


@router.post("/models/{alias}/retire")
async def retire(request: Request, alias: str) -> dict[str, Any]:
    services = services_of(request)
    body = await _object(request) if (await request.body()).strip() else {}
    reason = body.get("reason")
    if reason is not None and not isinstance(reason, str):
        raise UserError('"reason" is text')
    return {
        "model": _model(await registry.retire(services.jobs.store, alias, reason or "retired by the user"))
    }


@router.post("/models/{alias}/restore")
async def restore(request: Request, alias: str) -> dict[str, Any]:
    services = services_of(request)
    return {"model": _model(await registry.restore(services.jobs.store, alias))}


@router.post("/models/{alias}/role")
async def set_role(request: Request, alias: str) -> dict[str, Any]:
    services = services_of(request)
    role = (await _object(request)).get("role")
    if not isinstance(role, str):
        raise UserError('"role" is required')
    return {"model": _model(await registry.set_role(services.jobs.store, alias, role))}


# --------------------------------------------------------------- scheduler


async def _scheduler_view(services: BenchServices) -> dict[str, Any]:
    """`active`: this replica runs the jobs (on, and holding the lease)."""
    jobs = await scheduler.job_status(services.jobs.store)
    next_runs = services.clock.next_runs()
    for job in jobs:
        job["next_run_at"] = next_runs.get(job["job"])
    return {
        "enabled": await services.jobs.runtime.settings.get(SCHEDULER),
        "active": services.clock.active,
        "jobs": jobs,
    }


@router.get("/scheduler")
async def scheduler_status(request: Request) -> dict[str, Any]:
    return await _scheduler_view(services_of(request))


@router.post("/scheduler")
async def scheduler_switch(request: Request) -> dict[str, Any]:
    services = services_of(request)
    enabled = (await _object(request)).get("enabled")
    if not isinstance(enabled, bool):
        raise UserError('"enabled" must be true or false')
    await services.clock.set_enabled(enabled)
    return await _scheduler_view(services)


@router.post("/scheduler/run/{job}")
async def run_job(request: Request, job: str) -> dict[str, Any]:
    services = services_of(request)
    if job not in scheduler.JOBS:
        raise NotFound(f"no job {job!r}; jobs: {', '.join(scheduler.JOBS)}")
    row = await scheduler.run_job(services.jobs, job)
    return {"job": job, "status": row.last_status, "detail": row.detail, "at": iso_utc(row.last_run_at)}
