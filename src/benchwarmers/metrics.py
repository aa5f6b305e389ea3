"""The operator's figures, in Prometheus' text format (`GET /metrics`).

Each figure is counted where it happens, at a seam that already exists, so
no request pays for more than a counter increment:

- `benchwarmers_requests_total{route, format, status}`: every HTTP reply, by
  route template (`/v1/chat/completions`, never the raw path), API format and
  status, counted in `server.errors.CatchAll` (which already watches the reply
  start);
- `benchwarmers_calls_total{kind, collection, member, status}` and the
  `benchwarmers_call_seconds{collection, member}` histogram: every model call
  (panel seats by their status, merges, route turns, probes, the suite), at
  the caller seam (`calls.caller`);
- `benchwarmers_spend_usd_total{collection, member}` and
  `benchwarmers_unpriced_calls_total{collection, member}`: what calls cost in
  USD at the price in effect when each ran, and the calls whose price was
  unknown (counted, never as 0 USD), at the caller seam beside the call counter;
- `benchwarmers_upstream_errors_total{endpoint, reason}`: calls that went out
  and failed (`reason` is `rate_limited` for a provider's 429, `timeout` or
  `error`);
- `benchwarmers_limiter_waits_total{endpoint}`, the
  `benchwarmers_limiter_wait_seconds{endpoint}` histogram and
  `benchwarmers_limiter_refusals_total{endpoint}`: calls our limiter held
  back, and those it refused (`limits.enforce`);
- `benchwarmers_panels_in_flight`: panels running now (`panel.engine`);
- `benchwarmers_onboarding_queue_depth{state}`: read from the store at scrape
  time (`server/routes/metrics.py`), the same for every process.

Label values are names from the bench (collections, aliases, endpoints,
route templates), never text a client sent, so label sets stay bounded.

Several worker processes (`serve --workers N`) share one set of figures
through prometheus-client's multiprocess mode: `serve` points
`PROMETHEUS_MULTIPROC_DIR` at a fresh folder before the workers start, and a
scrape of any worker sums them all (`render`). A worker that dies mid-panel
leaves its in-flight count behind until `serve` restarts (uvicorn has no hook
to mark a dead worker's gauge files).
"""

from __future__ import annotations

import os

from prometheus_client import (
    CONTENT_TYPE_LATEST,
    REGISTRY,
    CollectorRegistry,
    Counter,
    Gauge,
    Histogram,
    generate_latest,
    multiprocess,
)

MULTIPROC_ENV = "PROMETHEUS_MULTIPROC_DIR"
CONTENT_TYPE = CONTENT_TYPE_LATEST

# Model calls take from tens of milliseconds (an instant upstream) to minutes (a long answer).
_CALL_BUCKETS = (0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300)
_WAIT_BUCKETS = (0.01, 0.1, 0.5, 1, 5, 15, 60, 300)

REQUESTS = Counter(
    "benchwarmers_requests",
    "HTTP replies, by route template, API format and status",
    ["route", "format", "status"],
)
CALLS = Counter(
    "benchwarmers_calls",
    "Model calls (seat, merge, route, shadow, probe, suite), by collection, member and status",
    ["kind", "collection", "member", "status"],
)
CALL_SECONDS = Histogram(
    "benchwarmers_call_seconds",
    "A model call's duration, limiter wait included, by collection and member",
    ["collection", "member"],
    buckets=_CALL_BUCKETS,
)
SPEND = Counter(
    "benchwarmers_spend_usd",
    "USD spent on model calls at the price in effect when each ran, by collection and member",
    ["collection", "member"],
)
UNPRICED_CALLS = Counter(
    "benchwarmers_unpriced_calls",
    "Model calls whose price was unknown (not counted in spend), by collection and member",
    ["collection", "member"],
)
UPSTREAM_ERRORS = Counter(
    "benchwarmers_upstream_errors",
    "Calls that went out and failed, by endpoint and reason (rate_limited is a provider's 429)",
    ["endpoint", "reason"],
)
LIMITER_WAITS = Counter(
    "benchwarmers_limiter_waits", "Calls the limiter held back until room freed", ["endpoint"]
)
LIMITER_WAIT_SECONDS = Histogram(
    "benchwarmers_limiter_wait_seconds",
    "How long held-back calls waited",
    ["endpoint"],
    buckets=_WAIT_BUCKETS,
)
LIMITER_REFUSALS = Counter(
    "benchwarmers_limiter_refusals", "Calls the limiter refused (status `limited`)", ["endpoint"]
)
PANELS_IN_FLIGHT = Gauge("benchwarmers_panels_in_flight", "Panels running now", multiprocess_mode="livesum")


def render(extra: CollectorRegistry | None = None) -> bytes:
    """The scrape's body: this process's figures, or every worker's summed
    in multiprocess mode, then `extra` (figures read at scrape time)."""
    if os.environ.get(MULTIPROC_ENV):
        registry = CollectorRegistry()
        multiprocess.MultiProcessCollector(registry)  # type: ignore[no-untyped-call]
        body = generate_latest(registry)
    else:
        body = generate_latest(REGISTRY)
    return body + (generate_latest(extra) if extra is not None else b"")
