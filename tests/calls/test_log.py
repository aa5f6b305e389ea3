"""The call log's writer on an SQLite file (`log._LogFile`): its WAL is
checkpointed beside it and, rarely, by it between batches, never inside a
commit a reply waits on, and stays bounded; the caches learn of its
commits though they pass by SQLAlchemy."""

from __future__ import annotations

import sqlite3
import threading
from collections import Counter
from pathlib import Path

import pytest

from benchwarmers.calls import log
from benchwarmers.calls.log import CallRow, new_call_id, record_call
from benchwarmers.runtime import Runtime
from benchwarmers.store import changes, wal
from benchwarmers.store.db import SQLITE_FILE

from ..waiting import wait_for


def a_row() -> CallRow:
    return CallRow(new_call_id(), kind="seat", alias="a", endpoint="e", served="m", status="ok", seconds=1.0)


def wal_bytes(home: Path) -> int:
    wal = home / f"{SQLITE_FILE}-wal"
    return wal.stat().st_size if wal.exists() else 0


async def test_the_log_checkpoints_the_wal_outside_its_commits_and_keeps_it_bounded(
    runtime: Runtime, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(log, "CHECKPOINT_EVERY", 4)
    monkeypatch.setattr(log, "WRITER_CHECKPOINT_EVERY", 10)
    checkpoint = wal.checkpoint
    by: Counter[str] = Counter()

    def counted(connection: sqlite3.Connection) -> None:
        by[threading.current_thread().name] += 1
        checkpoint(connection)

    monkeypatch.setattr(wal, "checkpoint", counted)
    await record_call(runtime.store, a_row())  # the log's thread and connection, made
    file = log._files[runtime.store]
    # SQLite's own auto-checkpoint would run inside the COMMIT that crosses its threshold.
    assert file._connection.execute("PRAGMA wal_autocheckpoint").fetchone() == (0,)
    after_twelve = 0
    for n in range(2, 61):  # one batch each: each waits for the one before
        await record_call(runtime.store, a_row())
        if n == 12:
            after_twelve = wal_bytes(runtime.home)
    # Batches 10, 20, ... 60, each once its waiters are told: the WAL starts over after each.
    assert wait_for(lambda: by["call-log"] == 6)
    assert wait_for(lambda: by["wal-checkpoint"] >= 3)  # asked at 4, 8, 12, ... (a few asks coalesce)
    # The WAL is written again from its start: no longer than about twelve batches wrote.
    assert 0 < wal_bytes(runtime.home) <= after_twelve + after_twelve // 2


async def test_a_cached_read_of_the_log_is_dropped_once_a_call_commits(runtime: Runtime) -> None:
    loads = 0

    async def load() -> int:
        nonlocal loads
        loads += 1
        return loads

    cache: changes.Cached[int] = changes.Cached(("calls", "usage_ledger"), ttl=3600.0)
    assert await cache.get(runtime.store, load) == 1
    assert await cache.get(runtime.store, load) == 1
    await record_call(runtime.store, a_row())
    assert await cache.get(runtime.store, load) == 2


async def test_a_store_closed_and_used_again_gets_a_log_thread_again(runtime: Runtime) -> None:
    await record_call(runtime.store, a_row())
    await runtime.store.close()
    row = a_row()
    await record_call(runtime.store, row)
    assert (await log.get_call(runtime.store, row.id)) is not None
