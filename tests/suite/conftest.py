"""A runtime whose endpoint `fake` is the fake provider (OpenAI API, no key)."""

from __future__ import annotations

import pytest

from benchwarmers.runtime import Runtime
from benchwarmers.store import registry
from benchwarmers.testing import FakeProvider


@pytest.fixture
async def bench(runtime: Runtime, fake_provider: FakeProvider) -> Runtime:
    await registry.add_endpoint(runtime.store, "fake", fake_provider.openai_base, "openai", needs_key=False)
    return runtime
