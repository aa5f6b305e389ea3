"""A whole reply's client hanging up: the one way an engine stops the work
it does for a client that no longer waits.

A client waiting for a whole reply (not a stream) is gone when its
connection closes (a timeout, Ctrl-C); the front end hands the engine a
future, `left`, done then (`server.protocol.client_left`). The engine runs
the work in a task of its own and awaits `until_left`: once `left` is done
before the reply, the task is cancelled with `HUNG_UP`, so its calls still
answering are cancelled upstream and recorded `cancelled` with that message
as their error (`calls/caller.py`), and the caller gets `errors.Left`
(counted under 499), never the reply nobody reads. A panel's whole reply
(`PanelEngine.reply_to`) and a route turn's (`RouteEngine.answer`) both
stop so, and a turn so stopped fails over to no other member: a hang-up is
not a member's failure.

A streamed route turn waits for its member's first byte before its
response starts (failover needs it), and the wait can be long (a local
model loading, a reasoning model thinking in a field the adapters drop):
`until_left_here` stops that wait the same way, but in the caller's own
task, because the turn goes on in that task once the stream starts and
reads what its start left in the task's context (the limiter's token
estimate, settled when the call ends). Once the stream has started, the
server's disconnect listener cancels it (`server/streaming.py`).
"""

from __future__ import annotations

import asyncio
from collections.abc import Coroutine
from typing import Any, TypeVar, cast

from benchwarmers.calls.caller import HUNG_UP
from benchwarmers.errors import Left

T = TypeVar("T")


async def until_left(
    reply: asyncio.Future[T], work: asyncio.Task[Any], left: asyncio.Future[None], what: str
) -> T:
    """`reply`, unless `left` is done first: then `work` is cancelled with
    `HUNG_UP` and this raises `Left` (`what` names the ask, "bench/duo").
    `reply` may be `work` itself, or a future the task sets before it ends
    (a panel's task still records after its reply). Nothing is injected
    into the caller's own task: only `work` is cancelled; a cancellation of
    the caller itself is raised as it came."""

    def leaving(_: object) -> None:
        if not reply.done():
            work.cancel(HUNG_UP)
            # A task cancelled before its first step never sets its reply.
            work.add_done_callback(lambda _: reply.done() or reply.cancel())

    left.add_done_callback(leaving)
    try:
        return await reply
    except asyncio.CancelledError:
        current = asyncio.current_task()
        if left.done() and current is not None and not current.cancelling():
            raise Left(f"{what}: the client left before the reply") from None
        raise
    finally:
        left.remove_done_callback(leaving)


async def until_left_here(work: Coroutine[Any, Any, T], left: asyncio.Future[None], what: str) -> T:
    """`work`, awaited in the caller's own task, unless `left` is done first:
    then that task is cancelled with `HUNG_UP` where `work` waits (its calls
    still answering are cancelled upstream, recorded `cancelled`), and this
    raises `Left`. A cancellation of the task by anyone else is raised as it
    came."""
    if left.done():
        work.close()  # never started: nothing was asked of anyone
        raise Left(f"{what}: the client left before the reply")
    task = cast("asyncio.Task[Any]", asyncio.current_task())  # a coroutine a task runs
    waiting, fired = True, False

    def leaving(_: object) -> None:
        nonlocal fired
        if waiting:  # one scheduled as `work` returned would cut what follows it
            fired = True
            task.cancel(HUNG_UP)

    left.add_done_callback(leaving)
    try:
        return await work
    except asyncio.CancelledError:
        if fired and task.uncancel() == 0:
            raise Left(f"{what}: the client left before the reply") from None
        raise
    finally:
        waiting = False
        left.remove_done_callback(leaving)
