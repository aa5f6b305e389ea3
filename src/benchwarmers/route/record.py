"""What a route turn leaves behind besides its reply.

A turn's call-log row is written by the caller the moment the call ends.
What the caller cannot know is the route-mode meaning of the reply: which
tools the member asked for. For the driving member that is what the agent
went on to run; for a shadow seat it is what it *would* have run (never
executed). Both are named on the row's task (`calls.reads.set_call_task`,
the call log's one writer), by tool name only: arguments carry the user's
files and commands, which the call log never keeps.

The writes happen in background tasks kept referenced here (a task nobody
references can be collected mid-flight), so neither a client that hangs up
nor a slow store can make a turn's reply wait for them.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Coroutine
from typing import Any

from benchwarmers.calls.log import panel_task
from benchwarmers.types import Reply

log = logging.getLogger(__name__)

_BACKGROUND: set[asyncio.Task[Any]] = set()


def spawn(work: Coroutine[Any, Any, None], name: str) -> asyncio.Task[None]:
    """Run `work` on its own; its failure is logged, never raised at anyone."""
    task = asyncio.create_task(work, name=name)
    _BACKGROUND.add(task)
    task.add_done_callback(_finished)
    return task


def _finished(task: asyncio.Task[Any]) -> None:
    _BACKGROUND.discard(task)
    if not task.cancelled() and task.exception() is not None:
        log.error("route background task %s failed", task.get_name(), exc_info=task.exception())


def turn_task(collection: str, shape: str, what: str, reply: Reply | None = None) -> str:
    """`route turn (bench/c, code)`, or with the tools the reply called:
    `shadow seat; tool calls: bash, read_file (bench/c, code)`."""
    names = ", ".join(call.name for call in reply.tool_calls) if reply is not None else ""
    return panel_task(collection, shape, f"{what}; tool calls: {names}" if names else what)
