"""A rate limit is never evidence that a model stopped answering: through
the real caller and the fake provider, a model that answers only 429s, or
whose endpoint's limit is used up, or whose confirming call our limiter
would make wait, is never retired by the daily pass; it rests and comes back."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from datetime import UTC, datetime

from benchwarmers.bench import probes, retirement
from benchwarmers.calls.caller import Caller
from benchwarmers.limits.user_limits import set_limits
from benchwarmers.runtime import Runtime
from benchwarmers.store import registry
from benchwarmers.testing import FakeError, FakeModel, FakeProvider
from benchwarmers.testing.script import RateLimit


async def health(rt: Runtime) -> retirement.HealthReport:
    return await retirement.daily_health(Caller(rt), rt.store, rt.outbound, datetime.now(UTC))


async def test_a_model_that_answers_only_429s_rests_and_comes_back(
    bench: Runtime, fake_provider: FakeProvider, add_fake: Callable[..., FakeModel]
) -> None:
    model = add_fake("busy", rate_limit=RateLimit("openai", retry=0.5))
    await registry.add_model(bench.store, "busy", "fake", "busy")
    report = await health(bench)
    assert report.retired == [] and list(report.resting) == ["busy"]
    assert "rate limited until" in report.resting["busy"]
    assert fake_provider.calls["busy"] == 1  # no confirming call into a wall
    rested = await registry.get_model(bench.store, "busy")
    assert rested.status == "resting"
    [probe] = await probes.probe_history(bench.store, "busy")
    assert probe.limited and not probe.answered

    # Still 429ing after its rest: probed again, rests again, never retired.
    await asyncio.sleep(0.6)
    again = await health(bench)
    assert again.retired == [] and list(again.resting) == ["busy"]
    assert fake_provider.calls["busy"] == 2

    model.rate_limit = None  # its limit resets
    await asyncio.sleep(0.6)
    back = await health(bench)
    assert back.retired == [] and back.resting == {}
    assert fake_provider.calls["busy"] == 3
    assert (await registry.get_model(bench.store, "busy")).status == "available"


async def test_a_model_whose_endpoint_limit_is_used_up_is_not_probed_into_it_nor_retired(
    bench: Runtime, fake_provider: FakeProvider, add_fake: Callable[..., FakeModel]
) -> None:
    # The fake on loopback is an unknown provider: its limits count per key.
    add_fake("first", rate_limit=RateLimit("openai", retry=30, limit=100, remaining=0))
    add_fake("second", error=FakeError(status=503))
    await registry.add_model(bench.store, "first", "fake", "first")
    await registry.add_model(bench.store, "second", "fake", "second")
    report = await health(bench)
    assert report.retired == []
    assert set(report.resting) == {"first", "second"}
    # The endpoint's requests are used up: the second model's probe never went out.
    assert fake_provider.calls["second"] == 0
    assert "limit of 100 requests" in report.resting["second"]
    assert (await registry.get_model(bench.store, "second")).status == "available"


async def test_a_confirming_call_the_limiter_refuses_or_would_delay_retires_nobody(
    bench: Runtime, fake_provider: FakeProvider, add_fake: Callable[..., FakeModel]
) -> None:
    # The daily probe fails for real; the confirming call would wait a minute on our limit.
    add_fake("flaky", error=FakeError(status=503))
    await registry.add_model(bench.store, "flaky", "fake", "flaky")
    await set_limits(bench.store, "fake", "flaky", {"rpm": 1})
    report = await health(bench)
    assert report.retired == [] and list(report.resting) == ["flaky"]
    assert "1 requests a minute" in report.resting["flaky"]
    assert fake_provider.calls["flaky"] == 1  # the failed probe; the confirmation was never sent
    assert (await registry.get_model(bench.store, "flaky")).status == "available"
    kinds = [(p.kind, p.limited) for p in await probes.probe_history(bench.store, "flaky")]
    assert kinds == [("confirm", True), ("daily", False)]


async def test_a_real_failure_is_still_retired_after_one_confirming_call(
    bench: Runtime, fake_provider: FakeProvider, add_fake: Callable[..., FakeModel]
) -> None:
    add_fake("dead", error=FakeError(status=503))
    await registry.add_model(bench.store, "dead", "fake", "dead")
    report = await health(bench)
    assert report.retired == ["dead"] and report.resting == {}
    assert fake_provider.calls["dead"] == 2


async def test_probe_progress_is_reported_per_model(
    bench: Runtime, add_fake: Callable[..., FakeModel]
) -> None:
    for name in ("a", "b"):
        add_fake(name)
        await registry.add_model(bench.store, name, "fake", name)
    seen: list[tuple[int, int, str]] = []
    await retirement.daily_health(
        Caller(bench), bench.store, bench.outbound, datetime.now(UTC), lambda d, t, a: seen.append((d, t, a))
    )
    assert seen == [(0, 2, "a"), (1, 2, "b"), (2, 2, "")]
