"""`wal.Checkpointer`: a checkpoint from a connection of its own, beside a
writer whose connection never checkpoints, when asked and once more when
the asking stops."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from benchwarmers.store import wal
from benchwarmers.store.db import sqlite_connect

from ..waiting import wait_for

pytestmark = pytest.mark.unit


def written(writer: sqlite3.Connection, n: int) -> None:
    for i in range(n):
        writer.execute("INSERT INTO t VALUES (?)", (i,))


def test_a_checkpoint_asked_for_copies_the_wal_back(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    file = str(tmp_path / "db")
    writer = sqlite_connect(file)
    writer.execute("PRAGMA wal_autocheckpoint=0")
    writer.execute("CREATE TABLE t (n INTEGER)")
    runs: list[tuple[int, int, int]] = []

    def counted(connection: sqlite3.Connection) -> None:
        runs.append(connection.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchone())

    monkeypatch.setattr(wal, "checkpoint", counted)
    monkeypatch.setattr(wal, "QUIET", 0.05)
    checkpointer = wal.Checkpointer(file)
    try:
        written(writer, 20)
        assert runs == []  # the writer's commits did not checkpoint
        checkpointer.ask()
        assert wait_for(lambda: len(runs) >= 2)  # the one asked for, then once more when quiet
        busy, log, copied = runs[-1]
        assert busy == 0 and log == copied > 0
        written(writer, 1)  # all copied back: the WAL starts over
        assert writer.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchone()[1] < log
    finally:
        checkpointer.stop()
        writer.close()


def test_truncate_cuts_the_wal_to_nothing_unless_a_read_is_in_the_way(tmp_path: Path) -> None:
    file = str(tmp_path / "db")
    writer = sqlite_connect(file)
    writer.execute("CREATE TABLE t (n INTEGER)")
    written(writer, 5)
    reader = sqlite_connect(file)
    reader.execute("BEGIN")
    reader.execute("SELECT count(*) FROM t").fetchone()  # a snapshot the WAL's frames hold
    written(writer, 5)
    try:
        assert wal.truncate(file, wait=0.05) is False
        reader.execute("COMMIT")
        assert wal.truncate(file) is True
        assert Path(file + "-wal").stat().st_size == 0
    finally:
        reader.close()
        writer.close()
