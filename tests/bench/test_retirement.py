"""A model that stops answering, or that its endpoint stops listing, is
retired after one confirming call with its evidence kept; restore brings it
back and clears the flags."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from datetime import UTC, datetime, timedelta

import pytest
from sqlalchemy import select

from benchwarmers.bench import probes, retirement
from benchwarmers.calls.caller import Caller
from benchwarmers.providers import outbound as outbound_module
from benchwarmers.providers.base import Target
from benchwarmers.providers.kinds import adapter_for
from benchwarmers.providers.outbound import OutboundClient
from benchwarmers.runtime import Runtime
from benchwarmers.store import schema
from benchwarmers.store.models import add_model, get_model, restore, set_status
from benchwarmers.testing import FakeError, FakeModel, FakeProvider
from benchwarmers.types import Request, user

NOW = datetime(2026, 11, 30, 6, 0, tzinfo=UTC)
ASK = Request((user("hello"),))


async def health(rt: Runtime) -> retirement.HealthReport:
    return await retirement.daily_health(Caller(rt), rt.store, rt.outbound, NOW)


async def alerts(rt: Runtime) -> list[schema.Alert]:
    async with rt.store.read() as session:
        return list((await session.scalars(select(schema.Alert).order_by(schema.Alert.id))).all())


async def test_a_model_that_stops_answering_is_retired_after_one_confirming_call_and_restored(
    bench: Runtime, fake_provider: FakeProvider, add_fake: Callable[..., FakeModel]
) -> None:
    model = add_fake("fading")
    await add_model(bench.store, "fading", "fake", "fading")
    assert (await health(bench)).retired == []
    assert fake_provider.calls["fading"] == 1  # healthy: one daily call, no confirmation

    model.error = FakeError(status=503, message="model is gone")
    report = await health(bench)
    assert report.retired == ["fading"]
    assert fake_provider.calls["fading"] == 3  # the failed daily probe and ONE confirming call
    retired = await get_model(bench.store, "fading")
    assert retired.status == "retired"
    assert "probe failed" in retired.status_reason and "confirming call" in retired.status_reason
    kinds = [(p.kind, p.ok) for p in await probes.probe_history(bench.store, "fading")]
    assert kinds[:2] == [("confirm", False), ("daily", False)]
    [alert] = await alerts(bench)
    assert alert.kind == "retired" and alert.subject == "fading" and not alert.dismissed

    # Retired models are not probed again by the schedule.
    await health(bench)
    assert fake_provider.calls["fading"] == 3

    restored = await restore(bench.store, "fading")
    assert restored.status == "available" and "probe failed" not in restored.status_reason
    assert (await alerts(bench))[0].dismissed
    assert len(await probes.probe_history(bench.store, "fading")) == 3  # evidence stays


async def test_one_failure_is_not_enough(
    bench: Runtime, fake_provider: FakeProvider, add_fake: Callable[..., FakeModel]
) -> None:
    add_fake("blip", error=FakeError(status=502), fail_first=1)
    await add_model(bench.store, "blip", "fake", "blip")
    report = await health(bench)
    assert report.retired == [] and fake_provider.calls["blip"] == 2
    assert (await get_model(bench.store, "blip")).status == "available"


async def test_a_model_its_endpoint_no_longer_lists_is_retired(
    bench: Runtime, fake_provider: FakeProvider, add_fake: Callable[..., FakeModel]
) -> None:
    add_fake("vanishing")
    await add_model(bench.store, "vanishing", "fake", "vanishing")
    fake_provider.remove("vanishing")  # off the list, and calls to it get a 404
    report = await health(bench)
    assert report.retired == ["vanishing"]
    model = await get_model(bench.store, "vanishing")
    assert model.status == "retired" and "no longer lists vanishing" in model.status_reason
    assert [p.kind for p in await probes.probe_history(bench.store, "vanishing")] == ["confirm"]


async def test_an_unlisted_model_that_still_answers_is_kept_with_an_alert(
    bench: Runtime, fake_provider: FakeProvider, add_fake: Callable[..., FakeModel]
) -> None:
    add_fake("unlisted")
    await add_model(bench.store, "unlisted", "fake", "unlisted")
    fake_provider.hide("unlisted")
    report = await health(bench)
    assert report.retired == [] and report.unlisted_but_answering == ["unlisted"]
    assert fake_provider.calls["unlisted"] == 1  # the confirming call only
    assert (await get_model(bench.store, "unlisted")).status == "available"
    assert [a.kind for a in await alerts(bench)] == ["unlisted"]


async def test_unavailable_models_are_watched_and_come_back(
    bench: Runtime, fake_provider: FakeProvider, add_fake: Callable[..., FakeModel]
) -> None:
    model = add_fake("sleepy", error=FakeError(status=500))
    await add_model(bench.store, "sleepy", "fake", "sleepy", status="unavailable")
    assert (await health(bench)).retired == []
    assert fake_provider.calls["sleepy"] == 1  # no confirmation: it never answered, nothing to retire
    assert (await get_model(bench.store, "sleepy")).status == "unavailable"
    model.error = None
    assert (await health(bench)).recovered == ["sleepy"]
    assert (await get_model(bench.store, "sleepy")).status == "available"


async def test_ad_hoc_image_and_resting_models_are_left_alone(
    bench: Runtime, fake_provider: FakeProvider, add_fake: Callable[..., FakeModel]
) -> None:
    for name in ("adhoc", "painter", "tired"):
        add_fake(name, error=FakeError(status=500))
    await add_model(bench.store, "adhoc", "fake", "adhoc", ad_hoc=True)
    await add_model(bench.store, "painter", "fake", "painter", role="image")
    await add_model(bench.store, "tired", "fake", "tired")
    await set_status(bench.store, "tired", "resting", resting_until=NOW + timedelta(hours=1))
    fake_provider.remove("adhoc")
    assert (await health(bench)).probed == []
    assert sum(fake_provider.calls.values()) == 0
    assert (await get_model(bench.store, "adhoc")).status == "available"


async def test_probe_now_works_for_one_model_even_ad_hoc(
    bench: Runtime, fake_provider: FakeProvider, add_fake: Callable[..., FakeModel]
) -> None:
    add_fake("asked")
    await add_model(bench.store, "asked", "fake", "asked", ad_hoc=True)
    report = await retirement.probe_now(Caller(bench), bench.store, bench.outbound, "asked", NOW)
    assert report.probed == ["asked"] and fake_provider.calls["asked"] == 1


async def test_a_busy_outbound_pool_never_retires_a_healthy_model(
    bench: Runtime,
    fake_provider: FakeProvider,
    add_fake: Callable[..., FakeModel],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A flood that fills every outbound connection (the old pool wedge) makes
    probes time out locally: no evidence against the model, so it stays.

    The gate gives up `GATE_MARGIN` before the probe's deadline, so the
    call fails as busy rather than as the caller's timeout; here that margin
    is 2.5 s of a 3 s probe (the gate gives up after 0.5 s), so a loaded
    loop would have to stall for seconds to let the caller's deadline come
    first."""
    add_fake("healthy")
    add_fake("hang", never_ending=True)
    await add_model(bench.store, "healthy", "fake", "healthy")
    monkeypatch.setattr(probes, "PROBE_TIMEOUT", 3.0)
    monkeypatch.setattr(outbound_module, "GATE_MARGIN", 2.5)
    async with OutboundClient(per_origin=1, total=4) as outbound:
        monkeypatch.setattr(bench, "outbound", outbound)
        target = Target("fake", "openai", fake_provider.openai_base, "hang")
        holder = asyncio.ensure_future(
            adapter_for("openai", outbound).execute(target, ASK, stream=False, timeout=30).__anext__()
        )
        while outbound.in_flight == 0:
            await asyncio.sleep(0.01)
        report = retirement.HealthReport()
        model = await get_model(bench.store, "healthy")
        await retirement.check_model(Caller(bench), bench.store, model, None, NOW, report)
        holder.cancel()
    assert report.retired == []
    assert fake_provider.calls["healthy"] == 0  # nothing went out: the gate held every call
    model = await get_model(bench.store, "healthy")
    assert model.status == "available"
    history = await probes.probe_history(bench.store, "healthy")
    assert [p.kind for p in history] == ["daily"] and "busy" in history[0].error
