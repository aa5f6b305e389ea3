"""Waiting for what the clock brings back, by polling under a generous
deadline: a loaded machine makes the wait longer, never the test red; and
`Clock`, a clock the test moves, for code that takes its time as `clock`
and `sleep` (the limiter): no real wait, and no deadline a slow machine
can pass before the test looks."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

from benchwarmers.runtime import Runtime
from benchwarmers.store.models import get_model
from benchwarmers.store.views import ModelView

T = TypeVar("T")


async def eventually(read: Callable[[], Awaitable[T]], done: Callable[[T], bool], within: float = 30.0) -> T:
    """`read()` again until `done` says its value is the one awaited (what a
    server or a writer finishes in the background); its last value when
    `within` runs out."""
    deadline = time.monotonic() + within
    while True:
        value = await read()
        if done(value) or time.monotonic() > deadline:
            return value
        await asyncio.sleep(0.05)


async def back_from_rest(runtime: Runtime, alias: str, within: float = 30.0) -> ModelView:
    """The model once its rest is over (or as it is when `within` runs out)."""
    return await eventually(
        lambda: get_model(runtime.store, alias), lambda model: model.status != "resting", within
    )


class Clock:
    """Seconds since the epoch that move only when the test says `advance`;
    `sleep` returns once the clock has moved past its end."""

    def __init__(self) -> None:
        self.now = time.time()
        self._moved = asyncio.Condition()

    def __call__(self) -> float:
        return self.now

    async def sleep(self, seconds: float) -> None:
        until = self.now + seconds
        async with self._moved:
            await self._moved.wait_for(lambda: self.now >= until)

    async def advance(self, seconds: float) -> None:
        self.now += seconds
        async with self._moved:
            self._moved.notify_all()


def wait_for(check: Callable[[], Any], timeout: float = 30.0) -> Any:
    """Poll until `check()` is truthy (work the server finishes in the
    background: the call log written as each call ends, shadow seats, notes
    on finished calls); its last value when `timeout` runs out."""
    deadline = time.monotonic() + timeout
    while True:
        value = check()
        if value or time.monotonic() > deadline:
            return value
        time.sleep(0.02)
