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
stalled clients (`protocol.py`), `give_back_soon` asks glibc once, a
moment later, to return the heap's free pages (`malloc_trim`): only then,
never on the request path.

Only a serving process calls this (`serve`, each `--workers` worker, the
demo): a process that builds many apps, as the tests do, would freeze each
one's objects for good.
"""

from __future__ import annotations

import asyncio
import ctypes
import ctypes.util
import gc
from functools import cache
from typing import Any

YOUNG_GENERATION_THRESHOLD = 10_000
OLDER_GENERATION_THRESHOLD = 20
# Blocks this large or larger are mmap'ed by glibc, and unmapped when freed.
MMAP_THRESHOLD = 256 * 1024
_M_MMAP_THRESHOLD = -3  # mallopt's parameter number, from glibc's malloc.h
# After a cut, the freed heap is given back this long later (once the cut stream has unwound).
GIVE_BACK_DELAY = 2.0
_trim_pending: list[asyncio.TimerHandle] = []


def settle_for_serving() -> None:
    """Freeze the heap as built and space out the collector's passes."""
    gc.collect()
    gc.freeze()
    gc.set_threshold(YOUNG_GENERATION_THRESHOLD, OLDER_GENERATION_THRESHOLD, OLDER_GENERATION_THRESHOLD)
    fix_mmap_threshold()


def fix_mmap_threshold() -> bool:
    """Big blocks on `mmap`, given back when freed (glibc); False where there is no `mallopt`."""
    mallopt = _libc_function("mallopt")
    return bool(mallopt is not None and mallopt(_M_MMAP_THRESHOLD, MMAP_THRESHOLD))


def give_back_soon(loop: asyncio.AbstractEventLoop) -> None:
    """Return the heap's free pages to the system in a moment (once, however many ask meanwhile)."""
    if not _trim_pending:
        _trim_pending.append(loop.call_later(GIVE_BACK_DELAY, _give_back))


def _give_back() -> None:
    _trim_pending.clear()
    trim = _libc_function("malloc_trim")
    if trim is not None:
        trim(0)


def _libc_function(name: str) -> Any:
    """A function of the C library, None where it has none by that name (not glibc)."""
    return getattr(_libc(), name, None)


@cache
def _libc() -> ctypes.CDLL | None:
    """The C library, found once (finding it may run `ldconfig`: at start-up, not after a cut)."""
    library = ctypes.util.find_library("c")
    try:
        return ctypes.CDLL(library) if library else None
    except OSError:
        return None
