"""The call journal (`store/journal.py`): rows appended before a reply ends,
replayed by the next process that opens the store when the one that wrote
them died before committing them, each call once, its ledger line with it
(on an SQLite file and on PostgreSQL, whose journal is in the data folder);
a live process's journal never touched; a journal the store refuses kept
aside, the others replayed."""

from __future__ import annotations

import errno
import os
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import select

from benchwarmers.calls.call_ids import new_call_id
from benchwarmers.runtime import Runtime
from benchwarmers.store import journal
from benchwarmers.store.db import Store, sqlite_url
from benchwarmers.store.schema import Call, UsageMonth
from benchwarmers.testing.store_template import copy_migrated_store

from ..conftest import throwaway_postgres

AT = datetime(2026, 12, 1, 23, 30, 0, 250_000, tzinfo=UTC)


def values(**changes: Any) -> dict[str, Any]:
    row = {
        "id": new_call_id(),
        "at": AT,
        "kind": "seat",
        "alias": "a",
        "endpoint": "e",
        "served": "m",
        "task": "panel seat (bench/duo, reply)",
        "collection": "duo",
        "shape": "reply",
        "seat": "A",
        "ask_id": "a_x",
        "conversation": "",
        "status": "ok",
        "seconds": 0.5,
        "first_byte_seconds": None,
        "tokens_in": 3,
        "tokens_out": 7,
        "error": "",
        "explorer": False,
    }
    return {**row, **changes}


def journal_of(home: Path, database_url: str | None = None) -> Path:
    """The journal's folder of a process with this data folder, on this
    database (the SQLite file in `home` by default)."""
    folder = journal.folder_of(Store(database_url or sqlite_url(home), home=home))
    assert folder is not None
    return folder


def dead_journal(
    home: Path, *rows: dict[str, Any], sent: bool = True, database_url: str | None = None
) -> Path:
    """A segment as a killed process leaves it: written, its lock gone with it."""
    writer = journal.Journal(journal_of(home, database_url))
    for row in rows:
        writer.append(row, sent)
    segment = writer.current
    assert segment is not None
    segment.map.close()  # as the kernel does for a process killed: the file stays, unwritten
    os.close(segment.fd)  # tail and all, and the lock goes
    return segment.path


async def logged(runtime: Runtime) -> tuple[set[str], list[tuple[int, int, int]]]:
    async with runtime.store.read() as session:
        ids = set(await session.scalars(select(Call.id)))
        ledger = (
            await session.execute(select(UsageMonth.requests, UsageMonth.tokens_in, UsageMonth.tokens_out))
        ).all()
    return ids, [tuple(line) for line in ledger]


def test_a_row_reads_back_as_it_was_written_and_a_cut_line_is_skipped() -> None:
    row = values(error="a\nmulti-line error \u2603", first_byte_seconds=0.125, explorer=True)
    line = journal.encode(row, sent=False)
    assert line.endswith(b"\n") and line.count(b"\n") == 1
    assert journal.decode(line.rstrip(b"\n")) == (row, False)
    assert journal.decode(line[: len(line) // 2]) is None  # a crash in the middle of an append
    assert (
        journal.decode(b'{"id": "c_x", "at": "2026-12-01T00:00:00+00:00", "_sent": true, "nope": 1}') is None
    )
    assert journal.decode(b"[1, 2]") is None


async def test_a_dead_processs_journal_is_replayed_once_with_its_ledger_lines(home: Path) -> None:
    copy_migrated_store(home)
    first, second = values(), values(tokens_in=10, tokens_out=20)
    path = dead_journal(home, first, second)
    with path.open("ab") as cut:
        cut.write(journal.encode(values(), True)[:40])  # the last append, cut short by the kill
    async with Runtime.open(home) as runtime:
        ids, ledger = await logged(runtime)
    assert ids == {first["id"], second["id"]}
    assert ledger == [(2, 13, 27)]
    assert not path.exists()
    # A journal holding a row the log has already (its commit made it, the removal did not):
    # written once, counted once.
    again = dead_journal(home, first)
    async with Runtime.open(home) as runtime:
        assert await logged(runtime) == (ids, ledger)
    assert not again.exists()


@pytest.mark.integration
async def test_a_dead_processs_journal_is_replayed_into_postgresql_with_its_ledger_lines(home: Path) -> None:
    async with throwaway_postgres() as url:
        async with Runtime.open(home, url):
            pass  # migrated
        first, second = values(), values(tokens_in=10, tokens_out=20)
        path = dead_journal(home, first, second, database_url=url)
        assert path.parent.parent == home  # in the data folder, beside no database file
        dead_journal(home, first, database_url=url)  # the same call in another segment: once
        elsewhere = dead_journal(home, values(), database_url=url + "_other")  # another database's
        async with Runtime.open(home, url) as runtime:
            ids, ledger = await logged(runtime)
        assert ids == {first["id"], second["id"]}
        assert ledger == [(2, 13, 27)]
        assert not any(path.parent.iterdir())
        assert elsewhere.exists()


async def test_a_call_that_never_went_out_is_logged_but_not_counted_as_a_request(home: Path) -> None:
    copy_migrated_store(home)
    refused = values(status="rate_limited", tokens_in=0, tokens_out=0)
    dead_journal(home, refused, sent=False)
    async with Runtime.open(home) as runtime:
        assert await logged(runtime) == ({refused["id"]}, [(0, 0, 0)])


async def test_a_live_processs_journal_is_left_alone(home: Path) -> None:
    copy_migrated_store(home)
    async with Runtime.open(home) as runtime:
        live = journal.Journal(journal_of(home))
        row = values()
        live.append(row, True)  # locked by this process as long as it is open
        assert await journal.replay(runtime.store) == 0
        assert (await logged(runtime))[0] == set()
        assert live.current is not None and live.current.path.exists()
        live.close()  # a clean close: every row committed, so the segment goes
        assert not any(live.folder.iterdir())


async def test_a_journal_the_store_refuses_is_kept_aside_and_the_others_replayed(home: Path) -> None:
    copy_migrated_store(home)
    bad = dead_journal(home, values(alias=None))  # NOT NULL: the store will not take it
    good_row = values()
    dead_journal(home, good_row)
    async with Runtime.open(home) as runtime:
        assert (await logged(runtime))[0] == {good_row["id"]}
    assert not bad.exists()
    assert bad.with_suffix(journal.REFUSED).exists()
    async with Runtime.open(home) as runtime:  # kept aside: not tried at every start
        assert (await logged(runtime))[0] == {good_row["id"]}


def test_a_segment_full_begins_another_and_a_row_larger_than_one_gets_its_own(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(journal, "SEGMENT_BYTES", 1000)
    writer = journal.Journal(tmp_path / "j")
    rows = [values() for _ in range(4)] + [values(error="x" * 3000), values()]
    for row in rows:
        writer.append(row, True)
    filled = writer.cut()
    assert writer.cut() == []  # taken once
    assert writer.current is not None
    segments = [*filled, writer.current]
    assert len(segments) >= 3
    read = [
        decoded[0]
        for segment in segments
        for line in segment.path.read_bytes().splitlines()
        if (decoded := journal.decode(line)) is not None
    ]
    assert read == rows  # in order, none lost at a segment's end, the zero tails skipped
    assert max(segment.path.stat().st_size for segment in segments) >= 3000
    for segment in filled:
        segment.finish()
    writer.close()
    assert not any(writer.folder.iterdir())


def test_a_kept_segment_loses_its_unwritten_tail(tmp_path: Path) -> None:
    writer = journal.Journal(tmp_path / "j")
    row = values()
    writer.append(row, True)
    segment = writer.current
    assert segment is not None and segment.path.stat().st_size == journal.SEGMENT_BYTES  # reserved whole
    segment.kept = True
    writer.close()
    assert segment.path.read_bytes() == journal.encode(row, True)


def test_a_disk_too_full_for_a_segment_is_an_error_at_its_start_and_leaves_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def full(fd: int, offset: int, length: int) -> None:
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(journal.os, "posix_fallocate", full)
    writer = journal.Journal(tmp_path / "j")
    with pytest.raises(OSError):
        writer.append(values(), True)  # the caller waits for the commit instead (tests/calls/test_log.py)
    assert writer.current is None and not any(writer.folder.iterdir())


def test_without_posix_fallocate_a_segment_is_reserved_as_zeros(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delattr(journal.os, "posix_fallocate")  # as on macOS
    writer = journal.Journal(tmp_path / "j")
    row = values()
    writer.append(row, True)
    segment = writer.current
    assert segment is not None
    data = segment.path.read_bytes()
    assert len(data) == journal.SEGMENT_BYTES and data.rstrip(b"\0") == journal.encode(row, True)
    segment.kept = True
    writer.close()
