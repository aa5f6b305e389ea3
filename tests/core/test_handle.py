"""`core.CoreHandle`, the core as the server holds it: each service handed out
for the identity asked, over the one runtime the handle was opened on; the
bench's background services seen by `operations` only while they run; the
store's health and the login's rules asked of it, not of the runtime."""

from __future__ import annotations

from pathlib import Path

import pytest

from benchwarmers.core import OWNER, CoreHandle, Identity
from benchwarmers.errors import Refused, UserError
from benchwarmers.runtime import Runtime
from benchwarmers.testing.store_template import copy_migrated_store

SCOPED = Identity("scoped", frozenset({"duo"}))


def test_each_service_is_the_identitys_over_the_one_runtime(runtime: Runtime) -> None:
    core = CoreHandle(runtime)
    services = [
        core.panels(SCOPED, unanswered_is_error=True),
        core.route_mode(SCOPED),
        core.admin(SCOPED),
        core.spend(SCOPED),
        core.operations(SCOPED),
    ]
    assert [(s.runtime, s.identity) for s in services] == [(runtime, SCOPED)] * len(services)
    assert core.panels(OWNER).unanswered_is_error is False
    everything = core.core(OWNER)
    assert (everything.admin.identity, everything.home) == (OWNER, runtime.home)


async def test_operations_see_the_bench_services_only_while_they_run(runtime: Runtime) -> None:
    core = CoreHandle(runtime)
    with pytest.raises(UserError, match="runs in the server"):
        await core.operations(OWNER).scheduler()
    async with core.running_bench() as services:
        assert core.operations(OWNER).services is services
        assert core.core(OWNER).ops.services is services
        status = await core.operations(OWNER).scheduler()
        assert status["enabled"] is False
    assert core.operations(OWNER).services is None


async def test_health_is_the_stores_fingerprint(runtime: Runtime) -> None:
    assert await CoreHandle(runtime).health() == runtime.store.fingerprint


async def test_the_login_is_asked_of_the_handle(runtime: Runtime) -> None:
    login = CoreHandle(runtime).login
    policy = await login.policy(exposed=True)
    assert (policy.needed, policy.possible) == (True, False)
    with pytest.raises(Refused) as refused:
        await login.check("127.0.0.1", "", "anything")
    assert refused.value.status == 403  # no password set: no attempt can succeed


def test_the_guard_is_handed_the_store_and_counters(runtime: Runtime) -> None:
    assert CoreHandle(runtime).gate() == (runtime.store, runtime.counters)


async def test_open_yields_a_handle_over_the_data_folders_store(home: Path) -> None:
    copy_migrated_store(home)
    async with CoreHandle.open(home) as core:
        assert await core.health()
