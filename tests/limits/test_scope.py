"""Whom a provider's limits count: one model's used-up limit blocks every
model on its endpoint only when the endpoint's limits are per key; per model
is set by the user, known for providers, or learned from the headers."""

from __future__ import annotations

import pytest

from benchwarmers.calls.caller import Caller, CallResult
from benchwarmers.errors import LimitExceeded, UserError
from benchwarmers.limits.scope import default_scope
from benchwarmers.runtime import Runtime
from benchwarmers.store.endpoints import add_endpoint, set_limit_scope
from benchwarmers.store.models import add_model
from benchwarmers.store.views import ModelView
from benchwarmers.testing.fake_provider import FakeProvider
from benchwarmers.testing.script import FakeModel, RateLimit
from benchwarmers.types import Request, Sampling, user


async def ask(runtime: Runtime, model: ModelView) -> CallResult:
    request = Request(messages=(user("hi"),), sampling=Sampling(max_tokens=20))
    return await Caller(runtime).call(model, request, kind="seat", timeout=2.0)


async def two_models(runtime: Runtime, fake: FakeProvider, scope: str = "") -> tuple[ModelView, ModelView]:
    fake.add(FakeModel("spent", rate_limit=RateLimit("openai", retry=30, limit=50, remaining=0)))
    fake.add(FakeModel("fresh", answer="still here"))
    await add_endpoint(runtime.store, "fake", fake.openai_base, "openai", needs_key=False, limit_scope=scope)
    return (
        await add_model(runtime.store, "spent", "fake", "spent"),
        await add_model(runtime.store, "fresh", "fake", "fresh"),
    )


async def test_per_key_one_models_used_up_limit_blocks_the_endpoint(
    runtime: Runtime, fake_provider: FakeProvider
) -> None:
    spent, fresh = await two_models(runtime, fake_provider, "key")
    assert (await ask(runtime, spent)).status == "rate_limited"
    refused = await ask(runtime, fresh)
    assert refused.status == "limited" and fake_provider.calls["fresh"] == 0
    # The refusal names the limit that was hit, with what it counts.
    assert "fake's limit of 50 requests (from the provider) is used up" in refused.error


async def test_per_model_it_blocks_only_that_model(runtime: Runtime, fake_provider: FakeProvider) -> None:
    spent, fresh = await two_models(runtime, fake_provider, "model")
    assert (await ask(runtime, spent)).status == "rate_limited"
    assert (await ask(runtime, fresh)).status == "ok"
    assert fake_provider.calls["fresh"] == 1
    assert await runtime.limiter.scope("fake") == "model"


async def test_per_model_is_learned_when_models_report_different_ceilings(
    runtime: Runtime, fake_provider: FakeProvider
) -> None:
    fake_provider.add(
        FakeModel("small", headers=RateLimit("openai", retry=30, limit=30, remaining=29).headers())
    )
    fake_provider.add(
        FakeModel("big", headers=RateLimit("openai", retry=30, limit=60, remaining=59).headers())
    )
    await add_endpoint(runtime.store, "fake", fake_provider.openai_base, "openai", needs_key=False)
    small = await add_model(runtime.store, "small", "fake", "small")
    big = await add_model(runtime.store, "big", "fake", "big")
    assert await runtime.limiter.scope("fake") == "key"  # loopback: no known provider
    assert (await ask(runtime, small)).status == "ok"
    assert (await ask(runtime, big)).status == "ok"
    assert await runtime.limiter.scope("fake") == "model"
    # Now a 429 with nothing left on one model leaves the other alone.
    fake_provider.models["small"].rate_limit = RateLimit("openai", retry=30, limit=30, remaining=0)
    assert (await ask(runtime, small)).status == "rate_limited"
    assert (await ask(runtime, big)).status == "ok"
    # The quotas view shows each model's own limit.
    from benchwarmers.limits.quotas import quotas_view

    learned = {(q.served, q.unit, q.left) for q in (await quotas_view(runtime.store)).quotas}
    assert ("small", "requests", 0) in learned and ("big", "requests", 59) in learned
    assert not any(served == "" for served, _, _ in learned)  # the per-key count was one model's


async def test_the_users_choice_wins_over_what_is_learned(
    runtime: Runtime, fake_provider: FakeProvider
) -> None:
    await add_endpoint(runtime.store, "fake", fake_provider.openai_base, "openai", needs_key=False)
    await set_limit_scope(runtime.store, "fake", "model")
    assert await runtime.limiter.scope("fake") == "model"
    await set_limit_scope(runtime.store, "fake", "auto")
    assert await runtime.limiter.scope("fake") == "key"
    with pytest.raises(UserError, match="limit scope"):
        await set_limit_scope(runtime.store, "fake", "per-team")


@pytest.mark.parametrize(
    ("url", "scope"),
    [
        ("https://api.groq.com/openai/v1", "model"),
        ("https://generativelanguage.googleapis.com/v1beta", "model"),
        ("https://openrouter.ai/api/v1", "model"),
        ("https://api.mistral.ai/v1", "key"),
        ("http://127.0.0.1:11434", "key"),
    ],
)
def test_known_providers_have_defaults(url: str, scope: str) -> None:
    assert default_scope(url) == scope


async def test_a_used_up_day_with_no_stated_limit_is_named_and_frees_at_its_reset(
    runtime: Runtime, fake_provider: FakeProvider
) -> None:
    await add_endpoint(runtime.store, "lim", fake_provider.openai_base, "openai", needs_key=False)
    await runtime.limiter.learn(
        "lim", "one", status=429, headers={}, body="Quota exceeded: requests per day. Come back tomorrow."
    )
    with pytest.raises(LimitExceeded) as refused:
        await runtime.limiter.admit("lim", "two", tokens=1025, max_wait=0)
    message = refused.value.message
    assert message.startswith("lim's requests a day limit (from the provider) is used up; it frees at ")
    assert "tokens" not in message and refused.value.frees_at is not None
