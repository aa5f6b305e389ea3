"""The call log's writer on an SQLite file (`log._LogFile`): its WAL is
checkpointed beside it and, rarely, by it between batches, never inside a
commit a reply waits on, and stays bounded; the caches learn of its
commits though they pass by SQLAlchemy."""

from __future__ import annotations

import asyncio
import re
import sqlite3
import threading
from collections import Counter
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from sqlalchemy import func, select
from sqlalchemy.exc import DBAPIError

from benchwarmers.calls import call_ids, log, reads
from benchwarmers.calls.call_ids import new_ask_id, new_call_id
from benchwarmers.calls.log import CallRow, record_call
from benchwarmers.runtime import Runtime
from benchwarmers.store import changes, journal, wal
from benchwarmers.store.db import SQLITE_FILE
from benchwarmers.store.schema import Call, UsageMonth
from benchwarmers.testing.store_template import copy_migrated_store

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
    # The WAL is written again from its start: bounded, not sixty batches long (about five times
    # what twelve wrote). A checkpoint a reader's snapshot holds off on a loaded box lets it run
    # a few batches longer (CI: 1.7 times), so the bound is twice twelve batches, not 1.5.
    assert 0 < wal_bytes(runtime.home) <= 2 * after_twelve


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
    assert (await reads.get_call(runtime.store, row.id)) is not None


# ------------------------------------------------- the journal before the commit


def journal_folder(runtime: Runtime) -> Path:
    folder = journal.folder_of(runtime.store)
    assert folder is not None
    return folder


def journaled_ids(runtime: Runtime) -> set[str]:
    lines = (
        line for path in journal_folder(runtime).glob("*.journal") for line in path.read_bytes().splitlines()
    )
    return {row[0]["id"] for line in lines if (row := journal.decode(line)) is not None}


def in_file(runtime: Runtime, call_id: str) -> bool:
    with sqlite3.connect(runtime.home / SQLITE_FILE) as db:
        return db.execute("SELECT 1 FROM calls WHERE id = ?", (call_id,)).fetchone() is not None


async def test_a_call_is_safe_once_journaled_and_committed_behind_in_one_batch_with_others(
    runtime: Runtime, monkeypatch: pytest.MonkeyPatch
) -> None:
    batches: list[int] = []
    write = log._LogFile.write

    def counted(file: log._LogFile, statements: Any) -> None:
        batches.append(len(statements[0][1]))
        write(file, statements)

    monkeypatch.setattr(log._LogFile, "write", counted)
    rows = [a_row() for _ in range(5)]
    safe = [log.submit_call(runtime.store, row) for row in rows]
    assert all(done.done() for done in safe)  # a reply naming them may end now
    assert journaled_ids(runtime) == {row.id for row in rows}
    assert not any(in_file(runtime, row.id) for row in rows)  # lingering for company
    await log.settled(runtime.store, [rows[0].id])  # a reader in this process cuts the linger short
    assert batches == [5]
    assert all(in_file(runtime, row.id) for row in rows)


async def test_calls_that_end_while_a_batch_commits_linger_for_company_unless_someone_waits(
    runtime: Runtime, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Under a load that never pauses, committing at once what came during the last commit
    # made batches of a call or two, each paying a whole transaction.
    monkeypatch.setattr(log, "LINGER", 3600.0)
    batches: list[int] = []
    committing = threading.Event()
    go_on = threading.Event()
    write = log._LogFile.write

    def held(file: log._LogFile, statements: Any) -> None:
        batches.append(len(statements[0][1]))
        committing.set()
        go_on.wait(10)
        write(file, statements)

    monkeypatch.setattr(log._LogFile, "write", held)
    first = a_row()
    log.submit_call(runtime.store, first)
    waiting = asyncio.create_task(log.settled(runtime.store, [first.id]))  # a reader: committed now
    await asyncio.to_thread(committing.wait, 10)
    later = [a_row() for _ in range(3)]
    assert all(log.submit_call(runtime.store, row).done() for row in later)  # journaled: safe at once
    go_on.set()
    await waiting
    writer = log._writers[runtime.store]
    async with asyncio.timeout(10):
        while writer._draining is not None or writer._lingering is None:  # the writer free, lingering
            await asyncio.sleep(0)
    assert batches == [1]  # the three linger, though the writer is free
    assert not any(in_file(runtime, row.id) for row in later)
    await log.settled(runtime.store, [later[0].id])  # until a reader asks for one of them
    assert batches == [1, 3]
    assert all(in_file(runtime, row.id) for row in later)


async def test_a_reply_waits_for_its_commit_once_the_writer_is_behind(
    runtime: Runtime, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(log, "MAX_BEHIND", 2)
    rows = [a_row() for _ in range(3)]
    first, second, third = (log.submit_call(runtime.store, row) for row in rows)
    assert first.done() and second.done()  # journaled: safe at once
    assert not third.done()  # two calls behind already: this one waits for its commit
    await third
    assert all(in_file(runtime, row.id) for row in rows)
    assert log.submit_call(runtime.store, a_row()).done()  # caught up: safe once journaled again


async def test_every_read_of_the_database_in_this_process_waits_for_journaled_calls(runtime: Runtime) -> None:
    row = a_row()
    log.submit_call(runtime.store, row)
    # Another store object on the same file:
    async with Runtime.open(runtime.home) as another, another.store.read() as session:
        assert await session.get(Call, row.id) is not None
    other_row = a_row()
    log.submit_call(runtime.store, other_row)

    async def from_another_loop() -> bool:  # as a test reads a server in a thread of its own
        async with Runtime.open(runtime.home) as yet_another, yet_another.store.read() as session:
            return await session.get(Call, other_row.id) is not None

    assert await asyncio.to_thread(asyncio.run, from_another_loop())


async def test_a_clean_close_leaves_no_journal_behind(home: Path) -> None:
    copy_migrated_store(home)
    async with Runtime.open(home) as runtime:
        for _ in range(3):
            log.submit_call(runtime.store, a_row())
        folder = journal_folder(runtime)
    assert folder.is_dir() and not any(folder.iterdir())


async def test_a_segment_is_cut_as_it_grows_and_removed_once_its_calls_commit(
    runtime: Runtime, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(journal, "SEGMENT_BYTES", 1000)  # some three rows a segment
    rows = [a_row() for _ in range(13)]
    for row in rows:
        log.submit_call(runtime.store, row)
        await log.settled(runtime.store, [row.id])
    assert len(list(journal_folder(runtime).glob("*.journal"))) <= 1  # the one being written, if any
    assert journaled_ids(runtime) <= {row.id for row in rows[-3:]}


async def test_a_call_whose_commit_failed_is_written_from_the_journal_once_a_commit_succeeds(
    home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    copy_migrated_store(home)
    write = log._LogFile.write
    failures = iter([True])

    def failing_once(file: log._LogFile, statements: Any) -> None:
        if next(failures, False):
            raise DBAPIError.instance(None, None, sqlite3.OperationalError("disk I/O error"), sqlite3.Error)
        write(file, statements)

    monkeypatch.setattr(log._LogFile, "write", failing_once)
    lost, kept = a_row(), a_row()
    async with Runtime.open(home) as runtime:
        log.submit_call(runtime.store, lost)
        await log.settled(runtime.store, [lost.id])
        assert not in_file(runtime, lost.id)
        await log.record_call(runtime.store, kept)  # the store takes a batch again
        assert await asyncio.to_thread(wait_for, lambda: in_file(runtime, lost.id))
        async with runtime.store.read() as session:
            assert await session.scalar(select(func.sum(UsageMonth.requests))) == 2  # each counted once
        folder = journal_folder(runtime)
    assert not any(folder.glob("*.journal"))


async def test_a_call_never_committed_is_written_from_its_segment_though_another_began_meanwhile(
    home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    copy_migrated_store(home)
    monkeypatch.setattr(journal, "SEGMENT_BYTES", 1)  # a segment for every row
    lost, later = a_row(), a_row()
    write = log._LogWriter._write

    async def refusing(writer: Any, rows: list[Any]) -> None:
        if any(values["id"] == lost.id for values, _sent, _done in rows):
            # Ends while its batch commits: lost's segment is full, not yet taken with a batch.
            log.submit_call(writer.store, later)
            raise DBAPIError.instance(None, None, sqlite3.OperationalError("disk I/O error"), sqlite3.Error)
        await write(writer, rows)

    monkeypatch.setattr(log._LogWriter, "_write", refusing)
    async with Runtime.open(home) as runtime:
        log.submit_call(runtime.store, lost)
        await log.settled(runtime.store, [lost.id])
        await log.settled(runtime.store, [later.id])  # committed: the segments its batch took are finished
        assert in_file(runtime, later.id)
        # lost's segment was kept, and is written back now that a batch committed.
        assert await asyncio.to_thread(wait_for, lambda: in_file(runtime, lost.id))
        async with runtime.store.read() as session:
            assert await session.scalar(select(func.sum(UsageMonth.requests))) == 2  # each counted once
        folder = journal_folder(runtime)
    assert not any(folder.glob("*.journal"))


async def test_without_a_journal_to_write_a_reply_waits_for_the_commit(runtime: Runtime) -> None:
    folder = journal_folder(runtime)
    folder.rmdir() if folder.is_dir() else None
    folder.write_text("not a folder")  # the journal cannot be made
    row = a_row()
    done = log.submit_call(runtime.store, row)
    assert not done.done()
    await done
    assert in_file(runtime, row.id)
    folder.unlink()


async def test_a_read_inside_a_write_does_not_wait_for_the_log(runtime: Runtime) -> None:
    row = a_row()
    log.submit_call(runtime.store, row)  # journaled, lingering
    # The writer it would wait for needs the write's turn: waiting would never end.
    async with runtime.store.write(), asyncio.timeout(5), runtime.store.read() as session:
        assert await session.get(Call, row.id) is None
    async with runtime.store.read() as session:
        assert await session.get(Call, row.id) is not None


def test_ids_begin_with_their_time_so_a_new_row_lands_at_one_edge_of_its_index(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A long log's id and ask-id indexes take new rows at one place, not on
    a random leaf each (a page read and written back per call); the ids keep
    their shape (`c_` / `a_` and 20 URL-safe characters) and stay unique."""
    made: list[tuple[str, str]] = []
    for milliseconds in (1_764_633_600_000, 1_764_633_600_001, 1_764_633_660_000, 4_102_444_800_000):
        clock = SimpleNamespace(time_ns=lambda ms=milliseconds: ms * 1_000_000)
        monkeypatch.setattr(call_ids, "time", clock)
        made += [(new_call_id(), new_ask_id()) for _ in range(3)]
    calls, asks = [c for c, _ in made], [a for _, a in made]
    by_time = [ids[::3] for ids in (calls, asks)]
    assert all(ids == sorted(ids) for ids in by_time)
    assert all(re.fullmatch(r"c_[A-Za-z0-9_-]{20}", c) for c in calls)
    assert all(re.fullmatch(r"a_[A-Za-z0-9_-]{20}", a) for a in asks)
    assert len(set(calls)) == len(calls) and len(set(asks)) == len(asks)
