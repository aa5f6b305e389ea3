"""The one seam every outbound model call takes: panel seats, merges, route
turns, shadow seats, probes and the suite all call models through `Caller`.

Putting every call through one place is what makes the bench trustworthy:
each call is admitted by the limiter (or refused before it goes out, status
`limited`; a provider's own 429 is `rate_limited`), teaches the limiter
what the provider's headers and 429 bodies said, counts against the
limits, and is handed to the call log and the usage ledger the moment it
ends, however it ends (an answer, an error, a timeout, a client that
walked away). The log's writer commits it with the other calls ending
then (`log.submit_call`); `CallResult.recorded` says when.

Two ways in:

* `await caller.call(...) -> CallResult` gathers the whole reply and never
  raises for a provider's failure: the failure is the result's status. Panel
  seats, merges, probes and the suite use it. It returns once the call's
  row is committed, unless asked not to wait (`recorded=False`: the panel
  builds its reply meanwhile and awaits `result.recorded` before the end).
* `caller.stream(...) -> CallStream` hands over chunks as they arrive and
  records when the stream ends. A failure *before the first byte* raises the
  `ProviderError` (with `after_first_byte=False`) before anything was
  yielded, so route mode can fail over to the next member; a failure after it
  raises with `after_first_byte=True`. Either way `CallStream.result` holds
  the outcome, and `result.recorded` its commit, which the stream's end
  does not wait for (route mode awaits it before the turn's last byte).
  Consume it inside `async with` (or close it), so a consumer that stops
  early still gets its call recorded.

Deadlines bound each wait on the provider (`timeout` is the whole call's
budget, limiter wait included: the transport bounds every wait by it),
never with a timeout scope around a `yield`, which would cancel the
consumer's own work instead of the call. A stream may also
have a `first_byte_timeout` (route mode's failover budget, limiter wait
included): a call with no text or tool-call piece by then ends as a
`timeout`, recorded as one, not as a consumer that stopped waiting. A call
may also cap its wait on the limiter (`limit_wait`): a probe passes 0, so
it goes only when the limiter allows it now and is `limited` otherwise,
never a timeout eaten by a wait.

Every call tells `reach.py` whether its endpoint answered at all, and
`health.py` whether its model is failing (the dead are not seated).

A call cancelled with `STOPPED` as the cancellation's message (a person
stopped the panel: `PanelEngine.run(stop_on_close=True)`), or `HUNG_UP` (a
gateway client hung up before the reply), is recorded as `cancelled` with
that message as its error, not as a failure: nobody failed, and no verdict is owed. One
cancelled with a `cut(reason)` message (a panel's quorum or deadline left
it behind) is recorded `cancelled` too, its error `cut: ` and that
reason, and `call` returns its result like a timeout's instead of
raising: the seat is still a seat. A stream whose consumer leaves without
a word (closes it, or is cancelled with no message) is recorded as its
caller stopping waiting (an `error` that says nothing of the model's
health), unless that caller said what such a leaving means
(`CallStream.left_as`): a route turn's stream is read by its client alone,
so its leaving is `HUNG_UP`.
"""

from __future__ import annotations

import asyncio
import dataclasses
import time
import types
from collections.abc import (
    AsyncIterator,
    Awaitable,
    Callable,
    Coroutine,
    Generator,
    Iterable,
)
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any, NamedTuple, Protocol

from prometheus_client import Counter, Histogram

from benchwarmers import metrics
from benchwarmers.calls import health, reach
from benchwarmers.calls.call_ids import new_call_id
from benchwarmers.calls.cost import call_cost
from benchwarmers.calls.log import CallRow, submit_call
from benchwarmers.calls.tokens import prompt_tokens, reply_tokens, spent_estimate
from benchwarmers.errors import (
    LimitExceeded,
    ProviderConnectError,
    ProviderError,
    ProviderRateLimited,
    ProviderTimeout,
)
from benchwarmers.limits.spending import Hold
from benchwarmers.providers.base import Target
from benchwarmers.providers.deadline import Deadline
from benchwarmers.providers.kinds import EndpointLike, adapter_for, key_of
from benchwarmers.types import (
    CONTENT_CHUNKS,
    CallKind,
    Chunk,
    Reply,
    ReplyBuilder,
    Request,
    ResponseHeaders,
    SeatStatus,
    TextDelta,
    Usage,
)

if TYPE_CHECKING:
    from benchwarmers.runtime import Runtime

# The message of a cancellation that is a person's stop (`task.cancel(STOPPED)`).
STOPPED = "stopped by the person who asked"
# The message of one whose client hung up before the reply (a gateway client: closed stream, timeout).
HUNG_UP = "stopped: the client hung up before the reply"
# The messages of a stop: the call is `cancelled`, this message its error, and it owes no verdict.
STOPS = (STOPPED, HUNG_UP)
# How a cut's cancellation message starts (`cut`): the rest is why.
_CUT = "cut: "


def cut(reason: str) -> str:
    """The message to cancel a call's task with when a panel's reply goes
    out without it ("quorum 2 of 3 reached"): recorded `cancelled`, its error this message."""
    return _CUT + reason


def cut_reason(exc: BaseException) -> str | None:
    """The reason of a cut's cancellation (`cut`), None for any other."""
    args = exc.args
    if isinstance(exc, asyncio.CancelledError) and len(args) == 1 and isinstance(args[0], str):
        return args[0][len(_CUT) :] if args[0].startswith(_CUT) else None
    return None


class ModelLike(Protocol):
    """What the caller needs of a registry model view (`store.views.ModelView`)."""

    @property
    def alias(self) -> str: ...
    @property
    def served(self) -> str: ...
    @property
    def endpoint(self) -> EndpointLike: ...
    # Its prices in effect now, USD per million tokens (None: unknown): a call is
    # costed from them as it ends, with no read of the store (`calls/cost.py`).
    @property
    def price_in(self) -> float | None: ...
    @property
    def price_out(self) -> float | None: ...
    @property
    def price_cached(self) -> float | None: ...


class CallContext(NamedTuple):
    """What the call log says a call was for; none of it is prompt text.
    It and `CallResult` are named tuples, made on every call, where a frozen
    dataclass would set each field through `object.__setattr__`."""

    task: str = ""
    collection: str = ""
    shape: str = ""
    seat: str = ""
    ask_id: str = ""
    conversation: str = ""
    explorer: bool = False
    # The gateway key that asked ("" for the owner and the bench's own calls).
    key: str = ""
    # A panel's ask made blind (or not) against its collection (`Ask.blind`); None: as it says.
    blind: bool | None = None


class CallResult(NamedTuple):
    call: str
    alias: str
    status: SeatStatus
    reply: Reply
    seconds: float
    first_byte_seconds: float | None = None
    error: str = ""
    # When the call was `limited`: the Unix time the limit frees, if known.
    frees_at: float | None = None
    failure: ProviderError | None = None
    # USD at the model's price when it ran; None when the price is unknown (0 for a
    # call that never went out: nothing was spent).
    cost_usd: float | None = 0.0
    # Done when the call's row and ledger line are safe: journaled on an SQLite file,
    # committed elsewhere (`log.submit_call`).
    recorded: asyncio.Future[None] | None = None

    @property
    def answered(self) -> bool:
        return self.status in ("ok", "empty")

    @property
    def frees_at_iso(self) -> str:
        if self.frees_at is None:
            return ""
        return datetime.fromtimestamp(self.frees_at, UTC).isoformat(timespec="seconds")


def reply_status(reply: Reply) -> SeatStatus:
    return "ok" if reply.text.strip() or reply.tool_calls else "empty"


class Caller:
    def __init__(self, runtime: Runtime) -> None:
        self.runtime = runtime

    def stream(
        self,
        model: ModelLike,
        request: Request,
        *,
        kind: CallKind,
        timeout: float,
        context: CallContext = CallContext(),
        stream: bool = True,
        first_byte_timeout: float | None = None,
        limit_wait: float | None = None,
        call_id: str = "",
        hold: Hold | None = None,
    ) -> CallStream:
        return CallStream(
            self.runtime,
            model,
            request,
            kind=kind,
            timeout=timeout,
            context=context,
            stream=stream,
            first_byte_timeout=first_byte_timeout,
            limit_wait=limit_wait,
            call_id=call_id,
            hold=hold,
        )

    async def call(
        self,
        model: ModelLike,
        request: Request,
        *,
        kind: CallKind,
        timeout: float,
        context: CallContext = CallContext(),
        stream: bool = False,
        limit_wait: float | None = None,
        recorded: bool = True,
        call_id: str = "",
        on_text: Callable[[str], Awaitable[None] | None] | None = None,
        hold: Hold | None = None,
    ) -> CallResult:
        """The whole reply; a provider's failure is the status. Returns once
        the call is safe in the log, or at once with `recorded=False` (then await
        `result.recorded` before telling anyone of the call: `await_recorded`).
        `call_id`: the id the call is logged under, when its caller minted it
        (a panel names its seats before they answer); `on_text`: handed each
        piece of text as it arrives; what it returns, when not None, is
        awaited before the next piece is read (its reader is behind: the
        upstream waits, see `panel/hand.py`'s `Stream`); `hold`: the
        budgets' reservation made for it already (a panel's seats,
        `Spending.seat`), which the call settles or releases. Cancelled with a
        `cut` message, it returns the call's result (status `cancelled`) rather
        than raising."""
        call_stream = self.stream(
            model,
            request,
            kind=kind,
            timeout=timeout,
            context=context,
            stream=stream,
            limit_wait=limit_wait,
            call_id=call_id,
            hold=hold,
        )
        try:
            async with call_stream:
                try:
                    if on_text is None:
                        async for _chunk in call_stream:
                            pass
                    else:
                        async for chunk in call_stream:
                            if type(chunk) is TextDelta and chunk.text:
                                behind = on_text(chunk.text)
                                if behind is not None:
                                    await behind
                except ProviderError:
                    pass
                except asyncio.CancelledError as exc:
                    # Cancelled here, between chunks (waiting on a stream's reader), not in
                    # the call: the call ends as that cancellation says, not as abandoned.
                    call_stream.cancelled_by = exc
                    raise
        except asyncio.CancelledError as exc:
            task = asyncio.current_task()
            if cut_reason(exc) is None or call_stream.result is None or task is None:
                raise
            task.uncancel()  # the cut is this call's end, not its task's
        assert call_stream.result is not None
        if recorded:
            await await_recorded([call_stream.result])
        return call_stream.result


class _Outcome:
    """How one call is ending, noted as it goes and read once at its end
    (`CallStream._end`): what arrived, whether it went out, and, when it
    did not come to its end, why (the status and error the log keeps).
    What is not noted reads as the class's defaults: a call notes few of
    them, and a dataclass set all ten on every call."""

    first_byte: float | None = None
    sent: bool = False
    learned: bool = False  # the limiter was told the reply's headers
    answered: bool = False  # the reply came to its end: its status is read from it
    status: SeatStatus = "error"
    error: str = ""
    frees_at: float | None = None
    failure: ProviderError | None = None

    def __init__(self, started: float) -> None:
        self.started = started
        self.arrived = ReplyBuilder()  # recorded however the call ends

    def limited(self, exc: LimitExceeded) -> None:
        """The limiter refused it: it never went out."""
        self.status, self.error, self.frees_at, self.failure = "limited", exc.message, exc.frees_at, exc
        self.sent = False

    def failed(self, exc: ProviderError) -> None:
        self.failure, self.error = exc, exc.message
        self.status, self.frees_at = _failed_status(exc)

    def stopped(self, why: str = STOPPED) -> None:
        """The person who asked stopped it (`task.cancel(STOPPED)`), or its client hung up (`HUNG_UP`)."""
        self.status, self.error = "cancelled", why

    def cut(self, reason: str) -> None:
        """The panel's reply went out without it (`task.cancel(cut(reason))`)."""
        self.status, self.error = "cancelled", cut(reason)

    def cancelled(self, exc: asyncio.CancelledError, left_as: str = "") -> None:
        """Its task was cancelled: a person's stop, a cut, or else its consumer left."""
        reason = cut_reason(exc)
        if len(exc.args) == 1 and exc.args[0] in STOPS:
            self.stopped(exc.args[0])
        elif reason is not None:
            self.cut(reason)
        else:
            self.left(left_as)

    def left(self, left_as: str = "") -> None:
        """Its consumer left without saying why: as its caller said such a
        leaving means (`CallStream.left_as`: a stop), else abandoned."""
        if left_as:
            self.stopped(left_as)
        else:
            self.abandoned()

    def abandoned(self) -> None:
        """The consumer left (or its task was cancelled) before the end."""
        self.status, self.error = "error", self.error or "the caller stopped waiting for the reply"

    def broke(self, exc: Exception) -> None:
        """A bug below us, not a provider's failure."""
        if self.failure is None:
            self.status, self.error = "error", f"{type(exc).__name__}: {exc}"


class CallStream:
    """One call's chunks as they arrive, recorded when it ends."""

    def __init__(
        self,
        runtime: Runtime,
        model: ModelLike,
        request: Request,
        *,
        kind: CallKind,
        timeout: float,
        context: CallContext,
        stream: bool,
        first_byte_timeout: float | None = None,
        limit_wait: float | None = None,
        call_id: str = "",
        hold: Hold | None = None,
    ) -> None:
        self.runtime = runtime
        # The budgets' reservation: made by whoever seated the call, else at admit.
        self.hold = hold
        self.limit_wait = limit_wait
        self.model = model
        self.request = request
        self.kind = kind
        self.timeout = timeout
        self.first_byte_timeout = first_byte_timeout
        # How long the first byte may take, limiter wait included: never past the whole call's.
        self.first_byte_wait = min(first_byte_timeout or timeout, timeout)
        self.context = context
        self.upstream_stream = stream
        self.call_id = call_id or new_call_id()
        self.result: CallResult | None = None
        # Whether the endpoint answered at all (None: the call never learned it).
        self._reached: bool | None = None
        self._iterator: AsyncIterator[Chunk] | None = None
        # The cancellation that closed the call from its consumer's side (a
        # stop or a cut landing between chunks): the call ends as it says.
        self.cancelled_by: asyncio.CancelledError | None = None
        # What its consumer leaving without a word means (closing the stream,
        # a cancellation with no message): "" abandoned (an `error`, the caller
        # stopped waiting), or a stop such as `HUNG_UP` where the consumer is
        # a client's own stream (route mode), logged `cancelled` as it says.
        self.left_as = ""

    def __aiter__(self) -> AsyncIterator[Chunk]:
        if self._iterator is None:
            self._iterator = self._run()
        return self._iterator

    async def __aenter__(self) -> CallStream:
        return self

    async def __aexit__(self, *_exc: object) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        """Finish the call: one abandoned half way is still recorded, as an
        error (the consumer left)."""
        if self._iterator is None:
            return  # never started: nothing was asked of anyone
        await self._iterator.aclose()  # type: ignore[attr-defined]

    async def _run(self) -> AsyncIterator[Chunk]:
        """The chunks as they come, admitted, sent, and read to its end under
        the call's deadlines, noted on `outcome` as they arrive; however the
        call ends (its reply whole, the provider's failure, the limiter's
        refusal, the consumer gone, a bug below), `_Outcome` says how, and
        the end records it. One generator: a second one under it cost every
        chunk another generator's step (docs/benchmarks.md)."""
        outcome = _Outcome(time.monotonic())
        try:
            chunks, first_byte_deadline = await self._sent(outcome)
            try:
                while True:
                    try:
                        if first_byte_deadline is not None and outcome.first_byte is None:
                            with first_byte_deadline:
                                chunk = await anext(chunks)
                        else:
                            chunk = await anext(chunks)
                    except StopAsyncIteration:
                        break
                    except TimeoutError as exc:  # our first-byte deadline: nothing else raises it
                        raise ProviderTimeout(f"no first byte within {self.first_byte_wait:g} s") from exc
                    except ProviderTimeout as exc:
                        if type(exc) is not ProviderTimeout:  # ProviderBusy: it never went out
                            raise
                        raise ProviderTimeout(
                            f"no answer within {self.timeout:g} s",
                            status=exc.status,
                            headers=exc.headers,
                            after_first_byte=exc.after_first_byte,
                        ) from exc
                    if isinstance(chunk, ResponseHeaders):
                        outcome.learned = True
                        self._reached = True
                        await self.runtime.limiter.learn(
                            self.model.endpoint.name,
                            self.model.served,
                            status=chunk.status,
                            headers=dict(chunk.headers),
                            body="",
                        )
                    elif isinstance(chunk, CONTENT_CHUNKS) and outcome.first_byte is None:
                        outcome.first_byte = time.monotonic() - outcome.started
                    outcome.arrived.add(chunk)
                    yield chunk
            finally:
                if first_byte_deadline is not None:
                    first_byte_deadline.close()
                await chunks.aclose()  # type: ignore[attr-defined]
            outcome.answered = True
        except LimitExceeded as exc:
            outcome.limited(exc)
            raise
        except ProviderError as exc:
            outcome.failed(exc)
            await self._learn_failure(outcome, exc)
            raise
        except asyncio.CancelledError as exc:
            outcome.cancelled(exc, self.left_as)
            raise
        except GeneratorExit:
            if self.cancelled_by is None:
                outcome.left(self.left_as)
            else:
                outcome.cancelled(self.cancelled_by, self.left_as)
            raise
        except Exception as exc:  # a bug below us still ends as a recorded call
            outcome.broke(exc)
            raise
        finally:
            await self._end(outcome)

    async def _sent(self, outcome: _Outcome) -> tuple[AsyncIterator[Chunk], Deadline | None]:
        """The call admitted and sent: the provider's chunks, and the
        first-byte deadline to read the first of them by (None: the whole
        call's, which the transport keeps)."""
        endpoint = self.model.endpoint
        # Both deadlines on the loop's clock, reckoned once for the whole call.
        loop = asyncio.get_running_loop()
        deadline = loop.time() + self.timeout
        first_byte_wait = self.first_byte_wait
        # The transport bounds every wait by the whole call's deadline; one of
        # our own is needed only while a sooner first-byte deadline runs
        # (route mode's failover), not per chunk after the first byte.
        first_byte_deadline = (
            Deadline(loop.time() + first_byte_wait) if first_byte_wait < self.timeout else None
        )
        target = await self._admitted(first_byte_wait)
        adapter = adapter_for(endpoint.api, self.runtime.outbound)
        outcome.sent = True
        remaining = max(deadline - loop.time(), 0.001)
        chunks = adapter.execute(target, self.request, stream=self.upstream_stream, timeout=remaining)
        return chunks, first_byte_deadline

    async def _learn_failure(self, outcome: _Outcome, exc: ProviderError) -> None:
        """What a provider's failure tells: whether the endpoint answered at
        all, and (unless its headers were read already) its limits."""
        if exc.status is not None or isinstance(exc, ProviderConnectError):
            self._reached = exc.status is not None
        if exc.status is not None and not outcome.learned:
            await self.runtime.limiter.learn(
                self.model.endpoint.name,
                self.model.served,
                status=exc.status,
                headers=exc.headers,
                body=outcome.error,
                retry_after=exc.retry_after,
            )

    async def _end(self, outcome: _Outcome) -> None:
        """The result, handed to the log's writer at once (before anything
        here waits, so even a cancelled wait below leaves it recorded), then
        counted and told to the limiter."""
        reply = outcome.arrived.reply()
        status = reply_status(reply) if outcome.answered else outcome.status
        if status == "cancelled" and outcome.sent and reply.usage == Usage():
            # Stopped or cut before the provider reported usage: counted by estimate, not as free.
            reply = dataclasses.replace(reply, usage=spent_estimate(self.request, reply.text))
        seconds = time.monotonic() - outcome.started
        model = self.model
        cost_usd: float | None = 0.0  # a call that never went out spent nothing
        if outcome.sent:
            cost_usd = call_cost(reply.usage, model.price_in, model.price_out, model.price_cached)
        self.result = CallResult(
            call=self.call_id,
            alias=self.model.alias,
            status=status,
            reply=reply,
            seconds=seconds,
            first_byte_seconds=outcome.first_byte,
            error=outcome.error,
            frees_at=outcome.frees_at,
            failure=outcome.failure,
            cost_usd=cost_usd,
            recorded=self._record(
                status, reply.usage, seconds, outcome.first_byte, outcome.error, cost_usd, sent=outcome.sent
            ),
        )
        await _to_the_end(self._finish(sent=outcome.sent, usage=reply.usage))

    async def _admitted(self, first_byte_wait: float) -> Target:
        """Where the call goes, once the limiter lets it go: waiting at most
        `limit_wait`, never past the first-byte wait. A missing key is
        refused first, before the limiter counts the call."""
        endpoint = self.model.endpoint
        key = key_of(endpoint)
        limit_wait = first_byte_wait if self.limit_wait is None else self.limit_wait
        # The one estimate of the call's tokens, for the budgets and the limiter alike.
        prompt, reply = prompt_tokens(self.request), reply_tokens(self.request)
        if self.hold is None:  # budgets first: a call they refuse takes no room under a rate limit
            self.hold = await self.runtime.spending.reserve(
                collection=self.context.collection,
                price_in=getattr(self.model, "price_in", None),
                price_out=getattr(self.model, "price_out", None),
                tokens_in=prompt,
                tokens_out=reply,
            )
        await self.runtime.limiter.admit(
            endpoint.name,
            self.model.served,
            tokens=prompt + reply,
            max_wait=min(limit_wait, first_byte_wait),
        )
        return Target(
            endpoint=endpoint.name,
            api=endpoint.api,
            base_url=endpoint.base_url,
            served=self.model.served,
            key=key,
        )

    def _record(
        self,
        status: SeatStatus,
        usage: Usage,
        seconds: float,
        first_byte: float | None,
        error: str,
        cost_usd: float | None,
        *,
        sent: bool,
    ) -> asyncio.Future[None]:
        """Hand the log row and ledger line to the log's writer; its commit
        (`result.recorded`) is not waited for here."""
        endpoint = self.model.endpoint
        context = self.context
        return submit_call(
            self.runtime.store,
            CallRow(
                id=self.call_id,
                kind=self.kind,
                alias=self.model.alias,
                endpoint=endpoint.name,
                served=self.model.served,
                status=status,
                seconds=seconds,
                first_byte_seconds=first_byte,
                tokens_in=usage.input_tokens,
                tokens_out=usage.output_tokens,
                tokens_cached=usage.cached_input_tokens,
                cost_usd=cost_usd,
                gateway_key=context.key,
                error=error,
                task=context.task,
                collection=context.collection,
                shape=context.shape,
                seat=context.seat,
                ask_id=context.ask_id,
                conversation=context.conversation,
                explorer=context.explorer,
                blind=context.blind,
                sent=sent,
            ),
        )

    async def _finish(self, *, sent: bool, usage: Usage) -> None:
        """Count the call (`metrics`) and tell the limiter what was spent."""
        result = self.result
        assert result is not None
        endpoint = self.model.endpoint
        context = self.context
        key = (self.kind, context.collection, result.alias, result.status)
        counters = _counted.get(key)
        if counters is None:
            seconds = metrics.CALL_SECONDS.labels(context.collection, result.alias)
            counters = (
                metrics.CALLS.labels(*key),
                seconds,
                metrics.SPEND.labels(context.collection, result.alias),
                metrics.UNPRICED_CALLS.labels(context.collection, result.alias),
            )
            if len(_counted) < _COUNTED_CAP:
                _counted[key] = counters
        counters[0].inc()
        counters[1].observe(result.seconds)
        if result.cost_usd is None:
            counters[3].inc()
        elif result.cost_usd:
            counters[2].inc(result.cost_usd)
        if sent and result.failure is not None:  # it went out, and the provider failed it
            metrics.UPSTREAM_ERRORS.labels(endpoint.name, result.status).inc()
        # One after the other, not gathered: each is a check that is almost
        # always done at once, and a gather would make a task of each.
        if sent:
            await self.runtime.limiter.spent(endpoint.name, self.model.served, usage=usage)
        if self.hold is not None:  # settled at its real cost; one never sent gives its reservation back
            await self.runtime.spending.settle(self.hold, usage if sent else Usage())
        if self._reached is not None:
            await reach.note(self.runtime.store, endpoint.name, reachable=self._reached)
        failed = health.hard_failure(result.status, result.failure)
        if failed is not None:
            await health.note(self.runtime.store, result.alias, failed=failed)


# The call counter and duration histogram of each (kind, collection, member,
# status) seen, so a call's end costs one dict lookup rather than two of
# prometheus-client's label lookups (a lock, a tuple, a format check each).
# Label values are bench names, so the set is small; the cap is a backstop.
# The spend counters of its (collection, member) ride along (`metrics.SPEND`).
_counted: dict[tuple[str, str, str, str], tuple[Counter, Histogram, Counter, Counter]] = {}
_COUNTED_CAP = 4096


async def await_recorded(results: Iterable[CallResult | None]) -> None:
    """Until these calls' rows are safe (before a reply that names them
    ends): journaled, which is done already, or committed where there is no
    journal. A row the store refused raises its error; a client that went
    away meanwhile does not stop the write. Only rows still on their way
    are waited for, and one alone without a `gather` (a panel's last seat,
    most often): each layer is another turn of the loop before the reply."""
    recorded = [r.recorded for r in results if r is not None and r.recorded is not None]
    waiting = [done for done in recorded if not done.done()]
    if waiting:
        await asyncio.shield(waiting[0] if len(waiting) == 1 else asyncio.gather(*waiting))
    for done in recorded:
        done.result()  # a row refused raises here, however early it was


async def _to_the_end(work: Coroutine[Any, Any, None]) -> None:
    """`await asyncio.shield(work)`: a cancellation of the caller does not
    stop `work`. But no task is made for a `work` that ends without waiting,
    as a call's end almost always does (the limiter's and reach's checks are
    answered from memory), and a shield's task is most of what that end
    would cost: `work`'s first step runs here, and only if it has to wait is
    the rest handed to a shielded task (`_resumed`)."""
    try:
        waiting = work.send(None)
    except StopIteration:
        return
    await asyncio.shield(_resumed(work, waiting))


@types.coroutine
def _resumed(work: Coroutine[Any, Any, None], waiting: Any) -> Generator[Any, Any, None]:
    """The rest of a coroutine whose first step ran elsewhere, from the
    future it waits on: what its task yields and sends on (a wait's end,
    a cancellation) goes to it, as `await` would pass them."""
    try:
        while True:
            try:
                sent = yield waiting
            except BaseException as error:
                waiting = work.throw(error)
            else:
                waiting = work.send(sent)
    except StopIteration:
        return


def _failed_status(exc: ProviderError) -> tuple[SeatStatus, float | None]:
    """How a provider's failure is recorded, and when a rate limit frees (Unix time)."""
    if isinstance(exc, ProviderRateLimited):
        return "rate_limited", (time.time() + exc.retry_after if exc.retry_after is not None else None)
    if isinstance(exc, ProviderTimeout):
        return "timeout", None
    return "error", None
