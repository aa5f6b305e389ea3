"""`GET /metrics`: the gateway's figures in Prometheus' text format (`benchwarmers.metrics`).

Guarded like the bench routes: the guard treats `/metrics` as a gateway path
(Host check; a gateway key wherever keys are required, i.e. beyond loopback
or with `require_key`), and the figures name every collection and member,
so only an identity that may administer the bench reads them
(`core.Operations.queue_depth`): the owner on loopback, or a key not limited
to some collections (a scoped key gets 403). Under `serve --workers N` any
worker answers with every worker's figures summed.
"""

from __future__ import annotations

from fastapi import APIRouter, Request, Response
from prometheus_client import CollectorRegistry, Gauge

from benchwarmers import metrics
from benchwarmers.server.access import gateway
from benchwarmers.server.deps import operations_of

router = APIRouter()


@router.get("/metrics")
@gateway
async def scrape(request: Request) -> Response:
    depth = await operations_of(request).queue_depth()  # refuses a scoped key first
    read_now = CollectorRegistry()  # figures from the store: the same whichever worker is asked
    gauge = Gauge(
        "benchwarmers_onboarding_queue_depth",
        "Onboarding items waiting or running",
        ["state"],
        registry=read_now,
    )
    for state, count in depth.items():
        gauge.labels(state).set(count)
    return Response(metrics.render(read_now), media_type=metrics.CONTENT_TYPE)
