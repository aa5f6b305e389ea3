"""The dead are not seated: calls failing by 5xx (or connection, or
timeout) in a row hold a model out of every seat, 429s and 4xx do not, and
a probe the panel starts at once (not the daily one) seats it again as
soon as the model answers."""

from __future__ import annotations

import pytest
from sqlalchemy import select

from benchwarmers.bench import revive
from benchwarmers.calls.caller import Caller
from benchwarmers.calls.health import FAILING_AFTER
from benchwarmers.panel.plan import plan_panel
from benchwarmers.runtime import Runtime
from benchwarmers.store.collections import add_collection
from benchwarmers.store.endpoints import add_endpoint
from benchwarmers.store.models import add_model, get_model
from benchwarmers.store.schema import Model, Probe
from benchwarmers.testing import FakeProvider
from benchwarmers.testing.script import FakeError, FakeModel, RateLimit
from benchwarmers.types import Ask, Request, Sampling, user

pytestmark = pytest.mark.integration

ASK = Request((user("what is the capital of France?"),), sampling=Sampling(max_tokens=16))


async def failures(rt: Runtime, alias: str) -> int:
    async with rt.store.read() as session:
        return int(await session.scalar(select(Model.failures).where(Model.alias == alias)) or 0)


async def test_a_failing_member_is_held_out_until_a_probe_answers(
    runtime: Runtime, fake_provider: FakeProvider
) -> None:
    await add_endpoint(runtime.store, "fake", fake_provider.openai_base, "openai", needs_key=False)
    fake_provider.add(FakeModel("sick", answer="Paris", error=FakeError(503), fail_first=FAILING_AFTER))
    fake_provider.add(FakeModel("well", answer="Paris"))
    fake_provider.add(FakeModel("busy", answer="Paris", rate_limit=RateLimit(retry=1.0)))
    for alias in ("sick", "well", "busy"):
        await add_model(runtime.store, alias, "fake", alias)
    await add_collection(runtime.store, "trio", ["sick", "well"])
    caller = Caller(runtime)
    sick_model = await get_model(runtime.store, "sick")
    for _ in range(FAILING_AFTER):
        assert (await caller.call(sick_model, ASK, kind="seat", timeout=10.0)).status == "error"
    busy = await caller.call(await get_model(runtime.store, "busy"), ASK, kind="seat", timeout=10.0)
    assert busy.status == "rate_limited"
    assert await failures(runtime, "sick") == FAILING_AFTER
    assert await failures(runtime, "busy") == 0  # a 429 says the model rests, not that it is dead

    plan = await plan_panel(runtime, Ask("trio", "panel", ASK))
    assert [s.model.alias for s in plan.seating.seats] == ["well"]
    (left,) = plan.seating.left_off
    assert left.alias == "sick" and left.reason.startswith("failing") and "probe" in left.reason
    # The plan started a probe of the failing member at once; the model answers now.
    await revive.settled()
    async with runtime.store.read() as session:
        probes = (await session.scalars(select(Probe).where(Probe.alias == "sick"))).all()
    assert [p.answered for p in probes] == [True]
    assert sum(r.model == "sick" for r in fake_provider.requests) == FAILING_AFTER + 1
    assert await failures(runtime, "sick") == 0
    plan = await plan_panel(runtime, Ask("trio", "panel", ASK))
    assert [s.model.alias for s in plan.seating.seats] == ["sick", "well"]
