"""A client hanging up before its reply: the one way an engine stops the
work it does for a client that no longer waits.

A client is gone when its connection closes (a timeout, Ctrl-C, an agent
interrupted); the front end hands the engine a future, `left`, done then
(`server.protocol.client_left`). Once `left` is done before the reply, the
work is cancelled with `HUNG_UP`, so its calls still answering are
cancelled upstream and recorded `cancelled` with that message as their
error (`calls/caller.py`), and the caller gets `errors.Left` (counted
under 499), never the reply nobody reads. Two shapes of work:

- `until_left`: work in a task of its own, whose reply may come before
  the task ends (a panel's whole reply, `PanelEngine.reply_to`: its task
  records the seats after the reply);
- `until_left_here`: work awaited in the caller's own task, cancelled
  where it waits: a route turn, whole (`RouteEngine.answer`) or a stream's
  start (`RouteEngine.start`, which waits for the member's first byte
  before the response starts: long for a local model loading or a
  reasoning model thinking). A stream's turn goes on in that task and
  reads what its start left in the task's context (the limiter's token
  estimate, settled when the call ends); a task of its own cost a whole
  turn ~11,000 instructions more, 0.7% (docs/benchmarks.md). Once a stream has
  started, the server's disconnect listener cancels it
  (`server/streaming.py`).

A turn so stopped fails over to no other member: a hang-up is not a
member's failure.
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
