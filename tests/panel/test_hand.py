"""Backpressure on a panel's stream (issue 36, attack 3): a client that
reads nothing holds the stream's bounded buffer (`Stream`), not its reply. The seat's
upstream is not read while the buffer is full (the provider sees it: the
pieces it has been asked for stop), the reader that catches up gets every
piece in order, and a reader that goes away lets the seat read on to its
end, answered and logged. Event-based: the upstream counts what it was
asked for; no clock is read."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import pytest

from benchwarmers.calls.reads import get_call
from benchwarmers.config import tunables
from benchwarmers.panel.engine import _RUNNING, PanelEngine
from benchwarmers.panel.hand import Stream
from benchwarmers.providers.memory import MemoryClient, WireRequest, WireResponse, _sse
from benchwarmers.runtime import Runtime
from benchwarmers.store.collections import add_collection
from benchwarmers.store.endpoints import add_endpoint
from benchwarmers.store.models import add_model
from benchwarmers.types import Ask, PanelDone, PanelStarted, Request, SeatText, user

PIECE = 4096
PIECES = 1024  # a 4 MB answer, 64 times the buffer
ASK = Ask("big", "panel", Request((user("say a lot"),)), stream=True, seat_text=True)


class Upstream:
    """An OpenAI stream of `PIECES` pieces, each handed out only when the
    caller reads for it; `pulled` counts them."""

    def __init__(self) -> None:
        self.pulled = 0

    def __call__(self, _request: WireRequest) -> WireResponse:
        return WireResponse(200, {"content-type": "text/event-stream"}, self._body())

    async def _body(self) -> AsyncIterator[bytes]:
        for i in range(PIECES):
            self.pulled += 1
            delta = {"content": chr(ord("a") + i % 26) * PIECE}
            yield _piece({"index": 0, "delta": delta, "finish_reason": None})
        yield _piece({"index": 0, "delta": {}, "finish_reason": "stop"})
        yield b"data: [DONE]\n\n"


def _piece(choice: dict[str, object]) -> bytes:
    event = _sse({"id": "big", "object": "chat.completion.chunk", "model": "big", "choices": [choice]})
    assert isinstance(event, bytes)
    return event


async def _settled(upstream: Upstream) -> int:
    """Turns of the loop until the upstream has been asked for nothing more
    in many turns in a row (or the whole answer was asked for)."""
    still, last = 0, -1
    for _ in range(20_000):
        await asyncio.sleep(0)
        still = still + 1 if upstream.pulled == last else 0
        last = upstream.pulled
        if still >= 200 or last >= PIECES:
            break
    return last


@pytest.fixture
async def upstream(runtime: Runtime) -> AsyncIterator[Upstream]:
    """The runtime's model calls answered by an `Upstream`, a collection `big` of its one model."""
    answering = Upstream()
    real = runtime.outbound
    async with MemoryClient(answering) as memory:
        runtime.outbound = memory
        await add_endpoint(runtime.store, "up", "http://up.test/v1", "openai", needs_key=False)
        await add_model(runtime.store, "big", "up", "big")
        await add_collection(runtime.store, "big", ["big"], seat_timeout=600)
        try:
            yield answering
        finally:
            while _RUNNING:
                await asyncio.gather(*_RUNNING, return_exceptions=True)
            runtime.outbound = real


async def test_a_stream_nobody_reads_stops_its_upstream_at_the_buffer(
    runtime: Runtime, upstream: Upstream
) -> None:
    events = PanelEngine(runtime).run(ASK)
    try:
        assert isinstance(await anext(events), PanelStarted)
        pulled = await _settled(upstream)
        # Asked for at most the buffer and a piece or two over it: 64 KB of a 4 MB answer.
        assert pulled * PIECE <= tunables.PANEL_STREAM_BUFFER.value + 2 * PIECE
        assert pulled < PIECES

        # The reader catches up: every piece, in order, and the whole seat in the reply.
        text: list[str] = []
        async for event in events:
            if isinstance(event, SeatText):
                text.append(event.text)
            elif isinstance(event, PanelDone):
                [seat] = event.reply.seats
                assert seat.status == "ok", seat.error
                assert len(seat.content) == PIECES * PIECE
    finally:
        await events.aclose()
    expected = "".join(chr(ord("a") + i % 26) * PIECE for i in range(PIECES))
    assert "".join(text) == expected
    assert upstream.pulled == PIECES


async def test_a_reader_that_goes_away_lets_its_seat_finish_and_be_logged(
    runtime: Runtime, upstream: Upstream
) -> None:
    events = PanelEngine(runtime).run(ASK)
    started = await anext(events)
    assert isinstance(started, PanelStarted)
    [(_label, _alias, call)] = started.seats
    assert await _settled(upstream) < PIECES  # held by the buffer while nobody reads

    await events.aclose()  # the client left (or was cut for reading nothing)
    while _RUNNING:
        await asyncio.gather(*_RUNNING, return_exceptions=True)

    assert upstream.pulled == PIECES  # the seat read on to its end
    row = await get_call(runtime.store, call)
    assert row is not None and row.status == "ok"


async def test_the_first_piece_of_text_waits_until_the_consumer_has_taken_it() -> None:
    """The stream's first text is written before its seat reads on (and ends
    its call); the pieces after it wait only for a full buffer."""
    stream = Stream()
    stream.event(PanelStarted("c", "chat", (("Seat 1", "a", "c_1"),), ()))
    first = stream.text(SeatText("Seat 1", "a", "c_1", "one "))
    assert isinstance(first, asyncio.Future)
    assert isinstance(await stream.take(), PanelStarted)
    assert not first.done()
    assert isinstance(await stream.take(), SeatText)
    assert first.done()
    assert stream.text(SeatText("Seat 1", "a", "c_1", "two")) is None
