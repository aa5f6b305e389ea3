"""The outbound pool under a flood with a hanging upstream: slots never
leak (httpcore #1093 wedged the old httpx pool this way: 3 of 3 runs of
this flood), calls that cannot get a connection say so as `ProviderBusy`,
and every connection is released when the flood is over."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable
from typing import Any

import pytest
from aiohttp import web
from aiohttp.test_utils import RawTestServer

from benchwarmers.errors import ProviderBadReply, ProviderBusy, ProviderError
from benchwarmers.providers import transport
from benchwarmers.providers.base import Target
from benchwarmers.providers.kinds import adapter_for
from benchwarmers.providers.outbound import OutboundClient
from benchwarmers.testing import FakeModel, FakeProvider
from benchwarmers.types import Request, user

ASK = Request((user("hello"),))
POOL = 4
ROUNDS = 5
FLOOD = 100


async def test_a_flood_of_timeouts_and_cancellations_never_wedges_the_pool(
    fake_provider: FakeProvider,
    counts: Callable[[str], None],
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
        counts(f"flood: {ROUNDS * FLOOD} calls, {busy} busy, in flight after: {outbound.in_flight}")
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


async def _on(handler: Any, api: str, stream: bool) -> ProviderError:
    async with RawTestServer(handler, host="127.0.0.1") as server, OutboundClient() as outbound:
        base = str(server.make_url("/v1" if api == "openai" else "")).rstrip("/")
        chunks = adapter_for(api, outbound).execute(
            Target("x", api, base, "m1"), ASK, stream=stream, timeout=10
        )  # type: ignore[arg-type]
        with pytest.raises(ProviderError) as caught:
            _ = [c async for c in chunks]
    return caught.value


@pytest.mark.parametrize("stream", [False, True], ids=["whole", "stream"])
async def test_a_redirect_is_not_followed_and_says_where_it_points(stream: bool) -> None:
    async def handle(_: web.BaseRequest) -> web.Response:
        return web.Response(status=307, headers={"location": "https://elsewhere.example/v1/chat/completions"})

    error = await _on(handle, "openai", stream)
    assert error.status == 307 and "redirected" in error.message and "elsewhere.example" in error.message


@pytest.mark.parametrize("stream", [False, True], ids=["whole", "stream"])
async def test_a_reply_larger_than_any_sane_one_is_refused(
    stream: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(transport, "MAX_REPLY_BYTES", 4096)

    async def handle(_: web.BaseRequest) -> web.Response:
        return web.Response(body=b"data: " + b"x" * 10_000 + b"\n\n", content_type="text/event-stream")

    error = await _on(handle, "openai", stream)
    assert isinstance(error, ProviderBadReply) and "larger than" in error.message
