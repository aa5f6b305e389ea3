"""A rate limit is never evidence that a model stopped answering: through
the real caller and the fake provider, a model that answers only 429s, or
whose endpoint's limit is used up, or whose confirming call our limiter
would make wait, is never retired by the daily pass; it rests and comes back.
Onboarding such a model never ends `unavailable`: it rests, and its item
runs again after the reset."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from datetime import UTC, datetime, timedelta

import pytest

from benchwarmers.bench import onboarding, probes, retirement
from benchwarmers.bench.onboarding import OnboardRequest
from benchwarmers.calls.caller import Caller
from benchwarmers.limits.rest import wake_rested
from benchwarmers.limits.user_limits import set_limits
from benchwarmers.runtime import Runtime
from benchwarmers.store import schema
from benchwarmers.store.models import add_model, get_model
from benchwarmers.store.times import utc
from benchwarmers.testing import FakeError, FakeModel, FakeProvider
from benchwarmers.testing.script import RateLimit

# How long a 429 asks to rest. A step before the reset must find the model
# still resting, so this is many times what a step takes on a loaded box
# (half a second was not: a loaded run saw a second probe after the reset).
REST = 2.0


async def health(rt: Runtime) -> retirement.HealthReport:
    return await retirement.daily_health(Caller(rt), rt.store, rt.outbound, datetime.now(UTC))


async def test_a_model_that_answers_only_429s_rests_and_comes_back(
    bench: Runtime, fake_provider: FakeProvider, add_fake: Callable[..., FakeModel]
) -> None:
    model = add_fake("busy", rate_limit=RateLimit("openai", retry=REST))
    await add_model(bench.store, "busy", "fake", "busy")
    report = await health(bench)
    assert report.retired == [] and list(report.resting) == ["busy"]
    assert "rate limited until" in report.resting["busy"]
    assert fake_provider.calls["busy"] == 1  # no confirming call into a wall
    rested = await get_model(bench.store, "busy")
    assert rested.status == "resting"
    [probe] = await probes.probe_history(bench.store, "busy")
    assert probe.limited and not probe.answered

    # Still 429ing after its rest: probed again, rests again, never retired.
    await asyncio.sleep(REST + 0.1)
    again = await health(bench)
    assert again.retired == [] and list(again.resting) == ["busy"]
    assert fake_provider.calls["busy"] == 2

    model.rate_limit = None  # its limit resets
    await asyncio.sleep(REST + 0.1)
    back = await health(bench)
    assert back.retired == [] and back.resting == {}
    assert fake_provider.calls["busy"] == 3
    assert (await get_model(bench.store, "busy")).status == "available"


async def test_a_model_whose_endpoint_limit_is_used_up_is_not_probed_into_it_nor_retired(
    bench: Runtime, fake_provider: FakeProvider, add_fake: Callable[..., FakeModel]
) -> None:
    # The fake on loopback is an unknown provider: its limits count per key.
    add_fake("first", rate_limit=RateLimit("openai", retry=30, limit=100, remaining=0))
    add_fake("second", error=FakeError(status=503))
    await add_model(bench.store, "first", "fake", "first")
    await add_model(bench.store, "second", "fake", "second")
    report = await health(bench)
    assert report.retired == []
    assert set(report.resting) == {"first", "second"}
    # The endpoint's requests are used up: the second model's probe never went out.
    assert fake_provider.calls["second"] == 0
    assert "limit of 100 requests" in report.resting["second"]
    assert (await get_model(bench.store, "second")).status == "available"


async def test_a_confirming_call_the_limiter_refuses_or_would_delay_retires_nobody(
    bench: Runtime, fake_provider: FakeProvider, add_fake: Callable[..., FakeModel]
) -> None:
    # The daily probe fails for real; the confirming call would wait a minute on our limit.
    add_fake("flaky", error=FakeError(status=503))
    await add_model(bench.store, "flaky", "fake", "flaky")
    await set_limits(bench.store, "fake", "flaky", {"rpm": 1})
    report = await health(bench)
    assert report.retired == [] and list(report.resting) == ["flaky"]
    assert "1 requests a minute" in report.resting["flaky"]
    assert fake_provider.calls["flaky"] == 1  # the failed probe; the confirmation was never sent
    assert (await get_model(bench.store, "flaky")).status == "available"
    kinds = [(p.kind, p.limited) for p in await probes.probe_history(bench.store, "flaky")]
    assert kinds == [("confirm", True), ("daily", False)]


async def test_a_real_failure_is_still_retired_after_one_confirming_call(
    bench: Runtime, fake_provider: FakeProvider, add_fake: Callable[..., FakeModel]
) -> None:
    add_fake("dead", error=FakeError(status=503))
    await add_model(bench.store, "dead", "fake", "dead")
    report = await health(bench)
    assert report.retired == ["dead"] and report.resting == {}
    assert fake_provider.calls["dead"] == 2


async def test_probe_progress_is_reported_per_model(
    bench: Runtime, add_fake: Callable[..., FakeModel]
) -> None:
    for name in ("a", "b"):
        add_fake(name)
        await add_model(bench.store, name, "fake", name)
    seen: list[tuple[int, int, str]] = []
    await retirement.daily_health(
        Caller(bench), bench.store, bench.outbound, datetime.now(UTC), lambda d, t, a: seen.append((d, t, a))
    )
    assert seen == [(0, 2, "a"), (1, 2, "b"), (2, 2, "")]


# ---------------------------------------------------------------- onboarding


async def onboard(rt: Runtime, served: str) -> schema.OnboardingItem:
    ids = await onboarding.enqueue(rt.store, [OnboardRequest("fake", served, "quick", alias=served)])
    [item] = await onboarding.drain(rt, Caller(rt), suite=None, only=set(ids))
    return item


async def test_onboarding_a_model_that_answers_only_429s_rests_and_is_tried_again_after_the_reset(
    bench: Runtime,
    fake_provider: FakeProvider,
    add_fake: Callable[..., FakeModel],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(probes, "ONBOARD_PAUSE_MAX", 0.0)  # no pause before trying a probe again
    model = add_fake("walled", rate_limit=RateLimit("openai", retry=REST))
    item = await onboard(bench, "walled")
    assert fake_provider.calls["walled"] == 1  # probing stops at the wall
    rested = await get_model(bench.store, "walled")
    assert rested.status == "resting" and rested.resting_until is not None
    assert "rate limited while onboarding" in rested.status_reason
    assert item.state == "queued" and item.not_before is not None
    assert item.step.startswith("rate limited until")

    # Its rest ends by onboarding again, not by waking up `available` unheard: asked
    # at a moment past the rest's end, nothing wakes it.
    assert await wake_rested(bench.store, now=utc(rested.resting_until) + timedelta(seconds=1)) == 0
    assert (await get_model(bench.store, "walled")).status == "resting"
    await asyncio.sleep(REST + 0.1)  # the item's time to be onboarded again

    model.rate_limit = None  # the limit reset
    [again] = await onboarding.drain(bench, Caller(bench), suite=None)
    assert again.id == item.id and again.state == "done"
    assert (await get_model(bench.store, "walled")).status == "available"
    assert fake_provider.calls["walled"] == 5


async def test_an_onboarding_item_waiting_on_a_limit_is_not_run_before_it_frees(
    bench: Runtime, fake_provider: FakeProvider, add_fake: Callable[..., FakeModel]
) -> None:
    add_fake("daily", rate_limit=RateLimit("day"))  # a per-day quota: no retry time said
    item = await onboard(bench, "daily")
    assert fake_provider.calls["daily"] == 1
    assert item.state == "queued" and item.not_before is not None
    assert utc(item.not_before) > datetime.now(UTC)
    assert await onboarding.drain(bench, Caller(bench), suite=None) == []  # not due: left waiting
    assert fake_provider.calls["daily"] == 1
    assert (await get_model(bench.store, "daily")).status == "resting"


async def test_onboarding_refused_by_our_own_limiter_is_no_failure(
    bench: Runtime, fake_provider: FakeProvider, add_fake: Callable[..., FakeModel]
) -> None:
    # The endpoint's requests (limited per key on this unknown provider) are used up.
    add_fake("first", rate_limit=RateLimit("openai", retry=120, limit=100, remaining=0))
    await add_model(bench.store, "first", "fake", "first")
    await health(bench)
    add_fake("second")
    item = await onboard(bench, "second")
    assert fake_provider.calls["second"] == 0  # refused before it went out, and not waited for
    second = await get_model(bench.store, "second")
    assert second.status == "resting" and "limit of 100 requests" in second.status_reason
    assert item.state == "queued" and item.not_before is not None


async def test_an_onboarding_probe_stopped_by_a_short_limit_waits_for_it_between_calls(
    bench: Runtime, fake_provider: FakeProvider, add_fake: Callable[..., FakeModel]
) -> None:
    add_fake("blip", rate_limit=RateLimit("retry-after-ms", retry=0.3), fail_first=1)
    item = await onboard(bench, "blip")
    # The first probe met a 429 that frees in 0.3 s: tried again after it (not waited out
    # inside a call), then the other three.
    assert item.state == "done" and fake_provider.calls["blip"] == 5
    rows = [(r.name, r.limited) for r in reversed(await probes.probe_history(bench.store, "blip"))]
    assert rows == [("word", True), ("word", False), ("sum", False), ("json", False), ("format", False)]
    assert (await get_model(bench.store, "blip")).status == "available"
