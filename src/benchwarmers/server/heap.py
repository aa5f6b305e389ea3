"""The cyclic garbage collector, tuned once for a long-running server.

CPython collects its youngest generation whenever allocations outnumber
deallocations by 700, and every tenth of those passes walks the next
generation, every tenth of those the whole heap: the imported modules, the
app's routes, the caches. A gateway request allocates hundreds of objects,
so passes ran every few requests, and the full ones stalled the one event
loop every request waits on. Under wrk at 10 connections on the instant
upstream (docs/benchmarks.md, "the collector") they were most of the
passthrough's p99: 50-97 ms with the defaults, 34-45 ms with the collector
switched off, and the same as off with the settings below.

So, once the app is built and before it serves: what is alive then (it
lives as long as the process) is moved out of the collector's sight
(`gc.freeze`), and the young generation is collected every 10,000 net
allocations instead of 700. Cycles are still collected, only in fewer,
larger passes; memory over 50k requests stays flat (`benchmarks/capacity.py`).

Only a serving process calls this (`serve`, each `--workers` worker, the
demo): a process that builds many apps, as the tests do, would freeze each
one's objects for good.
"""

from __future__ import annotations

import gc

YOUNG_GENERATION_THRESHOLD = 10_000
OLDER_GENERATION_THRESHOLD = 20


def settle_for_serving() -> None:
    """Freeze the heap as built and space out the collector's passes."""
    gc.collect()
    gc.freeze()
    gc.set_threshold(YOUNG_GENERATION_THRESHOLD, OLDER_GENERATION_THRESHOLD, OLDER_GENERATION_THRESHOLD)
