"""Onboarding modes spend exactly the calls they should, the queue survives
a restart, and two workers never run one item twice."""

from __future__ import annotations

import asyncio
import re
from collections.abc import Callable
from datetime import UTC, datetime
from functools import partial
from pathlib import Path

from sqlalchemy import func, select

from benchwarmers.bench import onboarding, probes
from benchwarmers.bench.onboarding import OnboardRequest
from benchwarmers.bench.suite import run_suite
from benchwarmers.calls.caller import Caller
from benchwarmers.runtime import Runtime
from benchwarmers.store import schema
from benchwarmers.store.endpoints import add_endpoint
from benchwarmers.store.models import get_model, list_models
from benchwarmers.testing import FakeError, FakeModel, FakeProvider


async def onboard(rt: Runtime, served: str, mode: onboarding.Mode, **kw: str) -> schema.OnboardingItem:
    ids = await onboarding.enqueue(rt.store, [OnboardRequest("fake", served, mode, **kw)])
    done = await onboarding.drain(rt, Caller(rt), suite=None, only=set(ids))
    assert len(done) == 1
    return done[0]


async def logged_calls(rt: Runtime, alias: str, kind: str) -> int:
    async with rt.store.read() as session:
        return int(
            await session.scalar(
                select(func.count())
                .select_from(schema.Call)
                .where(schema.Call.alias == alias, schema.Call.kind == kind)
            )
            or 0
        )


async def test_quick_spends_the_four_probe_calls_and_keeps_the_answers(
    bench: Runtime, fake_provider: FakeProvider, add_fake: Callable[..., FakeModel]
) -> None:
    add_fake("org/Quick-Model:free")
    item = await onboard(bench, "org/Quick-Model:free", "quick")
    assert item.state == "done" and item.progress == 1.0 and item.alias == "quick-model"
    assert fake_provider.calls["org/Quick-Model:free"] == 4
    assert await logged_calls(bench, "quick-model", "probe") == 4
    model = await get_model(bench.store, "quick-model")
    assert model.status == "available" and not model.ad_hoc
    rows = await probes.probe_history(bench.store, "quick-model")
    assert sorted(r.name for r in rows) == ["format", "json", "sum", "word"]
    assert all(r.ok and r.kind == "onboard" and r.call_id for r in rows)
    assert "42" in {r.answer for r in rows}


async def test_probe_checks_tell_a_wrong_answer_from_a_right_one(
    bench: Runtime, add_fake: Callable[..., FakeModel]
) -> None:
    add_fake("sloppy", answer="Well, I think the answer might be 41 or so.")
    await onboard(bench, "sloppy", "quick", alias="sloppy")
    rows = {r.name: r for r in await probes.probe_history(bench.store, "sloppy")}
    assert not any(r.ok for r in rows.values())
    assert all(r.answered for r in rows.values())  # health: it answered every probe
    # It answered, so it is on the bench: a wrong sum is a record, not an outage.
    assert (await get_model(bench.store, "sloppy")).status == "available"


async def test_a_reasoning_models_think_block_is_no_part_of_the_answer_a_probe_checks(
    bench: Runtime, add_fake: Callable[..., FakeModel]
) -> None:
    """DeepSeek-R1 through Ollama writes `<think>…</think>` before every
    answer: its probes are checked on the answer after it (no wrong sum
    read in its working), and the answer kept is what it wrote."""
    add_fake("r1", thinking="Is it 41? No: 40 + 2 is 42.", think_tag="think")
    await onboard(bench, "r1", "quick", alias="r1")
    rows = {r.name: r for r in await probes.probe_history(bench.store, "r1")}
    assert all(r.ok for r in rows.values()), {name: r.answer for name, r in rows.items()}
    assert rows["sum"].answer.startswith("<think>\nIs it 41?")


async def test_quick_ad_hoc_probes_only_and_marks_the_model(
    bench: Runtime, fake_provider: FakeProvider, add_fake: Callable[..., FakeModel]
) -> None:
    add_fake("metered")
    item = await onboard(bench, "metered", "quick_ad_hoc", alias="metered", role="code")
    assert item.state == "done"
    assert fake_provider.calls["metered"] == 4
    model = await get_model(bench.store, "metered")
    assert model.ad_hoc and model.role == "code" and model.status == "available"


async def test_a_model_that_does_not_answer_stays_unavailable(
    bench: Runtime, fake_provider: FakeProvider, add_fake: Callable[..., FakeModel]
) -> None:
    add_fake("broken", error=FakeError(status=500, message="upstream exploded"))
    item = await onboard(bench, "broken", "full", alias="broken")
    assert item.state == "done" and "did not answer" in item.step
    assert fake_provider.calls["broken"] == 4  # the probe only: no suite for a model that did not answer
    model = await get_model(bench.store, "broken")
    assert model.status == "unavailable" and "did not answer" in model.status_reason


async def test_enqueue_refuses_bad_input_clearly(bench: Runtime) -> None:
    import pytest

    from benchwarmers.errors import NotFound, UserError

    with pytest.raises(NotFound, match="no endpoint 'nowhere'"):
        await onboarding.enqueue(bench.store, [OnboardRequest("nowhere", "m", "quick")])
    with pytest.raises(UserError, match="unknown mode"):
        await onboarding.enqueue(bench.store, [OnboardRequest("fake", "m", "fast")])  # type: ignore[arg-type]
    with pytest.raises(UserError, match=r"role .boss. is not known"):
        await onboarding.enqueue(bench.store, [OnboardRequest("fake", "m", "quick", role="boss")])


async def test_a_restart_mid_queue_resumes_in_order(
    home: Path, fake_provider: FakeProvider, add_fake: Callable[..., FakeModel]
) -> None:
    add_fake("first")
    add_fake("second")
    async with Runtime.open(home=home) as rt:
        await add_endpoint(rt.store, "fake", fake_provider.openai_base, "openai", needs_key=False)
        ids = await onboarding.enqueue(
            rt.store, [OnboardRequest("fake", "first", "quick"), OnboardRequest("fake", "second", "quick")]
        )
        # The process dies while the first item runs.
        assert await onboarding.claim_next(rt.store) == ids[0]
    async with Runtime.open(home=home) as rt:
        worker = onboarding.OnboardingWorker(rt, Caller(rt), suite=None)
        await worker.start()
        try:
            await asyncio.wait_for(worker.idle.wait(), 20)
        finally:
            await worker.stop()
        items = {i.id: i for i in await onboarding.queue_items(rt.store)}
        assert [items[i].state for i in ids] == ["done", "done"]
        assert items[ids[0]].finished_at <= items[ids[1]].started_at  # type: ignore[operator]
        assert (await get_model(rt.store, "first")).status == "available"
    assert fake_provider.calls["first"] == 4 and fake_provider.calls["second"] == 4


async def test_two_workers_never_run_one_item_twice(
    bench: Runtime, fake_provider: FakeProvider, add_fake: Callable[..., FakeModel]
) -> None:
    for name in ("a", "b", "c"):
        add_fake(name, latency=0.05)
    await onboarding.enqueue(bench.store, [OnboardRequest("fake", n, "quick") for n in ("a", "b", "c")])
    caller = Caller(bench)
    results = await asyncio.gather(
        onboarding.drain(bench, caller, suite=None), onboarding.drain(bench, caller, suite=None)
    )
    assert sorted(item.served for run in results for item in run) == ["a", "b", "c"]
    assert [fake_provider.calls[n] for n in ("a", "b", "c")] == [4, 4, 4]


async def test_onboarding_again_reuses_the_model(
    bench: Runtime, fake_provider: FakeProvider, add_fake: Callable[..., FakeModel]
) -> None:
    add_fake("again")
    await onboard(bench, "again", "quick_ad_hoc")
    await onboard(bench, "again", "quick")
    model = await get_model(bench.store, "again")
    assert not model.ad_hoc and model.status == "available"
    assert len(await list_models(bench.store)) == 1
    assert fake_provider.calls["again"] == 8
    assert datetime.now(UTC) >= model.created_at


async def test_full_probes_then_runs_the_suite_now(
    bench: Runtime, fake_provider: FakeProvider, add_fake: Callable[..., FakeModel]
) -> None:
    add_fake("thorough")
    seen: list[tuple[str, float]] = []
    ids = await onboarding.enqueue(bench.store, [OnboardRequest("fake", "thorough", "full")])
    [item] = await onboarding.drain(
        bench,
        Caller(bench),
        suite=partial(run_suite, gap=0.01),
        suite_limit=2,
        progress=lambda _i, step, f: seen.append((step, f)),
    )
    assert item.id == ids[0] and item.state == "done", item.error
    assert re.search(r"suite \d/2 passed", item.step), item.step
    assert fake_provider.calls["thorough"] == 4 + 2  # four probe calls, then the two suite tasks asked for
    assert await logged_calls(bench, "thorough", "probe") == 4
    assert await logged_calls(bench, "thorough", "suite") == 2
    fractions = [f for _s, f in seen]
    assert fractions == sorted(fractions) and fractions[-1] == 1.0
    assert any(step.startswith("suite") for step, _f in seen)


async def test_an_item_running_in_another_live_process_is_left_alone_until_it_dies(
    bench: Runtime, fake_provider: FakeProvider, add_fake: Callable[..., FakeModel]
) -> None:
    add_fake("busy")
    [item_id] = await onboarding.enqueue(bench.store, [OnboardRequest("fake", "busy", "quick")])
    other_process = onboarding.queue_lease(bench)
    assert await other_process.acquire()
    assert await onboarding.claim_next(bench.store) == item_id  # the other process is running it

    worker = onboarding.OnboardingWorker(bench, Caller(bench), suite=None, poll_seconds=0.05)
    refused = asyncio.Event()  # the worker looked for work twice and was refused the queue both times
    tries: list[bool] = []
    acquire = worker.lease.acquire

    async def counted() -> bool:
        tries.append(await acquire())
        if tries[:2] == [False, False]:
            refused.set()
        return tries[-1]

    worker.lease.acquire = counted  # type: ignore[method-assign]
    await worker.start()
    try:
        await asyncio.wait_for(refused.wait(), 20)
        [item] = await onboarding.queue_items(bench.store)
        assert item.state == "running" and not worker.lease.held and fake_provider.calls["busy"] == 0
        await other_process.release()  # it died: the lease frees and the worker takes over
        await asyncio.wait_for(worker.idle.wait(), 20)
    finally:
        await worker.stop()
    [item] = await onboarding.queue_items(bench.store)
    assert item.state == "done" and fake_provider.calls["busy"] == 4


async def test_onboarding_applies_catalog_facts(
    runtime: Runtime, fake_provider: FakeProvider, add_fake: Callable[..., FakeModel]
) -> None:
    # An endpoint named after a provider counts as that provider (a local proxy in front of it).
    await add_endpoint(runtime.store, "openai", fake_provider.openai_base, "openai", needs_key=False)
    add_fake("gpt-4o-mini")
    ids = await onboarding.enqueue(runtime.store, [OnboardRequest("openai", "gpt-4o-mini", "quick")])
    await onboarding.drain(runtime, Caller(runtime), suite=None, only=set(ids))
    model = await get_model(runtime.store, "gpt-4o-mini")
    assert (model.context_window, model.output_limit, model.vision, model.price_in) == (
        128000,
        16384,
        True,
        0.15,
    )


async def test_a_model_already_in_the_queue_is_not_queued_twice_and_cancel_frees_it(bench: Runtime) -> None:
    import pytest

    from benchwarmers.errors import Conflict

    [first] = await onboarding.enqueue(bench.store, [OnboardRequest("fake", "twice", "quick")] * 2)
    with pytest.raises(
        Conflict, match=rf"twice on fake is already in the onboarding queue \(item {first}, queued\)"
    ):
        await onboarding.enqueue(bench.store, [OnboardRequest("fake", "twice", "full")])
    assert [i.id for i in await onboarding.queue_items(bench.store)] == [first]  # nothing saved
    cancelled = await onboarding.cancel(bench.store, first)
    assert cancelled.state == "cancelled" and cancelled.finished_at is not None
    with pytest.raises(Conflict, match="already cancelled"):
        await onboarding.cancel(bench.store, first)
    assert await onboarding.claim_next(bench.store) is None  # a cancelled item never runs
    [again] = await onboarding.enqueue(bench.store, [OnboardRequest("fake", "twice", "quick")])
    assert again != first


async def test_a_running_item_cancelled_stops_at_its_next_step(
    bench: Runtime, fake_provider: FakeProvider, add_fake: Callable[..., FakeModel]
) -> None:
    add_fake("slow", latency=0.3)
    [item_id] = await onboarding.enqueue(bench.store, [OnboardRequest("fake", "slow", "quick")])
    assert await onboarding.claim_next(bench.store) == item_id
    steps: list[str] = []

    def progress(_item: int, step: str, _fraction: float) -> None:
        steps.append(step)
        if len(steps) == 2:  # registered, probing: the owner cancels now
            asyncio.get_running_loop().create_task(onboarding.cancel(bench.store, item_id))

    run = onboarding.ItemRun(bench, Caller(bench), item_id, suite=None, progress=progress)
    item = await run.run()
    assert item.state == "cancelled" and run.cancelled
    assert fake_provider.calls["slow"] < 4  # stopped before the probe's four calls were all made
    model = await get_model(bench.store, item.alias or "slow")
    assert model.status == "unavailable" and "cancelled" in model.status_reason


async def test_an_item_that_did_not_answer_is_no_plain_done_and_waiting_is_not_queued(
    bench: Runtime, add_fake: Callable[..., FakeModel]
) -> None:
    from datetime import timedelta

    from benchwarmers.core.operations import Operations

    add_fake("mute", error=FakeError(status=500, message="upstream exploded"))
    item = await onboard(bench, "mute", "quick")
    assert onboarding.outcome(item, datetime.now(UTC)) == "unavailable" and "exploded" in item.error
    [later] = await onboarding.enqueue(bench.store, [OnboardRequest("fake", "resting", "quick")])
    async with bench.store.write() as session:
        row = await session.get(schema.OnboardingItem, later)
        assert row is not None
        row.not_before = datetime.now(UTC) + timedelta(hours=10)
    view = await Operations(bench).queue()
    assert (view["queued"], view["waiting"], view["running"]) == (0, 1, None)
    assert [i["outcome"] for i in view["items"]] == ["unavailable", "waiting"]
