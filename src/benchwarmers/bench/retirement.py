"""Health and retirement: benching models that stopped answering.

A free model disappears without notice: its provider drops it from the list,
or it starts failing every call. Seating it would waste a seat on every ask,
so the daily health pass finds it. But one failed call is weak evidence (a
blip, a deploy), so nothing is retired on one failure alone: ONE confirming
call goes out first, and only when that fails too is the model retired. The
evidence stays: the probe rows with their errors, the reason on the model,
and an alert. Restoring is one action and clears the reason and the alert,
while the probe rows stay as history
(`store.models.restore`).

A model whose endpoint no longer lists it is confirmed the same way: the
list may be incomplete (local proxies, paginated lists), so a model that
still answers the confirming call is kept, with an alert that it is
unlisted; one that does not is retired.

A rate limit is never evidence: a probe or confirming call that meets a
429, or that our limiter will not let go now (a rest after a 429, an
endpoint's limit used up: `probes.py` never waits on the limiter), leaves
the model as it is and reports it resting until the limit frees; it is
probed again on the next pass. So a free-tier model whose day is used up is
not retired by the daily pass, and comes back when its day resets.

Ad hoc models are never touched here: the bench never calls them on its
own. Resting models (rate-limited) and image models (they make images, a
text probe proves nothing) are skipped too; rests that are over end first.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Literal

from benchwarmers.bench.probes import ProbeOutcome, confirm_probe, daily_probe
from benchwarmers.calls.caller import Caller
from benchwarmers.config.keys import endpoint_key
from benchwarmers.errors import ProviderError
from benchwarmers.limits.rest import wake_rested
from benchwarmers.providers.kinds import listed_models
from benchwarmers.providers.outbound import OutboundClient
from benchwarmers.store import schema
from benchwarmers.store.db import Store
from benchwarmers.store.models import get_model, list_models, retire, set_status
from benchwarmers.store.views import EndpointView, ModelView

log = logging.getLogger(__name__)

# Alert kinds; restoring a model dismisses them (`store.models.BENCHED_ALERT_KINDS`).
RETIRED = "retired"
UNLISTED = "unlisted"
# Statuses the scheduled probes watch: `unavailable` models are probed so
# they come back by themselves once they answer.
WATCHED = ("available", "unavailable")

# `progress(done, total, alias)` before each model of a pass.
Progress = Callable[[int, int, str], None]


@dataclass(slots=True)
class HealthReport:
    probed: list[str] = field(default_factory=list)
    retired: list[str] = field(default_factory=list)
    recovered: list[str] = field(default_factory=list)
    unlisted_but_answering: list[str] = field(default_factory=list)
    # alias -> why it rests (rate limited: not evidence; probed again next pass).
    resting: dict[str, str] = field(default_factory=dict)

    def summary(self) -> str:
        return (
            f"{len(self.probed)} probed, {len(self.retired)} retired"
            + (f" ({', '.join(self.retired)})" if self.retired else "")
            + f", {len(self.recovered)} back"
            + (f", {len(self.resting)} resting (rate limited)" if self.resting else "")
        )

    def rests(self, alias: str, outcome: ProbeOutcome) -> None:
        when = (
            datetime.fromtimestamp(outcome.frees_at, UTC).isoformat(timespec="seconds")
            if outcome.frees_at
            else "its limit resets"
        )
        self.resting[alias] = f"rate limited until {when}: {outcome.error}"


async def scheduled_models(store: Store, statuses: tuple[str, ...] = WATCHED) -> list[ModelView]:
    """Models the schedule may call: watched statuses, never ad hoc, never image."""
    return [
        m for m in await list_models(store) if m.status in statuses and not m.ad_hoc and m.role != "image"
    ]


async def endpoint_lists(outbound: OutboundClient, endpoint: EndpointView) -> set[str] | None:
    """The served ids an endpoint lists now; None when it could not say
    (unreachable, no list route): no answer is not evidence of absence."""
    try:
        return set(await listed_models(outbound, endpoint))
    except ProviderError as exc:
        log.info("listing %s failed (%s); not taken as evidence", endpoint.name, exc)
        return None


async def daily_health(
    caller: Caller,
    store: Store,
    outbound: OutboundClient,
    now: datetime,
    progress: Progress | None = None,
) -> HealthReport:
    """The daily pass: listing check per endpoint, one-word probe per model,
    one confirming call before any retirement."""
    report = HealthReport()
    listings: dict[str, set[str] | None] = {}
    await wake_rested(store, now)
    models = await scheduled_models(store)
    for done, model in enumerate(models):
        if progress:
            progress(done, len(models), model.alias)
        if model.endpoint.name not in listings:
            listings[model.endpoint.name] = await endpoint_lists(outbound, model.endpoint)
        await check_model(caller, store, model, listings[model.endpoint.name], now, report)
    if progress:
        progress(len(models), len(models), "")
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
    if outcome.limited:
        report.rests(model.alias, outcome)
        return
    if outcome.answered:
        if model.status == "unavailable":
            await set_status(store, model.alias, "available", reason="answered the probe")
            report.recovered.append(model.alias)
        return
    if model.status != "available" or not outcome.evidence:
        return  # not answering yet, or the call never went out: stays as it is
    if model.endpoint.needs_key and endpoint_key(model.endpoint.name) is None:
        return  # a missing key is the user's to fix (the probe row says how), not a model gone
    await confirm_or_retire(caller, store, model, f"probe failed: {outcome.error}", now, report)


async def probe_now(
    caller: Caller, store: Store, outbound: OutboundClient, alias: str, now: datetime | None = None
) -> HealthReport:
    """ "Probe now" for one model, asked for by the user (so ad hoc models too)."""
    model = await get_model(store, alias)
    report = HealthReport()
    listed = await endpoint_lists(outbound, model.endpoint)
    await check_model(caller, store, model, listed, now or datetime.now(UTC), report)
    return report


async def _confirm_unlisted(
    caller: Caller, store: Store, model: ModelView, now: datetime, report: HealthReport
) -> None:
    reason = f"{model.endpoint.name} no longer lists {model.served}"
    if await confirm_or_retire(caller, store, model, reason, now, report) != "answered":
        return
    report.unlisted_but_answering.append(model.alias)
    await raise_alert(store, UNLISTED, model.alias, f"{reason}, but it still answers; kept on the bench", now)


async def confirm_or_retire(
    caller: Caller, store: Store, model: ModelView, reason: str, now: datetime, report: HealthReport
) -> Literal["answered", "resting", "inconclusive", "retired"]:
    """One confirming call; retire when it fails too. A confirming call that
    is rate limited (refused by our limiter without waiting, or a 429)
    proves nothing: the model rests and the question waits for the next pass."""
    confirm = await confirm_probe(caller, store, model, now)
    if confirm.limited:
        report.rests(model.alias, confirm)
        return "resting"
    if confirm.answered:
        return "answered"
    if not confirm.evidence:
        return "inconclusive"  # the call never went out (a busy pool): nothing learned
    full_reason = f"{reason}; confirming call {confirm.call} failed: {confirm.error}"
    await retire(store, model.alias, full_reason)
    await raise_alert(store, RETIRED, model.alias, f"{model.alias} retired: {full_reason}", now)
    report.retired.append(model.alias)
    return "retired"


async def raise_alert(store: Store, kind: str, subject: str, message: str, now: datetime) -> None:
    async with store.write() as session:
        session.add(schema.Alert(kind=kind, subject=subject, message=message, at=now))
