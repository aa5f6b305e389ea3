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

And the C allocator: glibc serves a block of 128 KB or more by `mmap`,
but once such a block is freed it raises that threshold to the block's
size, so the next few-MB replies (a panel's seat, its rendered stream
event) come from its heap instead, and a heap gives memory back only from
its top: 100 clients that stalled on a 4 MB reply left the server 200+ MB
larger after every byte of theirs was freed. A fixed threshold
(`MMAP_THRESHOLD`, which also turns the raising off) keeps big blocks on
`mmap`, returned to the system as soon as they are freed; a gateway's
usual requests and replies are far below it, so the hot path makes no
more system calls. Elsewhere than glibc this step does nothing.

Smaller blocks (a route-mode stream's pieces) stay in the heap, freed in
its middle where `free` cannot give them back: after the server cuts
stalled clients (`protocol.py`), and after a panel whose client left
finishes, `benchwarmers.trim.give_back_soon` asks glibc once, a moment
later, to return the heap's free pages (`malloc_trim`): only then, never
on the request path.

Only a serving process calls this (`serve`, each `--workers` worker, the
demo): a process that builds many apps, as the tests do, would freeze each
one's objects for good.
"""

from __future__ import annotations

import gc

from benchwarmers.trim import libc_function

YOUNG_GENERATION_THRESHOLD = 10_000
OLDER_GENERATION_THRESHOLD = 20
# Blocks this large or larger are mmap'ed by glibc, and unmapped when freed.
MMAP_THRESHOLD = 256 * 1024
_M_MMAP_THRESHOLD = -3  # mallopt's parameter number, from glibc's malloc.h


def settle_for_serving() -> None:
    """Freeze the heap as built and space out the collector's passes."""
    gc.collect()
    gc.freeze()
    gc.set_threshold(YOUNG_GENERATION_THRESHOLD, OLDER_GENERATION_THRESHOLD, OLDER_GENERATION_THRESHOLD)
    fix_mmap_threshold()


def fix_mmap_threshold() -> bool:
    """Big blocks on `mmap`, given back when freed (glibc); False where there is no `mallopt`."""
    mallopt = libc_function("mallopt")
    return bool(mallopt is not None and mallopt(_M_MMAP_THRESHOLD, MMAP_THRESHOLD))
