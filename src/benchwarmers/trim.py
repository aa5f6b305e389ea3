"""Giving the C heap's free pages back to the system, a moment after a lot
of memory was freed in its middle (glibc's `malloc_trim`; elsewhere
nothing).

A heap gives memory back only from its top: the pieces of a big reply,
each below the `mmap` threshold (`server/heap.py`), freed once its stream
is done, leave free pages the process keeps. So after what frees much at
once and rarely (the server cutting stalled readers, `server/protocol.py`;
a panel whose client left finishing its seats, `panel/engine.py`; a
route-mode turn whose client left, `route/engine.py`), `give_back_soon`
asks glibc once, a moment later, however many ask meanwhile: never on the
request path. Its own module, below every layer that frees such memory.

A stream whose client left is not freed when it unwinds, though: the
response's task, cancelled by the client's going (starlette's disconnect
listener), keeps its `CancelledError`, whose traceback holds the stream's
frames, which hold the task: a cycle only the collector's full pass frees,
and the server's passes are rare (`server/heap.py`). A route-mode turn's
text (what arrived of its reply, the reply the log was given) sat in such
cycles: 100 cut turns held +765 MB four minutes later. So the give-back
first runs that pass (`gc.collect`), then trims: what the cycles held is
freed before the heap is asked to shrink. Both at most once per
`GIVE_BACK_DELAY` and only after a client went, never per request: the
heap frozen at start-up (`server/heap.py`) is not walked by the pass.
"""

from __future__ import annotations

import asyncio
import ctypes
import ctypes.util
import gc
from functools import cache
from typing import Any

# The freed heap is given back this long after the first ask (once the freeing has unwound).
GIVE_BACK_DELAY = 2.0

# The give-back asked for and not done yet, with the loop it waits on: a loop
# closed meanwhile (a server stopped, a test's loop) never runs it, so it does
# not count as pending there.
_trim_pending: list[tuple[asyncio.AbstractEventLoop, asyncio.TimerHandle]] = []


def give_back_soon(loop: asyncio.AbstractEventLoop) -> None:
    """Return the heap's free pages to the system in a moment (once, however many ask meanwhile)."""
    if _trim_pending and (_trim_pending[0][0] is not loop or _trim_pending[0][0].is_closed()):
        _trim_pending[0][1].cancel()
        _trim_pending.clear()
    if not _trim_pending:
        _trim_pending.append((loop, loop.call_later(GIVE_BACK_DELAY, _give_back)))


def _give_back() -> None:
    _trim_pending.clear()
    gc.collect()  # the cycles a cancelled stream leaves (see above), freed before the heap shrinks
    trim = libc_function("malloc_trim")
    if trim is not None:
        trim(0)


def libc_function(name: str) -> Any:
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
