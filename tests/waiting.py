"""Waiting for what the clock brings back, by polling under a generous
deadline: a loaded machine makes the wait longer, never the test red."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from typing import Any

from benchwarmers.runtime import Runtime
from benchwarmers.store import registry
from benchwarmers.store.registry import ModelView


async def back_from_rest(runtime: Runtime, alias: str, within: float = 30.0) -> ModelView:
    """The model once its rest is over (or as it is when `within` runs out)."""
    deadline = time.monotonic() + within
    while True:
        model = await registry.get_model(runtime.store, alias)
        if model.status != "resting" or time.monotonic() > deadline:
            return model
        await asyncio.sleep(0.05)


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
