"""Fixtures for the bench's operations: a runtime whose endpoint `fake` is
the fake provider (OpenAI API, no key), and fake models that answer the
probes the way a capable model would."""

from __future__ import annotations

import re
from collections.abc import Callable

import pytest

from benchwarmers.runtime import Runtime
from benchwarmers.store import registry
from benchwarmers.testing import FakeModel, FakeProvider, FakeRequest


def capable(request: FakeRequest) -> str:
    """Answers the onboarding probes right, and anything else in one line."""
    prompt = request.messages[-1].text if request.messages else ""
    if "colour of a clear" in prompt:
        return "Blue"
    if "17 + 25" in prompt:
        return "42"
    if "JSON object" in prompt:
        return '{"name": "bench", "count": 3}'
    if "ANSWER:" in prompt:
        return "ANSWER: Paris"
    if re.search(r"\bone word\b", prompt):
        return "ready"
    return "A short answer from a capable model."


@pytest.fixture
def add_fake(fake_provider: FakeProvider) -> Callable[..., FakeModel]:
    def add(served: str, **script: object) -> FakeModel:
        script.setdefault("answer", capable)
        return fake_provider.add(FakeModel(served, **script))  # type: ignore[arg-type]

    return add


@pytest.fixture
async def bench(runtime: Runtime, fake_provider: FakeProvider) -> Runtime:
    await registry.add_endpoint(runtime.store, "fake", fake_provider.openai_base, "openai", needs_key=False)
    return runtime
