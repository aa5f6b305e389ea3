"""A failing model is probed at once, not at the daily probe.

Seating holds a model out once its calls fail in a row (`calls/health.py`),
so no seat's call would ever tell that it answers again. The panel engine
hands this module the members its decision held out as failing; each gets
one probe (the daily probe's one word, through the caller, so its answer
clears the failures and seats the model again), at most every
`REVIVE_EVERY` seconds per model in this process, in a task of its own: the
ask never waits for it.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Sequence
from datetime import UTC, datetime
from typing import TYPE_CHECKING

from benchwarmers.bench import probes
from benchwarmers.calls.caller import Caller
from benchwarmers.store.models import get_model

if TYPE_CHECKING:
    from benchwarmers.runtime import Runtime

log = logging.getLogger(__name__)

REVIVE_EVERY = 60.0
# Why the decider holds a failing model out begins with this (`bench/facts.py`).
FAILING = "failing:"

# (database, alias) -> when this process last probed it.
_tried: dict[tuple[str, str], float] = {}
# Probes under way: a task nobody references can be garbage-collected mid-flight.
_PROBING: set[asyncio.Task[None]] = set()


def probe_failing(runtime: Runtime, left_off: Sequence[tuple[str, str]]) -> None:
    """Probe each model left off as failing, unless it was probed lately."""
    now = time.monotonic()
    for alias, why in left_off:
        if not why.startswith(FAILING):
            continue
        key = (runtime.store.database_key, alias)
        if now - _tried.get(key, -REVIVE_EVERY) < REVIVE_EVERY:
            continue
        _tried[key] = now
        task = asyncio.create_task(_probe(runtime, alias))
        _PROBING.add(task)
        task.add_done_callback(_PROBING.discard)


async def settled() -> None:
    """Until the probes under way are done (tests; a runtime closing)."""
    while _PROBING:
        await asyncio.gather(*_PROBING, return_exceptions=True)


async def _probe(runtime: Runtime, alias: str) -> None:
    try:
        model = await get_model(runtime.store, alias)
        await probes.daily_probe(Caller(runtime), runtime.store, model, datetime.now(UTC))
    except Exception:  # a probe is a hope, never a failure of the ask that started it
        log.exception("could not probe the failing model %s", alias)
