"""Where a panel's task hands what it has: every event to a stream's
consumer, through a bounded buffer (`Stream`), or only the reply, to a
caller waiting for it (`Whole`: one wake-up, not one a seat).

A stream's events wait for its client in a bounded buffer: text not yet
taken by the consumer is at most about `STREAM_BUFFER` characters (one
piece over it), and a seat whose text finds it full waits in its chunk
loop, so its upstream is not read meanwhile (the outbound connection stops
reading at its own high-water mark, and TCP tells the provider). A client
that reads nothing so holds the buffer, not the reply: a stalled reader of
a 4 MB answer held all 4 MB before (docs/benchmarks.md, issue 36). When the
stream's consumer goes (the client hung up, or the server cut it for
reading nothing, `server/protocol.py`), the buffer is dropped and the seats
read on, so they still finish and are logged (`panel/engine.py`), unless
the panel is stopped with it (`stop_on_close`: every gateway stream and
the dashboard's), when they are cancelled and logged `cancelled`. A seat's
text is still kept whole (`Seat.content`: the log, the merge, kept text),
but it only grows as fast as the client takes it. `x-bench-stream:
sections` and merged streams send a seat only once it is whole, so theirs
is bounded by the reply's cap and the cut, not by the buffer.
"""

from __future__ import annotations

import asyncio
from abc import ABC, abstractmethod
from collections import deque
from collections.abc import Awaitable

from benchwarmers.config import tunables
from benchwarmers.types import (
    MergeDone,
    MergeText,
    PanelDone,
    PanelEvent,
    PanelReply,
    PanelStarted,
    Seat,
    SeatDone,
    SeatText,
)

# Characters of seat text a stream holds for its client before a seat waits (`Stream`).
STREAM_BUFFER = tunables.PANEL_STREAM_BUFFER.value


class Hand(ABC):
    """Where a panel's task hands what it has: to a stream's buffer
    (`Stream`), or only the reply, to a caller waiting for it (`Whole`)."""

    @abstractmethod
    def event(self, event: PanelStarted | MergeDone) -> None:
        """The panel started, or its merge is in."""

    @abstractmethod
    def seat(self, seat: Seat) -> None:
        """A seat is in."""

    @abstractmethod
    def text(self, text: SeatText) -> Awaitable[None] | None:
        """A piece of a seat's answer; what to await before reading on, if
        the reader is behind (None: read on at once)."""

    @abstractmethod
    def merge_text(self, text: MergeText) -> None:
        """A piece of the merger's answer."""

    @abstractmethod
    def done(self, reply: PanelReply) -> None:
        """The reply, its calls safe in the log."""

    @abstractmethod
    def failed(self, exc: BaseException) -> None:
        """What ended the panel (a stop included)."""


class Stream(Hand):
    """Every event for the stream's consumer, in order, in a buffer that
    holds at most about `STREAM_BUFFER` characters of seat text (one piece
    over it, one a seat): a piece that fills it is handed back a future to await, done
    once the consumer has taken the buffer below the bound (or gone). The
    other events are few and small, and never wait: a seat's `SeatDone`
    must not wait behind another seat's text. Once closed (the consumer
    left), nothing is kept and nothing waits.

    The stream's first piece of text waits too, until the consumer has
    taken it: the consumer then writes it (and, in the gateway, the
    status and headers before it: the status waits for the first answer,
    `server/streaming.py`) before the seat reads on. Else the seat, whose
    upstream's piece most often holds the whole short answer, reads to its
    end and ends its call (its log row, the limiter, budgets, health) while
    the first answer waits unwritten: 0.1-0.3 ms of a streamed panel's first
    content byte (docs/benchmarks.md, branch `stream`). Once a stream: the
    later pieces find a consumer already writing."""

    __slots__ = ("_arrived", "_closed", "_events", "_held", "_room", "_started")

    def __init__(self) -> None:
        self._events: deque[PanelEvent | BaseException] = deque()
        self._held = 0  # characters of `SeatText` in `_events`
        self._arrived: asyncio.Future[None] | None = None  # the consumer waits for an event
        self._room: asyncio.Future[None] | None = None  # seats wait for the buffer to drain
        self._closed = False
        self._started = False  # a piece of text was handed: the first waits for the consumer

    async def take(self) -> PanelEvent | BaseException:
        """The next event, waiting for one."""
        while not self._events:
            self._arrived = asyncio.get_running_loop().create_future()
            await self._arrived
        item = self._events.popleft()
        if type(item) is SeatText:
            self._held -= len(item.text)
            room = self._room
            if room is not None and self._held < STREAM_BUFFER:
                self._room = None
                if not room.done():
                    room.set_result(None)
        return item

    def close(self) -> None:
        """The consumer has gone: drop what it never took, wake any seat waiting."""
        self._closed = True
        self._events.clear()
        self._held = 0
        if self._room is not None and not self._room.done():
            self._room.set_result(None)
        self._room = None

    def _put(self, item: PanelEvent | BaseException) -> None:
        if self._closed:
            return
        self._events.append(item)
        arrived = self._arrived
        if arrived is not None:
            self._arrived = None
            if not arrived.done():
                arrived.set_result(None)

    def event(self, event: PanelStarted | MergeDone) -> None:
        self._put(event)

    def seat(self, seat: Seat) -> None:
        self._put(SeatDone(seat))

    def text(self, text: SeatText) -> Awaitable[None] | None:
        if self._closed:
            return None
        self._put(text)
        self._held += len(text.text)
        if self._held < STREAM_BUFFER and self._started:
            return None
        self._started = True
        if self._room is None:
            self._room = asyncio.get_running_loop().create_future()
        return self._room

    def merge_text(self, text: MergeText) -> None:
        self._put(text)

    def done(self, reply: PanelReply) -> None:
        self._put(PanelDone(reply))

    def failed(self, exc: BaseException) -> None:
        self._put(exc)


class Whole(Hand):
    """The reply (or the failure) to the future its caller awaits; nothing
    when the caller has gone (its future cancelled)."""

    def __init__(self, reply: asyncio.Future[PanelReply]) -> None:
        self.reply = reply

    def event(self, event: PanelStarted | MergeDone) -> None:
        """Not handed on: its caller reads them in the reply."""

    def seat(self, seat: Seat) -> None:
        """Not handed on: its caller reads them in the reply."""

    def text(self, text: SeatText) -> None:
        """Not handed on: its caller reads the whole answers in the reply."""

    def merge_text(self, text: MergeText) -> None:
        """Not handed on: its caller reads the merged answer in the reply."""

    def done(self, reply: PanelReply) -> None:
        if not self.reply.done():
            self.reply.set_result(reply)

    def failed(self, exc: BaseException) -> None:
        if self.reply.done():
            return
        if isinstance(exc, asyncio.CancelledError):
            self.reply.cancel()
        else:
            self.reply.set_exception(exc)
