"""The outbound pool under a flood with a hanging upstream: slots never
leak (httpcore #1093 wedged the old httpx pool this way: 3 of 3 runs of
this flood), calls that cannot get a connection say so as `ProviderBusy`,
and every connection is released when the flood is over."""

from __future__ import annotations

import asyncio
import contextlib

import pytest

from benchwarmers.errors import ProviderBusy, ProviderError
from benchwarmers.providers.base import Target, adapter_for
from benchwarmers.providers.outbound import OutboundClient
from benchwarmers.testing import FakeModel, FakeProvider
from benchwarmers.types import Request, user

ASK = Request((user("hello"),))
POOL = 4
ROUNDS = 5
FLOOD = 100


async def test_a_flood_of_timeouts_and_cancellations_never_wedges_the_pool(
    fake_provider: FakeProvider,
) -> None:
    fake_provider.add(FakeModel("fast", answer="hi"))
    fake_provider.add(FakeModel("hang", never_ending=True))
    async with OutboundClient(per_origin=POOL, total=POOL) as outbound:
        adapter = adapter_for("openai", outbound)

        async def one(served: str, timeout: float, stream: bool) -> object:
            target = Target("fake", "openai", fake_provider.openai_base, served)
            try:
                return [c async for c in adapter.execute(target, ASK, stream=stream, timeout=timeout)]
            except ProviderError as error:
                return error

        async def cancelled(served: str) -> None:
            # A panel giving up on a seat: cancellation from outside, mid-send.
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(one(served, 5.0, False), 0.05 + (hash(served) % 5) / 100)

        outcomes: list[object] = []
        for _ in range(ROUNDS):
            jobs = []
            for i in range(FLOOD):
                served = "hang" if i % 3 else "fast"
                if i % 4 == 0:
                    jobs.append(cancelled(served))
                else:
                    jobs.append(one(served, 0.1 + 0.05 * (i % 4), stream=bool(i % 2)))
            outcomes += await asyncio.gather(*jobs)
        busy = sum(isinstance(o, ProviderBusy) for o in outcomes)
        print(f"flood: {ROUNDS * FLOOD} calls, {busy} busy, in flight after: {outbound.in_flight}")
        assert outbound.in_flight == 0
        answers = await asyncio.gather(*(one("fast", 5.0, stream=False) for _ in range(POOL * 3)))
        failed = [a for a in answers if isinstance(a, Exception)]
        assert not failed, f"the pool wedged: {failed[:3]}"


async def test_a_call_that_cannot_get_a_connection_is_busy_not_a_model_timeout(
    fake_provider: FakeProvider,
) -> None:
    fake_provider.add(FakeModel("hang", never_ending=True))
    async with OutboundClient(per_origin=1, total=8) as outbound:
        adapter = adapter_for("openai", outbound)
        target = Target("fake", "openai", fake_provider.openai_base, "hang")
        holder = asyncio.ensure_future(adapter.execute(target, ASK, stream=False, timeout=2.0).__anext__())
        while outbound.in_flight == 0:
            await asyncio.sleep(0.01)
        with pytest.raises(ProviderBusy, match=r"all 1 outbound connections to 127\.0\.0\.1 were busy"):
            await adapter.execute(target, ASK, stream=False, timeout=0.2).__anext__()
        holder.cancel()
