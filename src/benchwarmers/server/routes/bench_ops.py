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

The router's lifespan starts the bench's background work inside the server
(`CoreHandle.running_bench`: the single onboarding worker, which resumes items a
restart interrupted, and the scheduler, which does nothing until Settings
switches it on).

Glue over `core.Operations`, which holds the rule: what changes the bench
or spends calls is refused to a gateway key limited to some collections;
the owner (and unscoped keys) may.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Annotated, Any

from fastapi import APIRouter, FastAPI, Path, Query, Request

from benchwarmers.core import CoreHandle, model_json, onboard_requests, probe_json
from benchwarmers.errors import UserError
from benchwarmers.server.access import gateway
from benchwarmers.server.deps import admin_of, operations_of
from benchwarmers.server.errors import read_json


@asynccontextmanager
async def lifespan(app: FastAPI) -> AsyncIterator[None]:
    core: CoreHandle = app.state.core  # opened by the app's lifespan, around this one
    async with core.running_bench():
        yield


router = APIRouter(prefix="/bench/ops", lifespan=lifespan)

# The largest id a database integer holds: a bigger one is the caller's mistake (400), not a crash.
SQL_INT_MAX = 2**63 - 1


async def _object(request: Request) -> dict[str, Any]:
    body = await read_json(request)
    if not isinstance(body, dict):
        raise UserError("send a JSON object")
    return body


# -------------------------------------------------------------- onboarding


@router.post("/onboard")
@gateway
async def onboard(request: Request) -> dict[str, Any]:
    ops = operations_of(request)
    ops.check_allowed()
    requests = onboard_requests(await read_json(request))
    return {"queued": await ops.enqueue(requests), "mode": requests[0].mode}


@router.get("/queue")
@gateway
async def queue(request: Request, all: bool = True) -> dict[str, Any]:
    return await operations_of(request).queue(include_finished=all)


# --------------------------------------------------------- discover, alerts


@router.get("/discover")
@gateway
async def discover_list(request: Request, free: bool = False) -> dict[str, Any]:
    return {"models": await operations_of(request).discover(free_only=free)}


@router.get("/alerts")
@gateway
async def alerts(request: Request, all: bool = False) -> dict[str, Any]:
    return {"alerts": await operations_of(request).alerts(include_dismissed=all)}


@router.post("/alerts/{alert_id}/dismiss")
@gateway
async def dismiss(request: Request, alert_id: Annotated[int, Path(ge=1, le=SQL_INT_MAX)]) -> dict[str, Any]:
    await operations_of(request).dismiss_alert(alert_id)
    return {"ok": True}


# ------------------------------------------------------------------ models


@router.post("/models/{alias:path}/probe")
@gateway
async def probe_now(request: Request, alias: str) -> dict[str, Any]:
    ops = operations_of(request)
    report = await ops.probe(alias)
    return {
        "model": model_json(await admin_of(request).model(alias)),
        "retired": alias in report.retired,
        "probes": [probe_json(p) for p in await ops.probes(alias, limit=2)],
    }


@router.get("/models/{alias:path}/probes")
@gateway
async def probe_list(request: Request, alias: str, limit: Annotated[int, Query(ge=1)] = 50) -> dict[str, Any]:
    return {
        "probes": [probe_json(p) for p in await operations_of(request).probes(alias, limit=min(limit, 500))]
    }


@router.post("/models/{alias:path}/retire")
@gateway
async def retire(request: Request, alias: str) -> dict[str, Any]:
    ops = operations_of(request)
    ops.check_allowed()
    body = await _object(request) if (await request.body()).strip() else {}
    reason = body.get("reason")
    if reason is not None and not isinstance(reason, str):
        raise UserError('"reason" is text')
    return {"model": model_json(await ops.retire(alias, reason or "retired by the user"))}


@router.post("/models/{alias:path}/restore")
@gateway
async def restore(request: Request, alias: str) -> dict[str, Any]:
    return {"model": model_json(await operations_of(request).restore(alias))}


@router.post("/models/{alias:path}/role")
@gateway
async def set_role(request: Request, alias: str) -> dict[str, Any]:
    ops = operations_of(request)
    ops.check_allowed()
    role = (await _object(request)).get("role")
    if not isinstance(role, str):
        raise UserError('"role" is required')
    return {"model": model_json(await ops.set_role(alias, role))}


# --------------------------------------------------------------- scheduler


@router.get("/scheduler")
@gateway
async def scheduler_status(request: Request) -> dict[str, Any]:
    return await operations_of(request).scheduler()


@router.post("/scheduler")
@gateway
async def scheduler_switch(request: Request) -> dict[str, Any]:
    ops = operations_of(request)
    ops.check_allowed()
    enabled = (await _object(request)).get("enabled")
    if not isinstance(enabled, bool):
        raise UserError('"enabled" must be true or false')
    return await ops.switch_scheduler(enabled)


@router.post("/scheduler/run/{job}")
@gateway
async def run_job(request: Request, job: str) -> dict[str, Any]:
    return await operations_of(request).run_job(job)
