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
"""

from __future__ import annotations

import asyncio
from typing import Any, TypeVar

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
