"""Health and retirement: benching models that stopped answering.

A free model disappears without notice: its provider drops it from the list,
or it starts failing every call. Seating it would waste a seat on every ask,
so the daily health pass finds it. But one failed call is weak evidence (a
blip, a deploy), so nothing is retired on one failure alone: ONE confirming
call goes out first, and only when that fails too is the model retired. The
evidence stays: the probe rows with their errors, the reason on the model,
and an alert. Restoring is one action and clears the reason and the alert,
while the probe rows stay as history
(`registry.restore`).

A model whose endpoint no longer lists it is confirmed the same way: the
list may be incomplete (local proxies, paginated lists), so a model that
still answers the confirming call is kept, with an alert that it is
unlisted; one that does not is retired.

Ad hoc models are never touched here: the bench never calls them on its
own. Resting models (rate-limited) and image models (they make images, a
text probe proves nothing) are skipped too.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from datetime import UTC, datetime

from benchwarmers.bench.probes import confirm_probe, daily_probe
from benchwarmers.calls.caller import Caller
from benchwarmers.config.keys import endpoint_key
from benchwarmers.errors import ProviderError
from benchwarmers.providers.base import Target, adapter_for
from benchwarmers.providers.outbound import OutboundClient
from benchwarmers.store import registry, schema
from benchwarmers.store.db import Store
from benchwarmers.store.registry import EndpointView, ModelView

log = logging.getLogger(__name__)

# Alert kinds; restoring a model dismisses them (registry.BENCHED_ALERT_KINDS).
RETIRED = "retired"
UNLISTED = "unlisted"
# Statuses the scheduled probes watch: `unavailable` models are probed so
# they come back by themselves once they answer.
WATCHED = ("available", "unavailable")


@dataclass(slots=True)
class HealthReport:
    probed: list[str] = field(default_factory=list)
    retired: list[str] = field(default_factory=list)
    recovered: list[str] = field(default_factory=list)
    unlisted_but_answering: list[str] = field(default_factory=list)

    def summary(self) -> str:
        return (
            f"{len(self.probed)} probed, {len(self.retired)} retired"
            + (f" ({', '.join(self.retired)})" if self.retired else "")
            + f", {len(self.recovered)} back"
        )


async def scheduled_models(store: Store, statuses: tuple[str, ...] = WATCHED) -> list[ModelView]:
    """Models the schedule may call: watched statuses, never ad hoc, never image."""
    return [
        m
        for m in await registry.list_models(store)
        if m.status in statuses and not m.ad_hoc and m.role != "image"
    ]


async def endpoint_lists(outbound: OutboundClient, endpoint: EndpointView) -> set[str] | None:
    """The served ids an endpoint lists now; None when it could not say
    (unreachable, no list route): no answer is not evidence of absence."""
    target = Target(
        endpoint=endpoint.name,
        api=endpoint.api,
        base_url=endpoint.base_url,
        served="",
        key=endpoint_key(endpoint.name) if endpoint.needs_key else "",
    )
    try:
        return set(await adapter_for(endpoint.api, outbound).list_models(target))
    except ProviderError as exc:
        log.info("listing %s failed (%s); not taken as evidence", endpoint.name, exc)
        return None


async def daily_health(caller: Caller, store: Store, outbound: OutboundClient, now: datetime) -> HealthReport:
    """The daily pass: listing check per endpoint, one-word probe per model,
    one confirming call before any retirement."""
    report = HealthReport()
    listings: dict[str, set[str] | None] = {}
    for model in await scheduled_models(store):
        if model.endpoint.name not in listings:
            listings[model.endpoint.name] = await endpoint_lists(outbound, model.endpoint)
        await check_model(caller, store, model, listings[model.endpoint.name], now, report)
    return report


async def check_model(
    caller: Caller,
    store: Store,
    model: ModelView,
    listed: set[str] | None,
    now: datetime,
    report: HealthReport,
) -> None:
    """One model's health check: what the daily pass and "probe now" run."""
    report.probed.append(model.alias)
    if listed is not None and model.served not in listed:
        await _confirm_unlisted(caller, store, model, now, report)
        return
    outcome = await daily_probe(caller, store, model, now)
    if outcome.answered:
        if model.status == "unavailable":
            await registry.set_status(store, model.alias, "available", reason="answered the probe")
            report.recovered.append(model.alias)
        return
    if model.status != "available" or not outcome.evidence:
        return  # not answering yet, or the call never went out: stays as it is
    if model.endpoint.needs_key and endpoint_key(model.endpoint.name) is None:
        return  # a missing key is the user's to fix (the probe row says how), not a model gone
    if await confirm_or_retire(caller, store, model, f"probe failed: {outcome.error}", now):
        report.retired.append(model.alias)


async def probe_now(
    caller: Caller, store: Store, outbound: OutboundClient, alias: str, now: datetime | None = None
) -> HealthReport:
    """ "Probe now" for one model, asked for by the user (so ad hoc models too)."""
    model = await registry.get_model(store, alias)
    report = HealthReport()
    listed = await endpoint_lists(outbound, model.endpoint)
    await check_model(caller, store, model, listed, now or datetime.now(UTC), report)
    return report


async def _confirm_unlisted(
    caller: Caller, store: Store, model: ModelView, now: datetime, report: HealthReport
) -> None:
    reason = f"{model.endpoint.name} no longer lists {model.served}"
    if await confirm_or_retire(caller, store, model, reason, now):
        report.retired.append(model.alias)
        return
    report.unlisted_but_answering.append(model.alias)
    await raise_alert(store, UNLISTED, model.alias, f"{reason}, but it still answers; kept on the bench", now)


async def confirm_or_retire(
    caller: Caller, store: Store, model: ModelView, reason: str, now: datetime
) -> bool:
    """One confirming call; retire when it fails too. Returns whether retired."""
    confirm = await confirm_probe(caller, store, model, now)
    if confirm.answered or not confirm.evidence:
        return False
    full_reason = f"{reason}; confirming call {confirm.call} failed: {confirm.error}"
    await registry.retire(store, model.alias, full_reason)
    await raise_alert(store, RETIRED, model.alias, f"{model.alias} retired: {full_reason}", now)
    return True


async def raise_alert(store: Store, kind: str, subject: str, message: str, now: datetime) -> None:
    async with store.write() as session:
        session.add(schema.Alert(kind=kind, subject=subject, message=message, at=now))
