"""What the core hands its front ends, and each view's JSON, spelled once.

Front ends (the HTTP routes, the dashboard, the CLI's `--json`) get views,
never database rows: a row is the store's to change, and a front end that
read one would break with the next migration. Each view's JSON is written
here, so the routes, the dashboard and the CLI show a model or a probe with
the same keys, as `formats/bench_json.py` does for a panel's reply.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

from benchwarmers.config import keys as endpoint_keys
from benchwarmers.store import schema
from benchwarmers.store.times import iso_utc, utc
from benchwarmers.store.views import EndpointView, ModelView

SECONDS_DIGITS = 3


@dataclass(frozen=True, slots=True)
class ProbeView:
    """One health or speed probe: `answered` is health, `passed` its check
    (quality); `limited`, a rate limit, says nothing of either."""

    alias: str
    at: datetime
    kind: str
    name: str
    answered: bool
    passed: bool
    call: str
    seconds: float
    first_byte_seconds: float | None
    tokens_per_second: float | None
    answer: str
    error: str
    limited: bool = False


@dataclass(frozen=True, slots=True)
class OnboardingView:
    """One model's place in the onboarding queue, and how its onboarding went."""

    id: int
    endpoint: str
    served: str
    alias: str
    mode: str
    state: str
    step: str
    progress: float
    error: str
    not_before: datetime | None


def probe_view(row: schema.Probe) -> ProbeView:
    return ProbeView(
        alias=row.alias,
        at=utc(row.at),
        kind=row.kind,
        name=row.name,
        answered=row.answered,
        passed=row.ok,
        call=row.call_id,
        seconds=row.seconds,
        first_byte_seconds=row.first_byte_seconds,
        tokens_per_second=row.tokens_per_second,
        answer=row.answer,
        error=row.error,
        limited=row.limited,
    )


def onboarding_view(row: schema.OnboardingItem) -> OnboardingView:
    return OnboardingView(
        id=row.id,
        endpoint=row.endpoint,
        served=row.served,
        alias=row.alias,
        mode=row.mode,
        state=row.state,
        step=row.step,
        progress=row.progress,
        error=row.error,
        not_before=utc(row.not_before) if row.not_before is not None else None,
    )


def probe_json(probe: ProbeView) -> dict[str, Any]:
    return {
        "at": iso_utc(probe.at),
        "kind": probe.kind,
        "name": probe.name,
        "answered": probe.answered,
        "passed": probe.passed,
        "call": probe.call,
        "seconds": round(probe.seconds, SECONDS_DIGITS),
        "first_byte_seconds": probe.first_byte_seconds,
        "tokens_per_second": probe.tokens_per_second,
        "answer": probe.answer,
        "error": probe.error,
    }


def key_label(endpoint: EndpointView) -> str:
    """Where an endpoint's key comes from, never the key: "not needed", the
    environment variable that holds it, "keys.json", or "missing"."""
    if not endpoint.needs_key:
        return "not needed"
    source = endpoint_keys.key_source(endpoint.name)
    if source == "env":
        return endpoint_keys.env_var_name(endpoint.name)
    return "keys.json" if source == "keys.json" else "missing"


def endpoint_json(endpoint: EndpointView, models: int) -> dict[str, Any]:
    """An endpoint with how many models it serves, as the dashboard and
    `endpoint list --json` show it."""
    return {
        "name": endpoint.name,
        "base_url": endpoint.base_url,
        "api": endpoint.api,
        "simulated": endpoint.simulated,
        "needs_key": endpoint.needs_key,
        "created_at": iso_utc(endpoint.created_at),
        "limit_scope": endpoint.limit_scope,
        "key": key_label(endpoint),
        "models": models,
    }


def model_json(model: ModelView) -> dict[str, Any]:
    """A model on the bench, as the HTTP API, the dashboard and `model list --json` show it."""
    return {
        "alias": model.alias,
        "endpoint": model.endpoint.name,
        "served": model.served,
        "role": model.role,
        "status": model.status,
        "status_reason": model.status_reason,
        "ad_hoc": model.ad_hoc,
        "context_window": model.context_window,
        "vision": model.vision,
        "tools": model.tools,
        "price_in": model.price_in,
        "price_out": model.price_out,
        "price_cached": model.price_cached,
        "price_source": model.price_source,
        # A free model the catalog found priced: free-only collections leave it off until accepted.
        "went_paid_at": iso_utc(model.went_paid_at) if model.went_paid_at else None,
        "structured_output": model.structured_output,
        "resting_until": iso_utc(model.resting_until) if model.resting_until else None,
    }
