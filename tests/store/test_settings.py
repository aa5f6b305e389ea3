"""Typed settings: safe defaults on a fresh install, checked values."""

from __future__ import annotations

import pytest

from benchwarmers.errors import NotFound, UserError
from benchwarmers.runtime import Runtime
from benchwarmers.store.settings import ALLOWED_HOSTS, REQUIRE_KEY, SCHEDULER

pytestmark = pytest.mark.unit


async def test_fresh_install_defaults(runtime: Runtime) -> None:
    assert await runtime.settings.get(SCHEDULER) is False
    assert await runtime.settings.get(ALLOWED_HOSTS) == []
    assert (await runtime.settings.all())["require_key"] is False


async def test_set_and_read_back(runtime: Runtime) -> None:
    await runtime.settings.set(SCHEDULER, True)
    await runtime.settings.set_named("allowed_hosts", "Bench.Example.org, other.example bench.example.org")
    await runtime.settings.set_named("require_key", "on")
    assert await runtime.settings.get(SCHEDULER) is True
    assert await runtime.settings.get(ALLOWED_HOSTS) == ["bench.example.org", "other.example"]
    assert await runtime.settings.get(REQUIRE_KEY) is True


async def test_bad_values_are_refused(runtime: Runtime) -> None:
    with pytest.raises(UserError, match="true or false"):
        await runtime.settings.set(SCHEDULER, "maybe")
    with pytest.raises(UserError, match="not a host name"):
        await runtime.settings.set(ALLOWED_HOSTS, ["https://x.example/"])
    with pytest.raises(NotFound, match="no setting"):
        await runtime.settings.set_named("colour", "blue")
    assert await runtime.settings.get(SCHEDULER) is False
