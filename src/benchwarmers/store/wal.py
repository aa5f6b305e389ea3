"""Checkpointing an SQLite WAL off the commits that replies wait on.

SQLite's auto-checkpoint runs inside the COMMIT that takes the WAL past
1,000 pages, and a checkpoint is two fsyncs and the copying between them
(5-30 ms on the development box): the commit a reply waits on took that
long every hundred or so batches of the call log, which is a p99. A
PASSIVE checkpoint from another connection, though, runs beside a writer
that goes on appending to the WAL: so the call log's writer has the
auto-checkpoint off and asks a `Checkpointer` (a thread and a connection
of its own) every so many batches.

The WAL starts over from its beginning only when a write transaction
begins with every frame copied back, which a checkpoint beside a steady
stream of commits never quite achieves: once the log falls quiet the
checkpointer runs once more, and under a load that never pauses the
writer checkpoints itself, rarely (`Checkpointer.checkpoint_from`), which
bounds the WAL.
"""

from __future__ import annotations

import contextlib
import sqlite3
import threading

from benchwarmers.store.db import sqlite_connect

# Seconds after a checkpoint asked for before one more: the log fallen quiet, this one copies all.
QUIET = 1.0


def checkpoint(connection: sqlite3.Connection) -> None:
    """Copy what the WAL holds into the database without waiting for anyone
    (PASSIVE: what a reader's snapshot still needs stays for the next one)."""
    with contextlib.suppress(sqlite3.Error):
        connection.execute("PRAGMA wal_checkpoint(PASSIVE)")


def truncate(file: str, wait: float = 1.0) -> bool:
    """Copy the whole WAL into the database and cut the WAL file to nothing,
    waiting up to `wait` seconds for readers and writers; whether it was done.
    For deleted rows that must leave the data folder (`store/kept.py`): a
    checkpoint copies pages back but leaves the WAL's old frames on disk,
    overwritten only as later writes happen to reach them."""
    connection = sqlite_connect(file)
    try:
        connection.execute(f"PRAGMA busy_timeout={int(wait * 1000)}")
        busy, _log, _copied = connection.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchone()
        return not busy
    except sqlite3.Error:
        return False
    finally:
        connection.close()


class Checkpointer:
    """A thread that checkpoints one SQLite file's WAL when asked (`ask`),
    and once more when no one has asked for `QUIET` seconds after that."""

    def __init__(self, file: str) -> None:
        self._asked = threading.Event()
        self._turn = threading.Lock()
        self._stopping = False
        self._connection = sqlite_connect(file)
        self._thread = threading.Thread(target=self._run, name="wal-checkpoint", daemon=True)
        self._thread.start()

    def ask(self) -> None:
        self._asked.set()

    def checkpoint_from(self, connection: sqlite3.Connection) -> None:
        """Checkpoint from the caller's own connection, once a checkpoint under
        way beside it is done (two at once: the second copies nothing)."""
        with self._turn:
            checkpoint(connection)

    def stop(self) -> None:
        """Finish (in the caller's thread: it waits for a checkpoint under way)."""
        self._stopping = True
        self._asked.set()
        self._thread.join()

    def _run(self) -> None:
        quiet_one_due = False
        while True:
            asked = self._asked.wait(QUIET if quiet_one_due else None)
            if self._stopping:
                break
            self._asked.clear()
            with self._turn:
                checkpoint(self._connection)
            quiet_one_due = asked
        self._connection.close()
