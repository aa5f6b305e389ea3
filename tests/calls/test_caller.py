"""End to end: calls go through the caller to the fake provider over real
HTTP; the fake's own counts prove what was (and was not) sent."""

from __future__ import annotations

import asyncio
import time
from datetime import UTC, datetime
from typing import Any

import pytest

from benchwarmers.calls import caller as caller_module
from benchwarmers.calls.caller import Caller, CallResult
from benchwarmers.calls.reads import get_call
from benchwarmers.limits.ledger import ledger, month_of, next_day
from benchwarmers.limits.quotas import quotas_view
from benchwarmers.limits.user_limits import set_limits
from benchwarmers.runtime import Runtime
from benchwarmers.store.endpoints import add_endpoint
from benchwarmers.store.models import add_model, get_model
from benchwarmers.store.views import ModelView
from benchwarmers.testing.fake_provider import FakeProvider
from benchwarmers.testing.script import FakeModel, RateLimit
from benchwarmers.types import Request, Sampling, user
from tests.waiting import back_from_rest


async def bench_on(
    runtime: Runtime, fake: FakeProvider, *served: str, api: str = "openai"
) -> list[ModelView]:
    await add_endpoint(runtime.store, "fake", fake.base_for(api), api, needs_key=False)
    return [await add_model(runtime.store, s, "fake", s) for s in served]


async def ask(
    runtime: Runtime, model: ModelView, *, timeout: float = 2.0, stream: bool = False
) -> CallResult:
    request = Request(messages=(user("say something short"),), sampling=Sampling(max_tokens=50))
    return await Caller(runtime).call(model, request, kind="seat", timeout=timeout, stream=stream)


async def test_three_a_minute_sends_three_and_limits_the_fourth_unsent(
    runtime: Runtime, fake_provider: FakeProvider
) -> None:
    fake_provider.add(FakeModel("m1", answer="fine"))
    (model,) = await bench_on(runtime, fake_provider, "m1")
    await set_limits(runtime.store, "fake", "", {"rpm": 3})
    results = await asyncio.gather(*(ask(runtime, model) for _ in range(4)))
    statuses = sorted(r.status for r in results)
    assert statuses == ["limited", "ok", "ok", "ok"]
    assert fake_provider.calls["m1"] == 3  # the fourth never reached the provider
    (limited,) = [r for r in results if r.status == "limited"]
    assert limited.frees_at is not None and limited.frees_at > time.time() + 50
    assert limited.frees_at_iso
    usage = await ledger(runtime.store, month_of(datetime.now(UTC)))
    assert [(row.served, row.spent.requests) for row in usage] == [("m1", 3)]


@pytest.mark.parametrize(
    ("api", "style"),
    [
        ("openai", "openai"),
        ("anthropic", "anthropic"),
        ("gemini", "gemini"),
        ("gemini", "gemini-details"),  # the wait is only in the body's RetryInfo
        ("openai", "retry-after"),
        ("openai", "retry-after-date"),
        ("openai", "retry-after-ms"),
        ("ollama", "body"),
    ],
)
async def test_a_429_rests_the_model_until_the_reset_whatever_the_style(
    runtime: Runtime, fake_provider: FakeProvider, api: str, style: str
) -> None:
    # Three seconds: a loaded box can take more than one between the 429 and reading the
    # model back, and the rest would be over (woken) before it is seen. An HTTP date drops
    # the fraction of a second, so it is asked for four to rest at least three.
    retry = 4.0 if style == "retry-after-date" else 3.0
    fake_provider.add(FakeModel("m1", answer="back", rate_limit=RateLimit(style, retry=retry), fail_first=1))
    (model,) = await bench_on(runtime, fake_provider, "m1", api=api)
    before = time.time()
    first = await ask(runtime, model)
    after = time.time()
    assert first.status == "rate_limited"  # the provider's 429, not our refusal
    resting = await get_model(runtime.store, "m1")
    assert resting.status == "resting" and resting.resting_until is not None
    until = resting.resting_until.replace(tzinfo=UTC).timestamp()
    assert before + retry - 1.05 < until < after + retry + 1.1  # as long as was said, however it was said
    # Asked while resting, by the limiter's clock held inside the rest (a loaded box
    # may reach the rest's end on the wall clock before the ask): not sent.
    with pytest.MonkeyPatch.context() as held:
        held.setattr(runtime.limiter, "clock", lambda: until - 0.5)
        second = await ask(runtime, model, timeout=0.1)
    assert second.status == "limited"
    assert fake_provider.calls["m1"] == 1
    assert (await back_from_rest(runtime, "m1")).status == "available"
    third = await ask(runtime, model)
    assert third.status == "ok" and fake_provider.calls["m1"] == 2


async def test_a_per_day_quota_rests_the_model_until_utc_midnight(
    runtime: Runtime, fake_provider: FakeProvider
) -> None:
    fake_provider.add(FakeModel("m1", rate_limit=RateLimit("day")))
    (model,) = await bench_on(runtime, fake_provider, "m1")
    assert (await ask(runtime, model)).status == "rate_limited"
    resting = await get_model(runtime.store, "m1")
    assert resting.resting_until is not None
    assert resting.resting_until.replace(tzinfo=UTC) == next_day(datetime.now(UTC))
    assert "429" in resting.status_reason


async def test_a_waiting_call_goes_when_the_learned_limit_resets(
    runtime: Runtime, fake_provider: FakeProvider
) -> None:
    # None left for 1.5 s: many times what a loaded box takes between one ask and the next.
    headers = RateLimit("openai", retry=1.5, limit=10, remaining=0).headers()
    fake_provider.add(FakeModel("m1", answer="fine", headers=headers))
    (model,) = await bench_on(runtime, fake_provider, "m1")
    assert (await ask(runtime, model)).status == "ok"
    limited = await ask(runtime, model, timeout=0.1)
    assert limited.status == "limited" and limited.frees_at is not None
    assert fake_provider.calls["m1"] == 1
    assert (await ask(runtime, model, timeout=30.0)).status == "ok"  # waited, then went
    assert time.time() >= limited.frees_at - 0.01  # not before the reset
    assert fake_provider.calls["m1"] == 2


async def test_the_ledger_sums_what_the_provider_reported(
    runtime: Runtime, fake_provider: FakeProvider
) -> None:
    fake_provider.add(FakeModel("m1", answer="one two three four five"))
    fake_provider.add(FakeModel("m2", answer=lambda r: "echo " + r.prompt))
    m1, m2 = await bench_on(runtime, fake_provider, "m1", "m2")
    results = await asyncio.gather(
        *(ask(runtime, m, stream=stream) for m in (m1, m2, m1) for stream in (False, True))
    )
    assert {r.status for r in results} == {"ok"}
    rows = {row.served: row.spent for row in await ledger(runtime.store, month_of(datetime.now(UTC)))}
    for served in ("m1", "m2"):
        tokens_in, tokens_out = fake_provider.reported[served]
        assert (rows[served].tokens_in, rows[served].tokens_out) == (tokens_in, tokens_out)
        assert rows[served].requests == fake_provider.calls[served]
        assert tokens_in > 0 and tokens_out > 0
    view = await quotas_view(runtime.store)
    assert {(u.served, u.spent.tokens) for u in view.usage} == {
        (s, sum(fake_provider.reported[s])) for s in ("m1", "m2")
    }


async def test_real_tokens_replace_the_estimate(runtime: Runtime, fake_provider: FakeProvider) -> None:
    """Each call is estimated at its prompt plus 50 reply tokens, but uses
    far fewer: with a tokens-per-minute limit of 150, the correction is
    what lets the later calls through."""
    fake_provider.add(FakeModel("m1", answer="ok"))
    (model,) = await bench_on(runtime, fake_provider, "m1")
    await set_limits(runtime.store, "fake", "", {"tpm": 150})
    # Without the correction a call would wait most of a minute for tokens: far past its 5 s, so refused.
    statuses = [(await ask(runtime, model, timeout=5.0)).status for _ in range(6)]
    assert statuses == ["ok"] * 6
    assert sum(fake_provider.reported["m1"]) <= 150


async def test_a_calls_end_runs_to_its_end_without_a_task_unless_it_waits() -> None:
    """`_to_the_end` is `asyncio.shield` for a call's closing bookkeeping:
    what ends at once makes no task, what waits survives its caller's
    cancellation, and an error comes out either way."""
    done: list[str] = []
    release = asyncio.Event()

    async def at_once() -> None:
        done.append("at once")

    async def waiting() -> None:
        await release.wait()
        await asyncio.sleep(0)
        done.append("after a wait")

    async def failing(after_wait: bool) -> None:
        if after_wait:
            await asyncio.sleep(0)
        raise ValueError("bookkeeping failed")

    loop = asyncio.get_running_loop()
    started: list[object] = []

    def counting(loop: asyncio.AbstractEventLoop, coro: Any, **kwargs: Any) -> asyncio.Task[Any]:
        started.append(coro)
        return asyncio.Task(coro, loop=loop, **kwargs)

    loop.set_task_factory(counting)
    try:
        await caller_module._to_the_end(at_once())
    finally:
        loop.set_task_factory(None)
    assert done == ["at once"] and started == []

    task = asyncio.ensure_future(caller_module._to_the_end(waiting()))
    await asyncio.sleep(0)
    task.cancel()  # the caller goes; the bookkeeping does not
    with pytest.raises(asyncio.CancelledError):
        await task
    release.set()
    for _ in range(5):
        await asyncio.sleep(0)
    assert done == ["at once", "after a wait"]

    for after_wait in (False, True):
        with pytest.raises(ValueError, match="bookkeeping failed"):
            await caller_module._to_the_end(failing(after_wait))


@pytest.mark.parametrize("how", ["stop", "hung_up", "cut"])
async def test_a_call_stopped_while_its_reader_is_behind_is_cancelled_not_abandoned(
    runtime: Runtime, fake_provider: FakeProvider, how: str
) -> None:
    """A stream's seat waits between chunks while its client is behind
    (`on_text` hands back a future): a stop or a cut landing there ends the
    call `cancelled` as it says, as one landing in the upstream read does.
    It was logged `error`, "the caller stopped waiting for the reply": a
    stalled client's hang-up, or the page's Stop, read as a model's failure."""
    fake_provider.add(FakeModel("m1", answer="one two three four five six", tokens_per_second=50))
    (model,) = await bench_on(runtime, fake_provider, "m1")
    behind: asyncio.Future[None] = asyncio.get_running_loop().create_future()  # never drained
    texts: list[str] = []

    def on_text(text: str) -> asyncio.Future[None]:
        texts.append(text)
        return behind

    request = Request(messages=(user("hi"),), sampling=Sampling(max_tokens=50))
    call = asyncio.create_task(
        Caller(runtime).call(
            model, request, kind="seat", timeout=30, stream=True, call_id="c_behind" + how, on_text=on_text
        )
    )
    while not texts:
        await asyncio.sleep(0.01)
    messages = {"stop": caller_module.STOPPED, "hung_up": caller_module.HUNG_UP}
    expected = messages.get(how, "cut: quorum 1 of 2 reached")
    call.cancel(messages.get(how, caller_module.cut("quorum 1 of 2 reached")))
    if how != "cut":
        with pytest.raises(asyncio.CancelledError):
            await call
    else:
        assert (await call).status == "cancelled"  # a cut returns the seat's result
    row = await get_call(runtime.store, "c_behind" + how)
    assert row is not None
    assert (row.status, row.error) == ("cancelled", expected)
