"""The call log's journal: each call's row is appended to a file of this
process's before the reply that names the call ends, and committed to the
database behind the reply, many calls at a time (`calls/log.py`).

Why: a reply that waited for its calls' commit waited for the writer's
thread, which needs the interpreter lock back after every SQLite step
while the event loop holds it: 4-8 ms at p50 and 17-34 ms at p99 under ten
connections, the gateway's whole tail. An append lands in the page cache,
which outlives a killed process just as SQLite's WAL does at
`synchronous=NORMAL`: the promise is the same (a SIGKILL loses no call a
client was told of; a power cut may lose the last moments, as the WAL
would).

The append is a copy into a shared memory map of the segment, not a
write(2): a system call on the event loop's thread lets the log writer's
thread take the interpreter lock, and getting it back cost the loop some
46 µs a call under ten connections. The map's pages are the file's pages
in the page cache, so what a killed process copied is in the file all the
same. A segment's whole size is reserved on disk (`posix_fallocate`) as it
is made, so a full disk is an OSError then, never a SIGBUS at a copy; its
unwritten tail is zeros, which a replay skips as it skips a line cut short.

The files: a folder beside the database (`<file>.journal/`), or, on
PostgreSQL, in the data folder (`calls-<digest of the database's URL,
without its password>.journal/`: one data folder may serve several
databases in turn); in it, for each process writing calls, one segment
at a time (`<pid>-<random>.journal`), held under an exclusive `flock` as
long as that process lives. A segment is removed once every row in it is
committed. One no process holds (its process died, or its writer let it
go, kept, when the store refused a batch) is replayed (`replay`) by the
next process that opens the store, or by a writer whose store takes a
batch again after refusing one: the rows the database lacks are written,
with their ledger lines, and the segment is removed. A segment is made
under a hidden name and renamed once locked, so no one can take a new
segment for an orphan.

On PostgreSQL the replicas, or `serve --workers`' processes, may run on
machines that share only the database, and a call another one journaled
is in no file here: a verdict or `pending` naming a call id minted in the
last few seconds that the log lacks waits for it to arrive
(`log.settled`). Until 4 December a reply there waited for its commit
instead: a round trip to PostgreSQL in every request, and a third of a
transaction a request where the journal's batches make it a hundredth
(docs/benchmarks.md, "The journal on PostgreSQL").
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import logging
import mmap
import os
import secrets
from collections.abc import Iterable
from datetime import datetime
from pathlib import Path
from typing import Any, cast

from sqlalchemy import Table

from benchwarmers import jsontext
from benchwarmers.store import call_rows
from benchwarmers.store.call_rows import Row
from benchwarmers.store.db import Store
from benchwarmers.store.schema import Call

log = logging.getLogger(__name__)

SUFFIX = ".journal"
REFUSED = ".refused"  # a segment the store would not take, kept for whoever looks
# A segment's size, reserved as it is made: a new one is begun when a row would not fit
# (one row larger takes a segment of its own size). Each is removed once the batch that took
# its last rows commits, so what a crash leaves to replay is bounded.
SEGMENT_BYTES = 1 << 20
_SENT = "_sent"  # the row's `sent`, which is not a column of the log
_COLUMNS = frozenset(column.name for column in cast(Table, Call.__table__).columns)


def folder_of(store: Store) -> Path | None:
    """Where a store's journal lives; None where it has none (an in-memory
    database, which nothing outlives, or a store opened without a data
    folder on a database that is not a file)."""
    if store.sqlite_file is not None:
        return Path(store.sqlite_file + SUFFIX)
    if store.is_sqlite or store.home is None:
        return None
    digest = hashlib.sha256(store.database_key.encode()).hexdigest()[:16]
    return store.home / f"calls-{digest}{SUFFIX}"


class Segment:
    """One file of a journal, mapped into memory and locked by this process
    while it is open."""

    def __init__(self, path: Path, fd: int, capacity: int) -> None:
        self.path = path
        self.fd = fd
        self.map = mmap.mmap(fd, capacity)  # shared: the copies land in the file's pages
        self.size = 0
        # A row in it the store refused, or never committed: it stays for the next start.
        self.kept = False

    def fits(self, length: int) -> bool:
        return self.size + length <= len(self.map)

    def write(self, data: bytes) -> None:
        end = self.size + len(data)
        self.map[self.size : end] = data
        self.size = end

    def finish(self) -> None:
        """Remove it (every row in it is committed), or, if it is kept, cut
        its unwritten tail and let it go for the next process that opens the
        store to replay."""
        try:
            self.map.close()  # the map holds a duplicate of the locked descriptor
            if self.kept:
                os.ftruncate(self.fd, self.size)
            else:
                os.unlink(self.path)
        finally:
            os.close(self.fd)


class Journal:
    """A process's journal in one folder: rows appended to its current
    segment; the segments filled meanwhile wait for the writer to take
    them with a batch (`cut`)."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self.current: Segment | None = None
        self.filled: list[Segment] = []

    def append(self, values: dict[str, Any], sent: bool) -> None:
        """One call's row, in the page cache before this returns. Raises
        OSError if it could not be written (the caller then waits for the
        commit instead)."""
        line = encode(values, sent)
        segment = self.current
        if segment is None or not segment.fits(len(line)):
            segment = self._begin(len(line))
        segment.write(line)

    def cut(self) -> list[Segment]:
        """As a batch is taken: the segments filled since the last batch,
        every row of which is in this batch or an earlier one, for the
        writer to `finish` once this batch commits."""
        filled, self.filled = self.filled, []
        return filled

    def seal(self) -> None:
        """Append no more to the current segment: the next batch's `cut`
        takes it, so one kept for a row the store did not take is let go
        (for `replay`) once that batch commits, not once it is full."""
        if self.current is not None:
            self.filled.append(self.current)
            self.current = None

    def open_segments(self) -> list[Segment]:
        """The segments not yet taken with a batch: those filled, and the current one."""
        return [*self.filled, *([self.current] if self.current is not None else [])]

    def close(self) -> None:
        """Finish every segment (every row handed over is committed, or kept)."""
        segments = self.open_segments()
        self.current, self.filled = None, []
        for segment in segments:
            segment.finish()

    def _begin(self, at_least: int) -> Segment:
        self.folder.mkdir(mode=0o700, exist_ok=True)
        name = f"{os.getpid()}-{secrets.token_hex(6)}"
        hidden = self.folder / f".{name}.tmp"
        fd = os.open(hidden, os.O_RDWR | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o600)
        try:
            capacity = max(SEGMENT_BYTES, at_least)
            _reserve(fd, capacity)
            fcntl.flock(fd, fcntl.LOCK_EX)
            path = self.folder / (name + SUFFIX)
            os.rename(hidden, path)
            segment = Segment(path, fd, capacity)
        except OSError:
            os.close(fd)
            with contextlib.suppress(OSError):  # a disk too full for it: give back what it took
                os.unlink(hidden)
            raise
        if self.current is not None:
            self.filled.append(self.current)
        self.current = segment
        return segment


def _reserve(fd: int, size: int) -> None:
    """The file's blocks, taken on disk now (an OSError if the disk is
    full): a copy into a mapped page with no block behind it would be a
    SIGBUS. Where the system has no `posix_fallocate` (macOS), written as
    zeros."""
    if hasattr(os, "posix_fallocate"):
        os.posix_fallocate(fd, 0, size)
    else:
        os.pwrite(fd, bytes(size), 0)


def encode(values: dict[str, Any], sent: bool) -> bytes:
    """A row as one line of JSON (which writes a newline in a string as
    `\\n`, so no row can hold one)."""
    line = {**values, "at": values["at"].isoformat(), _SENT: sent}
    return jsontext.dumps(line) + b"\n"


def decode(line: bytes) -> Row | None:
    """A line back as a row; None for one cut short by a crash mid-append,
    or not ours."""
    try:
        values = jsontext.loads(line)
        sent = values.pop(_SENT)
        values["at"] = datetime.fromisoformat(values["at"])
    except (ValueError, KeyError, TypeError, AttributeError):
        return None
    if not isinstance(sent, bool) or not isinstance(values.get("id"), str) or not values.keys() <= _COLUMNS:
        return None
    return values, sent


async def replay(store: Store) -> int:
    """Write what the segments no process holds (of processes now dead, or
    let go kept) hold and the database lacks (each row once, by its call
    id, with its ledger line), then remove them. The number of calls
    written."""
    folder = folder_of(store)
    if folder is None or not folder.is_dir():
        return 0
    written = 0
    for path in sorted(folder.iterdir()):
        fd = _orphan(path)
        if fd is None:
            continue
        try:
            if path.suffix == SUFFIX:
                rows = [row for line in path.read_bytes().splitlines() if (row := decode(line)) is not None]
                try:
                    written += await _write_missing(store, rows)
                except Exception as exc:  # the store refuses them: keep them for whoever looks, go on
                    log.warning("call journal %s not replayed (%s); kept as %s", path, exc, REFUSED)
                    os.rename(path, path.with_suffix(REFUSED))
                    continue
            os.unlink(path)  # replayed, or a hidden one left empty by a crash as it was made
        finally:
            os.close(fd)
    if written:
        log.info(
            "wrote %d calls from the call journal of a process that stopped before committing them", written
        )
    return written


def _orphan(path: Path) -> int | None:
    """The file open and locked, if its process is gone and no one else has
    replayed it; else None."""
    if not (path.suffix == SUFFIX or path.name.endswith(".tmp")):
        return None
    try:
        fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
    except OSError:
        return None
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        if os.stat(path).st_ino != os.fstat(fd).st_ino:  # replayed and removed meanwhile
            raise FileNotFoundError(path)
    except OSError:  # its process still holds it, or it is gone
        os.close(fd)
        return None
    return fd


async def _write_missing(store: Store, rows: list[Row]) -> int:
    """The rows whose ids the log lacks, in one transaction."""
    by_id = {values["id"]: (values, sent) for values, sent in rows}
    async with store.write() as session:
        known = await call_rows.logged_ids(session, list(by_id))
        missing = [row for id_, row in by_id.items() if id_ not in known]
        for group in _by_columns(missing):  # lines of another version may name other columns
            for statement, values in call_rows.statements(group, store.is_sqlite):
                if values:
                    await session.execute(statement, values)
    return len(missing)


def _by_columns(rows: Iterable[Row]) -> list[list[Row]]:
    groups: dict[frozenset[str], list[Row]] = {}
    for row in rows:
        groups.setdefault(frozenset(row[0]), []).append(row)
    return list(groups.values())
