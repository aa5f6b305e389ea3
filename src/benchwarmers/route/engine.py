"""The route engine: one member answers each turn of an agent's conversation.

`await RouteEngine(runtime).start(ask, header=...)` returns a `RouteTurn`
once a member has sent its first byte; `turn.chunks()` then hands on the
member's reply as it streams (text pieces, tool-call pieces, usage, the
finish) and `turn.bench()` says who answered, with which call id (a
`RouteBench`, which the formats write as the reply's `bench` object).
`await engine.answer(ask)` is the same for a client that did not stream,
with the whole reply; a client that hangs up before it (`answer(left=)`)
stops the member's call, which fails over to no other member.

Who answers:

* the collection's members that can take this request now, best record
  first, member order breaking ties (`members.py`): the first drives a new
  conversation;
* a conversation that already has a member keeps it while that member can
  answer (its stickiness is read from memory, with the store as the durable
  copy: `store/conversations.py`);
* a member that fails before its first byte (an error, a 429, our own
  limits, no first byte within the collection's seat timeout) is replaced
  by the next in order for this turn, and the replacement keeps the
  conversation from then on. A failure after the first byte cannot be
  undone (the agent has part of a reply): `chunks()` raises it and the
  format ends the stream with its error event. A whole reply has sent
  nothing yet, so `answer` replaces such a member too.

Every attempt is a call-log row of kind `route` sharing the turn's ask id,
so a verdict can name the call that answered and the record shows who
failed. The rows go to the log while the reply streams; `chunks()` ends
(and so the format writes its last event) only once they are safe there
(journaled on SQLite, committed on PostgreSQL: `calls/log.py`), so a
client that was answered finds its calls, even after a crash. Engines know
no HTTP and no format.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncGenerator, Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from benchwarmers.calls.call_ids import new_ask_id
from benchwarmers.calls.caller import HUNG_UP, CallContext, Caller, CallResult, CallStream, await_recorded
from benchwarmers.calls.cost import Total
from benchwarmers.calls.hangup import until_left_here
from benchwarmers.calls.reads import set_call_task
from benchwarmers.config import tunables
from benchwarmers.errors import LimitExceeded, NoAnswer, ProviderError, UserError
from benchwarmers.panel.shapes import shape_of
from benchwarmers.route.conversation import conversation_key
from benchwarmers.route.members import TurnOrder, route_fit
from benchwarmers.route.record import spawn, turn_task
from benchwarmers.route.shadow import start_shadows
from benchwarmers.store.collections import get_collection
from benchwarmers.store.models import models_by_alias
from benchwarmers.store.views import CollectionView
from benchwarmers.trim import give_back_soon
from benchwarmers.types import (
    CONTENT_CHUNKS,
    Ask,
    Chunk,
    LeftOff,
    Reply,
    ResponseHeaders,
    RouteBench,
    RouteFailure,
    SeatStatus,
)

if TYPE_CHECKING:
    from benchwarmers.runtime import Runtime

ROUTE_SEAT = "route"
ROUTE_TURN_SECONDS = tunables.ROUTE_TURN_SECONDS.value


@dataclass(frozen=True, slots=True)
class Attempt:
    """A member that failed this turn: before its first byte, or, for a
    whole reply (`answer`), at any point."""

    alias: str
    call: str
    status: SeatStatus
    error: str
    # When rate limited: the Unix time the limit frees, if known.
    frees_at: float | None = None
    # What its call cost (the turn's `bench` adds it up); None: its price unknown.
    cost_usd: float | None = 0.0

    def failure(self) -> RouteFailure:
        """The attempt as the turn's `bench` object lists it (`failover`)."""
        return RouteFailure(self.alias, self.call, self.status, self.error)


class RouteEngine:
    def __init__(self, runtime: Runtime) -> None:
        self.runtime = runtime
        self.caller = Caller(runtime)

    async def answer(
        self,
        ask: Ask,
        *,
        header: str = "",
        collection: CollectionView | None = None,
        gateway_key: str = "",
        left: asyncio.Future[None] | None = None,
    ) -> tuple[RouteTurn, Reply]:
        """A whole turn, for a client that did not ask to stream. Nothing
        reaches such a client before the reply is whole, so here even a
        member that fails mid-reply is replaced by the next. `left`: done
        when the client has gone (hung up) before the reply: the member's
        call is cancelled upstream, recorded `cancelled`, no other member
        is asked, and this raises `Left` (`calls/hangup.py`)."""
        turn = self._answer(ask, header=header, collection=collection, gateway_key=gateway_key)
        if left is None:
            return await turn
        return await until_left_here(turn, left, _bench_name(ask.collection))

    async def _answer(
        self, ask: Ask, *, header: str, collection: CollectionView | None, gateway_key: str
    ) -> tuple[RouteTurn, Reply]:
        failed: list[Attempt] = []
        ask_id = new_ask_id()
        while True:
            turn = await self.start(
                ask,
                header=header,
                earlier=failed,
                ask_id=ask_id,
                collection=collection,
                gateway_key=gateway_key,
            )
            try:
                await turn.finish()
            except ProviderError as exc:
                status = turn.result.status if turn.result is not None else "error"
                cost = turn.result.cost_usd if turn.result is not None else 0.0
                failed = [*turn.attempts, Attempt(turn.alias, turn.call, status, str(exc), cost_usd=cost)]
                continue
            assert turn.result is not None
            return turn, turn.result.reply

    async def start(
        self,
        ask: Ask,
        *,
        header: str = "",
        earlier: Sequence[Attempt] = (),
        ask_id: str = "",
        collection: CollectionView | None = None,
        gateway_key: str = "",
        left: asyncio.Future[None] | None = None,
    ) -> RouteTurn:
        """Pick, stick, fail over until a member's first byte: a stream's
        start (`answer` runs it for a whole reply). `left`: done when a
        stream's client has gone before that byte: the member's call is
        cancelled upstream, recorded `cancelled`, no other member is asked,
        and this raises `Left` (`calls/hangup.py`)."""
        turn = self._start(
            ask, header=header, earlier=earlier, ask_id=ask_id, collection=collection, gateway_key=gateway_key
        )
        if left is None:
            return await turn
        return await until_left_here(turn, left, _bench_name(ask.collection))

    async def _start(
        self,
        ask: Ask,
        *,
        header: str,
        earlier: Sequence[Attempt],
        ask_id: str,
        collection: CollectionView | None,
        gateway_key: str,
    ) -> RouteTurn:
        """`start`'s turn. `earlier` are
        this turn's failed attempts so far and `ask_id` its id (`answer`):
        those members are not asked again, and shadow seats, already
        started, are not started twice. `collection` is the ask's, when the
        caller has already looked it up (`core.RouteMode`, checking access);
        `gateway_key` the key that asks ("" for the owner), logged on its calls.
        Raises `NotFound` for an unknown collection, `UserError` (422) when
        no member can take the request, `LimitExceeded` when every member was
        rate limited, `NoAnswer` (a `ProviderError`) when every member failed."""
        store = self.runtime.store
        # One after the other: both are cached reads that almost never wait,
        # and `gather` would make each a task of its own.
        if collection is None:
            collection = await get_collection(store, ask.collection)
        bench = await models_by_alias(store)
        request = ask.request.under_system(collection.system_prompt)
        shape = shape_of(request)
        key = conversation_key(collection.name, ask.request, header=header, client=ask.conversation)
        fit, left_off = route_fit(collection, request, bench)
        if not fit:
            reasons = "; ".join(f"{m.alias}: {m.reason}" for m in left_off) or "it has no members"
            raise UserError(
                f"no member of {_bench_name(collection.name)} can drive this conversation ({reasons})",
                status=422,
            )
        if earlier:
            tried = {a.alias for a in earlier}
            fit = [c for c in fit if c.alias not in tried]
        sticky = await self.runtime.conversations.get(key)
        context = CallContext(
            task=turn_task(collection.name, shape, "route turn"),
            collection=collection.name,
            shape=shape,
            seat=ROUTE_SEAT,
            ask_id=ask_id or new_ask_id(),
            conversation=key,
            key=gateway_key,
        )
        budget = max(collection.seat_timeout, ROUTE_TURN_SECONDS)
        attempts = list(earlier)
        failed_calls: list[CallResult | None] = []  # their rows, awaited before the turn ends
        order = TurnOrder(store, collection, shape, fit, sticky)
        while (candidate := await order.next()) is not None:
            call_stream = self.caller.stream(
                candidate.model,
                candidate.request,
                kind="route",
                timeout=budget,
                context=context,
                first_byte_timeout=collection.seat_timeout,
            )
            try:
                head = await _until_first_byte(call_stream)
            except ProviderError as exc:
                await call_stream.aclose()
                attempts.append(_attempt(candidate.alias, call_stream, exc))
                failed_calls.append(call_stream.result)
                continue
            if candidate.alias != sticky:  # a new conversation, or failover moved it
                try:
                    await self.runtime.conversations.put(key, collection.name, candidate.alias)
                except asyncio.CancelledError as exc:  # its client hung up: the call ends as that says
                    call_stream.cancelled_by = exc
                    await call_stream.aclose()
                    raise
            shadows: tuple[str, ...] = ()
            if collection.shadow_seats > 0 and not earlier:
                failed = {a.alias for a in attempts}
                others = [c for c in fit if c.alias != candidate.alias and c.alias not in failed]
                shadows = start_shadows(
                    self.caller,
                    others[: collection.shadow_seats],
                    collection=collection.name,
                    shape=shape,
                    context=context,
                    timeout=collection.seat_timeout,
                )
            return RouteTurn(
                self.runtime,
                call_stream,
                head,
                collection=collection.name,
                shape=shape,
                conversation=key,
                alias=candidate.alias,
                attempts=tuple(attempts),
                shadows=shadows,
                left_off=left_off,
                failed_calls=tuple(failed_calls),
            )
        await await_recorded(failed_calls)  # the error names them
        raise _all_failed(collection.name, attempts)


class RouteTurn:
    """One turn, its member already answering. Consume `chunks()` once."""

    def __init__(
        self,
        runtime: Runtime,
        call_stream: CallStream,
        head: list[Chunk],
        *,
        collection: str,
        shape: str,
        conversation: str,
        alias: str,
        attempts: tuple[Attempt, ...],
        shadows: tuple[str, ...],
        left_off: tuple[LeftOff, ...],
        failed_calls: tuple[CallResult | None, ...] = (),
    ) -> None:
        self.runtime = runtime
        self.call = call_stream.call_id
        self.alias = alias
        self.collection = collection
        self.shape = shape
        self.conversation = conversation
        self.attempts = attempts
        self.shadows = shadows
        self.left_off = left_off
        self._stream = call_stream
        self._head = head
        self._failed_calls = failed_calls

    async def chunks(self, on_end: Callable[[], None] | None = None) -> AsyncGenerator[Chunk, None]:
        """The member's reply as it arrives; raises the `ProviderError` of a
        failure after the first byte. Ends once this turn's calls are in the
        log, calling `on_end` then (a stream's `bench` object learns what the
        turn cost before its last event). Closed before its end (the server
        closes a stream whose client hung up, `server/streaming.py`), the
        member's call is cancelled upstream and logged `cancelled`, its error
        `HUNG_UP`, as a panel stream's seats are: a hang-up is nobody's
        failure and owes no verdict. The heap is given back a moment later
        (`benchwarmers.trim`)."""
        ended = False
        self._stream.left_as = HUNG_UP  # its only reader is the client's stream
        try:
            for chunk in self._head:
                if not isinstance(chunk, ResponseHeaders):
                    yield chunk
            async for chunk in self._stream:
                if not isinstance(chunk, ResponseHeaders):
                    yield chunk
            ended = True
        finally:
            await self._closed(ended)
        await await_recorded((*self._failed_calls, self._stream.result))
        if on_end is not None:
            on_end()

    async def finish(self) -> None:
        """`chunks()` for a whole reply (`RouteEngine.answer`): the member's
        reply read to its end and this turn's calls into the log, no chunk
        handed on. Its own coroutine, not `chunks()` drained: that was a
        generator more per turn (its hooks, and a step per chunk) for
        chunks nobody reads."""
        ended = False
        try:
            async for _chunk in self._stream:
                pass
            ended = True
        finally:
            await self._closed(ended)
        await await_recorded((*self._failed_calls, self._stream.result))

    async def _closed(self, ended: bool) -> None:
        try:
            await self._stream.aclose()
        finally:  # even when a hang-up cancels the close: the row is written regardless
            self._note_tool_calls()
            if not ended:  # its client left: what the turn held is freed once the stream unwinds
                give_back_soon(asyncio.get_running_loop())

    def _note_tool_calls(self) -> None:
        result = self._stream.result
        if result is not None and result.reply.tool_calls:
            task = turn_task(self.collection, self.shape, "route turn", result.reply)
            spawn(set_call_task(self.runtime.store, self.call, task), name=f"note route turn {self.call}")

    @property
    def result(self) -> CallResult | None:
        """The recorded outcome, once `chunks()` has ended."""
        return self._stream.result

    def bench(self) -> RouteBench:
        """Who answered this turn and with which call id (the id a verdict
        names), who failed before it, who shadows it; once the turn has
        ended, what its calls cost (shadow seats apart: they are the bench's
        own spend, logged and counted under the collection)."""
        result = self._stream.result
        total = None if result is None else Total.of((*(a.cost_usd for a in self.attempts), result.cost_usd))
        return RouteBench(
            collection=self.collection,
            shape=self.shape,
            call=self.call,
            alias=self.alias,
            conversation=self.conversation,
            failover=tuple(a.failure() for a in self.attempts),
            shadows=self.shadows,
            left_off=self.left_off,
            cost_usd=None if total is None else total.usd,
            cost_complete=True if total is None else total.complete,
        )


async def _until_first_byte(call_stream: CallStream) -> list[Chunk]:
    """The chunks up to and including the first text or tool-call piece (or
    all of them, for a reply with none)."""
    head: list[Chunk] = []
    async for chunk in call_stream:
        head.append(chunk)
        if isinstance(chunk, CONTENT_CHUNKS):
            break
    return head


def _attempt(alias: str, call_stream: CallStream, exc: ProviderError) -> Attempt:
    result = call_stream.result
    if result is None:
        return Attempt(alias, call_stream.call_id, "error", str(exc))
    return Attempt(alias, call_stream.call_id, result.status, str(exc), result.frees_at, result.cost_usd)


def _all_failed(collection: str, attempts: Sequence[Attempt]) -> ProviderError:
    detail = "; ".join(f"{a.alias}: {a.error or a.status}" for a in attempts)
    message = f"every member of {_bench_name(collection)} failed this turn ({detail})"
    if attempts and all(a.status in ("limited", "rate_limited") for a in attempts):
        known = [a.frees_at for a in attempts if a.frees_at is not None]
        return LimitExceeded(message, frees_at=min(known) if known else None)
    # A provider failed each only when every one is an `error`; our timeout stopped each when all timed out.
    statuses = {a.status for a in attempts}
    status = 504 if statuses == {"timeout"} else 502
    return NoAnswer(message, providers_failed=statuses == {"error"}, status=status)


def _bench_name(collection: str) -> str:
    return f"bench/{collection}"
