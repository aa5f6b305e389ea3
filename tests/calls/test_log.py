"""The call log's writer on an SQLite file (`log._LogFile`): its WAL is
checkpointed by the log's own thread between batches, never inside a
commit a reply waits on, and stays bounded; the caches learn of its
commits though they pass by SQLAlchemy."""

from __future__ import annotations

from pathlib import Path

import pytest

from benchwarmers.calls import log
from benchwarmers.calls.log import CallRow, new_call_id, record_call
from benchwarmers.runtime import Runtime
from benchwarmers.store import changes
from benchwarmers.store.db import SQLITE_FILE


def a_row() -> CallRow:
    return CallRow(new_call_id(), kind="seat", alias="a", endpoint="e", served="m", status="ok", seconds=1.0)


def wal_bytes(home: Path) -> int:
    wal = home / f"{SQLITE_FILE}-wal"
    return wal.stat().st_size if wal.exists() else 0


async def test_the_log_checkpoints_the_wal_itself_and_keeps_it_bounded(
    runtime: Runtime, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(log, "CHECKPOINT_EVERY", 4)
    checkpoint = log._LogFile._checkpoint
    checkpoints = 0

    def counted(file: log._LogFile) -> int:
        nonlocal checkpoints
        checkpoints += 1
        return checkpoint(file)

    monkeypatch.setattr(log._LogFile, "_checkpoint", counted)
    await record_call(runtime.store, a_row())  # the log's thread and connection, made
    file = log._files[runtime.store]
    # SQLite's own auto-checkpoint would run inside the COMMIT that crosses its threshold.
    assert file._connection.execute("PRAGMA wal_autocheckpoint").fetchone() == (0,)
    after_four = 0
    for n in range(2, 41):  # one batch each: each waits for the one before
        await record_call(runtime.store, a_row())
        if n == 4:
            after_four = wal_bytes(runtime.home)
    assert checkpoints >= 10
    # Checkpointed, the WAL is written again from its start: no longer than about four batches wrote.
    assert 0 < wal_bytes(runtime.home) <= 2 * after_four


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
