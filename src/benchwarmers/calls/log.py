"""The call log: one row per outbound model call, and the monthly usage
ledger beside it, written together in one transaction as a call ends, so
the ledger can never count a call the log does not have. A call is handed
to one writer that commits many calls' rows at once (`submit_call`), and a
reply's last byte waits until its calls are safe, so a crash after a client
was answered cannot lose what it was answered with: safe is appended to the
journal (`store/journal.py`, replayed at the next start if the process dies
before the commit), or committed where there is none. A verdict or
`pending` naming a call finds it (`settled`): one this process still
writes is waited for, and so is one a moment young that another process
(a worker, a replica) journaled and has not committed yet.

Ids are made in `call_ids.py`, and the log is read back through
`reads.py`; this module is the writer.

What a row holds is what decides the bench (who answered, how fast, with
how many tokens, with what error), never what was asked or answered: no
prompt text of a gateway request, no image, no key.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import logging
import operator
import queue
import sqlite3
import threading
import time
import weakref
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, NamedTuple, cast

import asyncpg
from sqlalchemy import Executable
from sqlalchemy.dialects.sqlite.pysqlite import SQLiteDialect_pysqlite
from sqlalchemy.engine import Dialect
from sqlalchemy.exc import DBAPIError, IntegrityError, OperationalError

from benchwarmers.calls.call_ids import minted_at
from benchwarmers.config import tunables
from benchwarmers.errors import StoreFull
from benchwarmers.store import call_rows, changes, journal, space, wal
from benchwarmers.store.call_rows import Statements
from benchwarmers.store.db import Store, sqlite_connect, wait_before_reads
from benchwarmers.types import CallKind, SeatStatus

log = logging.getLogger(__name__)

# Error text kept per call: enough to tell what went wrong, bounded so a
# provider's HTML error page cannot bloat the log.
ERROR_LIMIT = 500


def panel_task(collection: str, shape: str, what: str = "panel seat") -> str:
    """A panel call's task, ending in "(bench/<name>, <shape>)" as SPEC says."""
    return f"{what} (bench/{collection}, {shape})"


class CallRow(NamedTuple):
    """One finished call, as the log keeps it. A named tuple, not a frozen
    dataclass: one is made on every call, and a frozen dataclass sets each
    of its 22 fields through `object.__setattr__` (docs/benchmarks.md)."""

    id: str
    kind: CallKind
    alias: str
    endpoint: str
    served: str
    status: SeatStatus
    seconds: float
    first_byte_seconds: float | None = None
    tokens_in: int = 0
    tokens_out: int = 0
    # Of tokens_in, those read from the provider's prompt cache.
    tokens_cached: int = 0
    # USD at the price in effect when it ran (`calls/cost.py`); None: unknown.
    cost_usd: float | None = None
    # The gateway key that asked ("" for the owner and the bench's own calls).
    gateway_key: str = ""
    error: str = ""
    task: str = ""
    collection: str = ""
    shape: str = ""
    seat: str = ""
    ask_id: str = ""
    conversation: str = ""
    explorer: bool = False
    blind: bool | None = None  # `Ask.blind`
    # False when our own limits refused the call before it went out: it is
    # in the log (the seat shows it) but the ledger counts no request.
    sent: bool = True
    at: datetime | None = None


def submit_call(store: Store, row: CallRow) -> asyncio.Future[None]:
    """Hand the call to the log's writer and return at once: the future is
    done once the call is safe, which whoever ends a reply naming it awaits
    before its last byte (`panel/engine.py`, `route/engine.py`): no client
    is told of a call the log could still lose.

    With a journal (`store/journal.py`: an SQLite file, or PostgreSQL
    from a process with a data folder), safe is in it: the future is done
    on return, and the writer commits behind the reply, waiting `LINGER`
    for more calls to share the transaction. Without one, safe is
    committed: the writer starts at once, and calls that end while a batch
    commits go into the next one together (a group commit)."""
    return _writer_of(store).submit(row, row.at or datetime.now(UTC))


async def record_call(store: Store, row: CallRow) -> None:
    """Write the call and return once its row is committed (or raise the
    store's refusal)."""
    writer = _writer_of(store)
    writer.submit(row, row.at or datetime.now(UTC))
    committed = writer.pending[row.id]
    writer.start()
    await asyncio.shield(committed)


async def settled(store: Store, call_ids: Sequence[str]) -> None:
    """Wait while any of these calls is still on its way into the log (read
    your writes: a verdict or `pending` that names a call a reply told of
    finds it). A call this process handed to its writer is waited for
    until it is committed; one the log lacks whose id was minted in the
    last `ARRIVING` seconds, until it arrives or is that old: another
    process (a worker on the one port, a replica on another machine)
    commits its journaled calls behind its replies, within `LINGER` when
    its database keeps up."""
    writer = _writers.get(store)
    waiting: dict[str, asyncio.Future[None]] = {}
    if writer is not None and writer.loop is asyncio.get_running_loop():
        waiting = {call: done for call in call_ids if (done := writer.pending.get(call)) is not None}
        if waiting:
            writer.start()  # no lingering for others while someone waits
            await asyncio.gather(*(asyncio.shield(done) for done in waiting.values()), return_exceptions=True)
    await _arrived(store, [call for call in call_ids if call not in waiting])


async def _arrived(store: Store, call_ids: Sequence[str]) -> None:
    """Until each young id of these is in the log, or is `ARRIVING` old (by
    this machine's clock: a replica's clock ahead of ours cannot make a
    read wait longer than that, and an id from further ahead than that is
    none of ours)."""
    now = time.time()
    until: dict[str, float] = {}
    for call in call_ids:
        minted = minted_at(call)
        if minted is not None and abs(minted - now) < ARRIVING:
            until[call] = min(minted, now) + ARRIVING
    pause = FIRST_LOOK
    while until:
        async with store.read() as session:
            logged = await call_rows.logged_ids(session, list(until))
        now = time.time()
        until = {call: last for call, last in until.items() if call not in logged and last > now}
        if until:
            await asyncio.sleep(min(pause, max(until.values()) - now))
            pause = min(pause * 2, LAST_LOOK)


async def flush_log() -> None:
    """Let every row handed over on this event loop reach its store: for
    whoever stops background work and reads the log next (a cancelled seat
    hands its row over as it unwinds; the writer commits it a moment later)."""
    for writer in list(_writers.values()):
        await writer.flush()


def _writer_of(store: Store) -> _LogWriter:
    loop = asyncio.get_running_loop()
    writer = _writers.get(store)
    if writer is None or writer.loop is not loop:
        writer = _writers[store] = _LogWriter(store, loop)
        store.on_close(writer.close)
    return writer


def _as_full(error: Exception) -> Exception:
    """A write refused for want of room, said as such (`StoreFull`: a 507
    in the caller's format, not a 500); any other error as it is."""
    if space.says_full(error):
        first = str(error).splitlines()[0]
        return StoreFull(f"the call log could not be written: the disk is full ({first})")
    return error


class _LogWriter:
    """The call log's group commit for one store (on one event loop). On an
    SQLite file it writes through a connection of its own in a thread of its
    own (`_LogFile`): one hop to that thread per batch, where an async
    session costs a hop per statement, its begin, commit and reset; and
    each call goes to the journal first (`store/journal.py`). On PostgreSQL,
    through a driver connection of its own (`_LogConnection`)."""

    def __init__(self, store: Store, loop: asyncio.AbstractEventLoop) -> None:
        self.store = store
        self.loop = loop
        folder = journal.folder_of(store)
        self.journal = None if folder is None else journal.Journal(folder)
        self._waiting: list[_Submitted] = []
        self._draining: asyncio.Task[None] | None = None
        self._lingering: asyncio.TimerHandle | None = None
        # Someone waits for what waits now (a reader, a reply without a journal line, a close):
        # the writer commits it next, without lingering.
        self._urgent = False
        self._committing = False  # holding the store's write turn for a batch
        # Calls handed over and not yet committed, by id (`settled`).
        self.pending: dict[str, asyncio.Future[None]] = {}
        # The commit of the last call handed over: batches commit in order, so when it is
        # done, every call before it is too (or refused).
        self._last: asyncio.Future[None] | None = None
        self._reads_wait = (
            wait_before_reads(store, call_rows.TABLES, self.landing) if self.journal is not None else None
        )
        # What a journaled call's submitter is handed: safe already, the same for all.
        self._safe = loop.create_future()
        self._safe.set_result(None)
        self._postgres = None if store.is_sqlite else _LogConnection(store)
        # A batch the store did not take was left in the journal: once one commits again, the
        # journal's segments no process holds are written (`journal.replay`), not only at the
        # next start.
        self._left_behind = False
        self._replaying: asyncio.Task[int] | None = None

    def submit(self, row: CallRow, at: datetime) -> asyncio.Future[None]:
        committed = self.loop.create_future()
        values = _call_values(row, at)
        self._waiting.append((values, row.sent, committed))
        self.pending[row.id] = committed
        self._last = committed
        # With the writer `MAX_BEHIND` calls behind, a reply waits for its call's commit (no
        # journal line needed): the backlog, and the memory it holds, stays bounded.
        behind = len(self.pending) > MAX_BEHIND
        if self.journal is not None and not behind and self._journaled(values, row.sent):
            if self._draining is None and self._lingering is None:
                self._lingering = self.loop.call_later(LINGER, self.start)
            return self._safe
        self.start()
        return committed

    def _journaled(self, values: dict[str, Any], sent: bool) -> bool:
        assert self.journal is not None
        try:
            self.journal.append(values, sent)
        except OSError as exc:  # a full disk, a folder we may not write: the commit keeps the promise
            space.note_write(self.store, exc)
            log.warning(
                "call journal %s not written (%s): replies wait for their commit", self.journal.folder, exc
            )
            self.journal = None
            return False
        return True

    def landing(self) -> Awaitable[None] | None:
        """What a read of the log's tables waits for first (`wait_before_reads`):
        every journaled call still on its way into the database, committed
        now rather than after lingering; None when none is. A read on
        another event loop of this process (a server in a thread of its
        own) waits through this writer's loop."""
        last = self._last
        if last is None or last.done():
            return None
        if self.store.write_turn_taken() and not self._committing:
            # Another write holds the turn this writer's commit needs, perhaps the very
            # task reading (a read inside a write): waiting could never end.
            return None
        if self.loop is asyncio.get_running_loop():
            return self._land(last)
        if self.loop.is_closed() or not self.loop.is_running():
            return None  # nothing will commit it now: the store's close flushes what it can
        return _across(asyncio.run_coroutine_threadsafe(self._land(last), self.loop))

    async def _land(self, last: asyncio.Future[None]) -> None:
        """Until `last` is committed (whatever it ended in: a reader is not
        the one to hear of a refused row), not cancelled with the reader."""
        self.start()
        with contextlib.suppress(Exception):
            await asyncio.shield(last)

    def start(self) -> None:
        """Commit what waits now, not after lingering."""
        if self._lingering is not None:
            self._lingering.cancel()
            self._lingering = None
        self._urgent = True
        if self._draining is None and self._waiting:
            self._draining = self.loop.create_task(self._drain(), name="call log writer")

    async def flush(self) -> None:
        """Let what is handed over reach the store."""
        if self.loop is asyncio.get_running_loop():
            while self._waiting or self._draining is not None:
                self.start()
                if self._draining is not None:
                    await asyncio.shield(self._draining)

    async def close(self) -> None:
        """Before the store closes: everything committed, the journal's segment
        removed (or kept, for the next start, if some call never committed:
        refused, or handed over on an event loop that is gone)."""
        await self.flush()
        if self._replaying is not None:
            with contextlib.suppress(Exception):  # logged by `_replay_left_behind`
                await self._replaying
        if self._postgres is not None:
            await self._postgres.close()
        if self.journal is not None:
            if self.pending:
                self._keep([])
            self.journal.close()
        if self._reads_wait is not None:
            self._reads_wait()

    async def _drain(self) -> None:
        """Commit what waits, then what came meanwhile while anyone waits for
        it (`_urgent`); else what came meanwhile lingers as a submit's call
        does. Under a load that never pauses, committing at once what came
        during the last commit made batches of a few calls, and a batch's
        own cost (its transaction, the WAL's pages, a wake-up of the loop)
        is most of a small one's (docs/benchmarks.md, "The call log's
        batches")."""
        batch: list[_Submitted] = []
        segments: list[journal.Segment] = []
        try:
            while self._waiting:
                batch, self._waiting = self._waiting, []
                self._urgent = False
                segments = self.journal.cut() if self.journal is not None else []
                committed = await self._commit(batch)
                if not committed:
                    self._keep(segments)
                    self._left_behind = True
                for segment in segments:
                    segment.finish()
                segments = []
                if committed:
                    self._replay_left_behind()
                if self._waiting and not self._urgent:
                    self._lingering = self.loop.call_later(LINGER, self.start)
                    break
        except BaseException:  # cancelled: what it held never reached the store
            unsettled = [submitted for submitted in (*batch, *self._waiting) if not submitted[2].done()]
            for submitted in unsettled:
                self._settle(submitted, asyncio.CancelledError())
            self._waiting = []
            if segments or unsettled:
                self._keep(segments)
                for segment in segments:
                    segment.finish()
            raise
        finally:
            self._draining = None

    def _replay_left_behind(self) -> None:
        """The store takes batches again: write what earlier ones left in the
        journal (their segments, finished with the batch that came next, are
        no longer held)."""
        if self._left_behind and (self._replaying is None or self._replaying.done()):
            self._left_behind = False
            self._replaying = self.loop.create_task(journal.replay(self.store), name="call journal replay")
            self._replaying.add_done_callback(_log_replay_failure)

    def _keep(self, segments: list[journal.Segment]) -> None:
        """A row of this batch is not in the store: the segments that may
        hold it (this batch's, and every one not yet taken with a batch)
        stay, for `journal.replay` once a batch commits again, or at the
        next start."""
        if self.journal is not None:
            segments = [*segments, *self.journal.open_segments()]
            self.journal.seal()
        for segment in segments:
            segment.kept = True

    async def _commit(self, batch: list[_Submitted]) -> bool:
        """Whether every row of the batch is committed."""
        try:
            await self._write(batch)
        except Exception as caught:
            space.note_write(self.store, caught)  # a disk full: the next asks are refused before their seats
            exc = _as_full(caught)
            if len(batch) == 1 or isinstance(exc, OperationalError):  # out of reach: so is each row
                for submitted in batch:
                    self._settle(submitted, exc)
                return False
            every = True
            for submitted in batch:  # one row the store refuses must not lose the others
                try:
                    await self._write([submitted])
                except Exception as one:
                    self._settle(submitted, _as_full(one))
                    every = False
                else:
                    self._settle(submitted, None)
            return every
        space.note_write(self.store, None)
        for submitted in batch:
            self._settle(submitted, None)
        return True

    def _settle(self, submitted: _Submitted, error: BaseException | None) -> None:
        values, _sent, done = submitted
        if self.pending.get(values["id"]) is done:
            del self.pending[values["id"]]
        _settle(done, error)

    async def _write(self, rows: list[_Submitted]) -> None:
        batch = [(values, sent) for values, sent, _done in rows]
        if self._postgres is not None:
            await self._postgres.write(*call_rows.postgres_batch(batch))
            changes.committed(self.store, call_rows.TABLES)
            return
        statements = call_rows.statements(batch, self.store.is_sqlite)
        file = _log_file(self.store)
        if file is None:
            async with self.store.write() as session:
                for statement, values in statements:
                    await session.execute(statement, values)
            return
        async with self.store.writing():
            self._committing = True
            try:
                await file.write_soon(statements)
            finally:
                self._committing = False
        changes.committed(self.store, call_rows.TABLES)


_writers: weakref.WeakKeyDictionary[Store, _LogWriter] = weakref.WeakKeyDictionary()
# A call handed to the writer: its row's values, whether it went out, and the future its commit settles.
_Submitted = tuple[dict[str, Any], bool, asyncio.Future[None]]
LINGER = tunables.CALL_LOG_LINGER.value
MAX_BEHIND = tunables.CALL_LOG_MAX_BEHIND.value
ARRIVING = tunables.CALL_LOG_ARRIVING.value
FIRST_LOOK = tunables.CALL_LOG_FIRST_LOOK.value
LAST_LOOK = tunables.CALL_LOG_LAST_LOOK.value
ACROSS_LOOPS = tunables.CALL_LOG_ACROSS_LOOPS.value
CHECKPOINT_EVERY = tunables.CALL_LOG_CHECKPOINT_EVERY.value
WRITER_CHECKPOINT_EVERY = tunables.CALL_LOG_WRITER_CHECKPOINT_EVERY.value

_Job = tuple[Statements, asyncio.AbstractEventLoop, asyncio.Future[None]]
CLOSE_TIMEOUT = tunables.CALL_LOG_CLOSE_TIMEOUT.value


class _LogConnection:
    """The call log's own connection to PostgreSQL (opened on first use, and
    again after it broke): a batch is one statement (`call_rows.postgres_batch`:
    the rows and their ledger lines, each column's values one array), one
    round trip and a transaction of its own, with no pool checkout, ping,
    ORM session or reset around it, which cost more of a worker's CPU than
    the rows; BEGIN, a statement per table and COMMIT cost four round trips
    (see docs/benchmarks.md, "Issue 15: workers").

    A commit waits for PostgreSQL's flush to disk, as any other of ours:
    the journal's segment holding a batch is removed once it commits, so a
    crash of PostgreSQL's machine must not lose what it said it had. No
    reply waits for it (the journal), and a batch holds every call of a
    `LINGER`, so it costs a flush per batch. (Until 4 December, when
    replies waited for the commit, it did not wait for the flush.)

    PostgreSQL out of reach (restarting, a network cut) is tried again
    after each pause of `RECONNECT_AFTER` before the batch is given up (an
    `OperationalError`): its rows stay in the journal, written once a batch
    commits again (`_LogWriter._replay_left_behind`) or at the next start."""

    def __init__(self, store: Store) -> None:
        _args, self._connect = store.engine.dialect.create_connect_args(store.engine.url)
        self._connect.pop("prepared_statement_cache_size", None)  # SQLAlchemy's, not asyncpg's
        self._connection: asyncpg.Connection | None = None

    async def write(self, statement: str, arguments: Sequence[Any]) -> None:
        """One batch, committed when this returns."""
        for pause in (*RECONNECT_AFTER, None):
            try:
                await self._write_once(statement, arguments)
                return
            except _UNREACHABLE as exc:
                if pause is None:
                    raise OperationalError(None, None, exc) from exc
                log.warning("call log: PostgreSQL out of reach (%s); trying again in %s s", exc, pause)
                await asyncio.sleep(pause)

    async def _write_once(self, statement: str, arguments: Sequence[Any]) -> None:
        connection = self._connection
        if connection is None or connection.is_closed():
            connection = self._connection = await asyncpg.connect(**self._connect)
        try:
            await connection.execute(statement, *arguments)
        # As SQLAlchemy would raise them (an IntegrityError for a row refused), like the SQLite path.
        except asyncpg.IntegrityConstraintViolationError as exc:
            raise IntegrityError(None, None, exc) from exc
        except _UNREACHABLE:
            connection.terminate()
            raise
        except asyncpg.PostgresError as exc:
            raise DBAPIError(None, None, exc) from exc
        except asyncio.CancelledError:  # cut off half way: start afresh next time
            connection.terminate()
            raise

    async def close(self) -> None:
        connection, self._connection = self._connection, None
        if connection is None:
            return
        try:
            await connection.close(timeout=CLOSE_TIMEOUT)
        except Exception:  # PostgreSQL or the connection's event loop is gone: just drop it
            connection.terminate()


# What says PostgreSQL could not be reached, or dropped the connection, rather than refused
# the batch: a refused connection (OSError), a connection closed under us (asyncpg's
# InterfaceError), a server shutting down or starting (class 08 and 57P0x SQLSTATEs).
_UNREACHABLE = (
    OSError,
    asyncpg.InterfaceError,
    asyncpg.PostgresConnectionError,
    asyncpg.AdminShutdownError,
    asyncpg.CannotConnectNowError,
    asyncpg.CrashShutdownError,
)
RECONNECT_AFTER = tunables.CALL_LOG_RECONNECT_AFTER.value


class _LogFile:
    """The thread the call log writes an SQLite file from, through a driver
    connection of its own that lives as long as the thread: no pool checkout,
    reset or SQLAlchemy execution per batch, which cost as much CPU as
    SQLite's own work. Its transactions take the store's writer turn
    (`Store.writing`), so they never meet another writer's; a batch is one
    queue put there and one `call_soon_threadsafe` back.

    Each statement is compiled once, here, and sent as the driver's own
    `executemany` with the values already in the columns' stored form.

    Its connection never checkpoints inside a commit (a reply waits for the
    commit): a `wal.Checkpointer` beside it does, every `CHECKPOINT_EVERY`
    batches, and this thread only every `WRITER_CHECKPOINT_EVERY` (once the
    batch's waiters are told), so that the WAL starts over under a load
    that never pauses."""

    def __init__(self, file: str) -> None:
        self.file = file
        self.closed = False
        self._jobs: queue.SimpleQueue[_Job | None] = queue.SimpleQueue()
        self._compiled: dict[Executable, _Compiled] = {}
        self._connection = sqlite_connect(file)
        self._connection.execute("PRAGMA wal_autocheckpoint=0")
        self._checkpointer = wal.Checkpointer(file)
        self._thread = threading.Thread(target=self._run, name="call-log", daemon=True)
        self._thread.start()

    def write_soon(self, statements: Statements) -> asyncio.Future[None]:
        """Hand a batch to the thread: the future is done once it is committed."""
        loop = asyncio.get_running_loop()
        done = loop.create_future()
        self._jobs.put((statements, loop, done))
        return done

    def write(self, statements: Statements) -> None:
        """One batch in one transaction (in the thread)."""
        connection = self._connection
        try:
            connection.execute("BEGIN IMMEDIATE")
            for statement, values in statements:
                if values:
                    compiled = _compiled_for(self._compiled, statement, values[0], _SQLITE)
                    connection.executemany(compiled.sql, [compiled.row(each) for each in values])
            connection.execute("COMMIT")
        except sqlite3.Error as exc:
            if connection.in_transaction:
                connection.execute("ROLLBACK")
            # As SQLAlchemy would raise it (an IntegrityError for a row refused), like the PostgreSQL path.
            raise DBAPIError.instance(None, None, exc, sqlite3.Error) from exc

    def _run(self) -> None:
        batches = 0
        while (job := self._jobs.get()) is not None:
            statements, loop, done = job
            error: BaseException | None = None
            try:
                self.write(statements)
            except Exception as exc:
                error = exc
            with contextlib.suppress(RuntimeError):  # its loop is closed: nobody is waiting
                loop.call_soon_threadsafe(_settle, done, error)
            batches += 1
            if batches % WRITER_CHECKPOINT_EVERY == 0:
                self._checkpointer.checkpoint_from(self._connection)
            elif batches % CHECKPOINT_EVERY == 0:
                self._checkpointer.ask()
        self._checkpointer.stop()
        wal.checkpoint(self._connection)
        self._connection.close()

    async def close(self) -> None:
        """Let the thread finish what it holds, checkpoint and close its connection."""
        self.closed = True
        self._jobs.put(None)
        await asyncio.to_thread(self._thread.join)


@dataclass(frozen=True, slots=True)
class _Compiled:
    """A statement compiled for one driver and one set of value names: its SQL,
    and how each row's values become the driver's positional ones (picked
    in their order at once, then the few that need it converted: a datetime
    to its stored text, a bool to 0 or 1)."""

    sql: str
    keys: Any  # the value names it was compiled for (a dict's keys view)
    pick: Callable[[dict[str, Any]], tuple[Any, ...]]
    processors: tuple[tuple[int, Callable[[Any], Any]], ...]

    @classmethod
    def of(cls, statement: Executable, keys: Any, dialect: Dialect) -> _Compiled:
        compiled = cast(Any, statement).compile(dialect=dialect, column_keys=list(keys), for_executemany=True)
        table = cast(Any, statement).table
        order = tuple(compiled.positiontup)
        found = (table.c[name].type.dialect_impl(dialect).bind_processor(dialect) for name in order)
        processors = tuple((i, process) for i, process in enumerate(found) if process is not None)
        pick = operator.itemgetter(*order) if len(order) > 1 else lambda values: (values[order[0]],)
        return cls(compiled.string, dict.fromkeys(keys).keys(), pick, processors)

    def row(self, values: dict[str, Any]) -> Sequence[Any]:
        picked = self.pick(values)
        if not self.processors:
            return picked
        row = list(picked)
        for i, process in self.processors:
            row[i] = process(row[i])
        return row


def _compiled_for(
    known: dict[Executable, _Compiled], statement: Executable, example: dict[str, Any], dialect: Dialect
) -> _Compiled:
    compiled = known.get(statement)
    if compiled is None or compiled.keys != example.keys():
        compiled = known[statement] = _Compiled.of(statement, example.keys(), dialect)
    return compiled


_SQLITE = SQLiteDialect_pysqlite()
_files: weakref.WeakKeyDictionary[Store, _LogFile] = weakref.WeakKeyDictionary()


def _log_file(store: Store) -> _LogFile | None:
    """The store's call-log thread (made on first use, and again after the
    store closed); None on PostgreSQL (`_LogConnection` there) and for an
    in-memory SQLite database (a second connection would be another
    database)."""
    file = _files.get(store)
    if (file is None or file.closed) and store.sqlite_file is not None:
        file = _files[store] = _LogFile(store.sqlite_file)
        store.on_close(file.close)
    return file


async def _across(landed: concurrent.futures.Future[None]) -> None:
    """A landing on another loop, waited for at most `ACROSS_LOOPS` seconds:
    a loop blocked on this one's thread would never run it, and a read a
    moment stale is better than a read that never ends."""
    with contextlib.suppress(TimeoutError):
        await asyncio.wait_for(asyncio.wrap_future(landed), ACROSS_LOOPS)


def _log_replay_failure(replaying: asyncio.Task[int]) -> None:
    if not replaying.cancelled() and (error := replaying.exception()) is not None:
        log.warning("call journal not replayed (%s): the next start tries again", error)


def _settle(done: asyncio.Future[None], error: BaseException | None) -> None:
    if done.done():  # its caller stopped waiting; the row is written all the same
        return
    if error is None:
        done.set_result(None)
    else:
        done.set_exception(error)
        done.exception()  # retrieved: a future nobody awaits (a client gone) is not an error to log


def _call_values(row: CallRow, at: datetime) -> dict[str, Any]:
    return {
        "id": row.id,
        "at": at,
        "kind": row.kind,
        "alias": row.alias,
        "endpoint": row.endpoint,
        "served": row.served,
        "task": row.task,
        "collection": row.collection,
        "shape": row.shape,
        "seat": row.seat,
        "ask_id": row.ask_id,
        "conversation": row.conversation,
        "status": row.status,
        "seconds": round(row.seconds, 4),
        "first_byte_seconds": None if row.first_byte_seconds is None else round(row.first_byte_seconds, 4),
        "tokens_in": row.tokens_in,
        "tokens_out": row.tokens_out,
        "tokens_cached": row.tokens_cached,
        "cost_usd": row.cost_usd,
        "gateway_key": row.gateway_key,
        "error": row.error[:ERROR_LIMIT],
        "explorer": row.explorer,
        "blind": row.blind,
    }
