"""One call's deadline, bounding each of its waits with one timer.

A call waits on its provider several times (a connection, the status line,
each piece of the body) and every wait is bounded by the same deadline. An
`asyncio.timeout_at` scope per wait costs an object, a timer armed and
disarmed and two coroutines each time, and was the largest cost of ours
around a call (`docs/benchmarks.md`); a `Deadline` arms one timer for the
whole call and each wait only marks the task that waits:

    deadline = Deadline.after(timeout)
    try:
        with deadline:
            piece = await anext(pieces)   # TimeoutError once the deadline passes
    finally:
        deadline.close()

It keeps `asyncio.timeout_at`'s meaning exactly: the timer cancels the task
only while it waits inside `with` (never the consumer's work between two
waits: no `with` is ever open across a `yield`), the cancellation comes out
of that `with` as `TimeoutError`, a cancellation from outside stays one
(the task's `cancelling()` count tells them apart, as asyncio's does), and
a wait that starts after the deadline fails at its first suspension, not
before. `close()` disarms the timer when the call ends.
"""

from __future__ import annotations

import asyncio
from types import TracebackType
from typing import Self


class Deadline:
    """A deadline on the running loop's clock (`when`; None for no limit)."""

    __slots__ = ("_cancelling", "_expired", "_handle", "_loop", "_task", "when")

    def __init__(self, when: float | None) -> None:
        self.when = when
        self._loop = asyncio.get_running_loop()
        self._handle: asyncio.TimerHandle | None = None
        self._task: asyncio.Task[object] | None = None  # the task waiting now, if any
        self._cancelling = 0
        self._expired = False  # the timer cancelled the wait under way

    @classmethod
    def after(cls, timeout: float | None) -> Deadline:
        """`timeout` seconds from now (None: never)."""
        return cls(None if timeout is None else asyncio.get_running_loop().time() + timeout)

    def __enter__(self) -> Self:
        if self.when is None:
            return self
        task = asyncio.current_task(self._loop)
        if task is None:
            raise RuntimeError("a Deadline bounds waits of a task")
        if self._task is not None:
            raise RuntimeError("a Deadline bounds one wait at a time")
        self._task = task
        self._cancelling = task.cancelling()
        if self._handle is None:  # the first wait, or one after the timer went off between waits
            self._handle = self._loop.call_at(self.when, self._fire)
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        task, self._task = self._task, None
        if task is None or not self._expired:
            return
        self._expired = False
        if task.uncancel() <= self._cancelling and exc_type is asyncio.CancelledError:
            raise TimeoutError from exc

    def _fire(self) -> None:
        self._handle = None
        if self._task is not None:
            self._expired = True
            self._task.cancel()

    def close(self) -> None:
        """Disarm the timer: the call is over."""
        if self._handle is not None:
            self._handle.cancel()
            self._handle = None
