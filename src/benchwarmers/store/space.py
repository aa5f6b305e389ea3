"""Whether the store can take a call now: room on the data folder's disk,
and the database's own last word.

A call the log cannot take is a call whose seats were answered and paid
for and then lost, its client told 500. So an ask is refused *before* any
seat goes out (`StoreFull`, a 507 in the caller's format) when either:

- the data folder's file system has less than `MIN_FREE_BYTES` free
  (`statvfs`, asked at most once per `RECHECK_SECONDS` per folder: a
  gateway's asks do not each make a system call), or
- the store's last write was refused for want of room (SQLite's "database
  or disk is full", PostgreSQL's 53100, `ENOSPC` from the journal), for
  `REFUSED_HOLD_SECONDS` or until a write succeeds again: on PostgreSQL the
  database's disk is not ours to measure, so its own refusal is the
  signal, and after the hold one ask is let try again.

Every ask runs the check, so a check that found room holds until the disk
is next due a look or a write is refused for room: the asks meanwhile pass
on one comparison of the clock (`ensure_room`).

`/healthz` and `benchwarmers doctor` say so (`full_reason`).
"""

from __future__ import annotations

import errno
import os
import time
from dataclasses import dataclass
from pathlib import Path

from benchwarmers.errors import StoreFull
from benchwarmers.store.db import Store

# Less free space than this on the data folder's disk and asks are refused.
MIN_FREE_BYTES = 64 * 1024 * 1024
RECHECK_SECONDS = 1.0
REFUSED_HOLD_SECONDS = 5.0


@dataclass
class _Room:
    checked_at: float = -RECHECK_SECONDS
    free: int | None = None
    refused: str = ""  # why the database's last write was refused for room, "" when it was not
    refused_at: float = 0.0
    clear_until: float = 0.0  # a check found room: until then, asks pass without another


_ROOM = "space.room"  # the store's `_Room`, in `Store.local`


def _room(store: Store) -> _Room:
    room: _Room | None = store.local.get(_ROOM)
    if room is None:
        room = store.local[_ROOM] = _Room()
    return room


def _folder(store: Store) -> Path | None:
    """The data folder (the SQLite file's, else where the journal is kept)."""
    if store.home is not None:
        return store.home
    path = store.url.split("///", 1)[1] if store.is_sqlite and "///" in store.url else ""
    return Path(path).parent if path and not path.startswith(":memory:") else None


def free_bytes(store: Store) -> int | None:
    """Free bytes on the data folder's disk, at most `RECHECK_SECONDS` old; None if unknown."""
    room = _room(store)
    now = time.monotonic()
    if now - room.checked_at >= RECHECK_SECONDS:
        room.checked_at = now
        folder = _folder(store)
        room.free = None if folder is None else free_on(folder)
    return room.free


def free_on(folder: Path) -> int | None:
    """Free bytes for us on `folder`'s file system now; None if it cannot be asked."""
    try:
        stats = os.statvfs(folder)
    except OSError:
        return None
    return stats.f_bavail * stats.f_frsize


def full_reason(store: Store) -> str:
    """Why the store cannot take a call now ("" when it can)."""
    room = _room(store)
    if room.refused and time.monotonic() - room.refused_at < REFUSED_HOLD_SECONDS:
        return f"the database refused its last write for want of room ({room.refused})"
    free = free_bytes(store)
    if free is not None and free < MIN_FREE_BYTES:
        folder = _folder(store)
        return (
            f"the data folder's disk is full: {free // (1024 * 1024)} MB free on {folder}, "
            f"under the {MIN_FREE_BYTES // (1024 * 1024)} MB a call log needs"
        )
    return ""


def ensure_room(store: Store) -> None:
    """Raise `StoreFull` when the store cannot take a call now."""
    room = _room(store)
    if time.monotonic() < room.clear_until:
        return
    reason = full_reason(store)
    if reason:
        raise StoreFull(f"{reason}; no model was asked. Free some space and ask again")
    room.clear_until = room.checked_at + RECHECK_SECONDS  # when the disk is next due a look


def says_full(error: BaseException) -> bool:
    """Whether a write failed for want of room: the error or any it wraps."""
    seen: BaseException | None = error
    for _ in range(6):
        if seen is None:
            return False
        if isinstance(seen, OSError) and seen.errno in (errno.ENOSPC, errno.EDQUOT):
            return True
        text = str(seen).lower()
        if "disk is full" in text or "no space left" in text or type(seen).__name__ == "DiskFullError":
            return True
        seen = getattr(seen, "orig", None) or seen.__cause__ or seen.__context__
    return False


def note_write(store: Store, error: BaseException | None) -> None:
    """What the store's last write ended in: a refusal for room marks it
    full (the next check of the disk is made at once); a success clears it."""
    room = _room(store)
    if error is None:
        room.refused = ""
    elif says_full(error):
        room.refused = str(error).splitlines()[0][:200]
        room.refused_at = time.monotonic()
        room.checked_at = room.clear_until = -RECHECK_SECONDS
