"""The call log: one row per outbound model call, and the monthly usage
ledger beside it, written together in one transaction as a call ends, so
the ledger can never count a call the log does not have. A call is handed
to one writer that commits many calls' rows at once (`submit_call`), and a
reply's last byte waits for its calls' commit, so a crash after a client
was answered cannot lose what it was answered with.

What a row holds is what decides the bench (who answered, how fast, with
how many tokens, with what error), never what was asked or answered: no
prompt text of a gateway request, no image, no key.
"""

from __future__ import annotations

import asyncio
import functools
import secrets
import weakref
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from typing import Any, cast

from sqlalchemy import Engine, Executable, Table, select, update
from sqlalchemy.dialects.postgresql import insert as pg_insert
from sqlalchemy.dialects.sqlite import insert as sqlite_insert

from benchwarmers.store.db import Store
from benchwarmers.store.schema import Call, UsageMonth
from benchwarmers.types import CallKind, SeatStatus

CALL_ID_PREFIX = "c_"
ASK_ID_PREFIX = "a_"
# Error text kept per call: enough to tell what went wrong, bounded so a
# provider's HTML error page cannot bloat the log.
ERROR_LIMIT = 500


def new_call_id() -> str:
    """Opaque and unique: `c_` and 20 URL-safe random characters (120 bits)."""
    return CALL_ID_PREFIX + secrets.token_urlsafe(15)


def new_ask_id() -> str:
    """Shared by every call of one gateway ask (its seats and its merge)."""
    return ASK_ID_PREFIX + secrets.token_urlsafe(15)


def panel_task(collection: str, shape: str, what: str = "panel seat") -> str:
    """A panel call's task, ending in "(bench/<name>, <shape>)" as SPEC says."""
    return f"{what} (bench/{collection}, {shape})"


@dataclass(frozen=True, slots=True)
class CallRow:
    """One finished call, as the log keeps it."""

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
    error: str = ""
    task: str = ""
    collection: str = ""
    shape: str = ""
    seat: str = ""
    ask_id: str = ""
    conversation: str = ""
    explorer: bool = False
    # False when our own limits refused the call before it went out: it is
    # in the log (the seat shows it) but the ledger counts no request.
    sent: bool = True
    at: datetime | None = None


def submit_call(store: Store, row: CallRow) -> asyncio.Future[None]:
    """Hand the call to the log's writer and return at once: the future is
    done when its row and ledger line are committed (or failed to be).

    The writer batches: calls that end while a batch is committing go into
    the next one together (a group commit), so seats of a panel, and turns
    of many clients, share a transaction. Whoever ends a reply awaits these
    futures before its last byte (`panel/engine.py`, `route/engine.py`):
    the reply is built while its rows commit, and no client is told of a
    call the log could still lose."""
    stamped = row if row.at is not None else replace(row, at=datetime.now(UTC))
    return _writer_of(store).submit(stamped)


async def record_call(store: Store, row: CallRow) -> None:
    """`submit_call`, returning once the row is committed."""
    await asyncio.shield(submit_call(store, row))


async def settled(store: Store, call_ids: Sequence[str]) -> None:
    """Wait while any of these calls is still on its way into the log (read
    your writes: a verdict or `pending` that names a call this process has
    handed to the writer but not committed yet finds it)."""
    writer = _writers.get(store)
    if writer is None or writer.loop is not asyncio.get_running_loop():
        return
    waiting = [done for call in call_ids if (done := writer.pending.get(call)) is not None]
    if waiting:
        await asyncio.gather(*(asyncio.shield(done) for done in waiting), return_exceptions=True)


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
        store.on_close(writer.flush)
    return writer


class _LogWriter:
    """The call log's group commit for one store (on one event loop). On an
    SQLite file it writes through a connection of its own in a thread of its
    own (`_LogFile`): one hop to that thread per batch, where an async
    session costs a hop per statement, its begin, commit and reset."""

    def __init__(self, store: Store, loop: asyncio.AbstractEventLoop) -> None:
        self.store = store
        self.loop = loop
        self._waiting: list[tuple[CallRow, asyncio.Future[None]]] = []
        self._draining: asyncio.Task[None] | None = None
        # Calls handed over and not yet committed, by id (`settled`).
        self.pending: dict[str, asyncio.Future[None]] = {}

    def submit(self, row: CallRow) -> asyncio.Future[None]:
        done = self.loop.create_future()
        self._waiting.append((row, done))
        self.pending[row.id] = done
        done.add_done_callback(lambda _done: self.pending.pop(row.id, None))
        if self._draining is None:
            self._draining = self.loop.create_task(self._drain(), name="call log writer")
        return done

    async def flush(self) -> None:
        """Let what is handed over reach the store (before it closes)."""
        if self.loop is asyncio.get_running_loop():
            while self._draining is not None:
                await asyncio.shield(self._draining)

    async def _drain(self) -> None:
        """Commit what waits, then what came meanwhile, until none is left."""
        batch: list[tuple[CallRow, asyncio.Future[None]]] = []
        try:
            while self._waiting:
                batch, self._waiting = self._waiting, []
                await self._commit(batch)
        finally:
            self._draining = None
            for _row, done in (*batch, *self._waiting):  # unsettled only if this task was cancelled
                _settle(done, asyncio.CancelledError())
            self._waiting = []

    async def _commit(self, batch: list[tuple[CallRow, asyncio.Future[None]]]) -> None:
        try:
            await self._write([row for row, _done in batch])
        except Exception as exc:
            if len(batch) == 1:
                _settle(batch[0][1], exc)
                return
            for row, done in batch:  # one row the store refuses must not lose the others
                try:
                    await self._write([row])
                except Exception as one:
                    _settle(done, one)
                else:
                    _settle(done, None)
        else:
            for _row, done in batch:
                _settle(done, None)

    async def _write(self, rows: list[CallRow]) -> None:
        file = _log_file(self.store)
        if file is None:
            async with self.store.write() as session:
                for statement, values in _statements(self.store, rows):
                    await session.execute(statement, values)
            return
        async with self.store.writing():
            await self.loop.run_in_executor(file.thread, file.write, _statements(self.store, rows))


_writers: weakref.WeakKeyDictionary[Store, _LogWriter] = weakref.WeakKeyDictionary()


class _LogFile:
    """The thread the call log writes an SQLite file from, through the
    store's `thread_engine`. Its transactions take the store's writer turn
    (`Store.writing`), so they never meet another writer's."""

    def __init__(self, engine: Engine) -> None:
        self.engine = engine
        self.thread = ThreadPoolExecutor(1, thread_name_prefix="call-log")

    def write(self, statements: list[tuple[Executable, list[dict[str, Any]]]]) -> None:
        with self.engine.begin() as connection:
            for statement, values in statements:
                connection.execute(statement, values)

    async def close(self) -> None:
        self.thread.shutdown()


_files: weakref.WeakKeyDictionary[Store, _LogFile] = weakref.WeakKeyDictionary()


def _log_file(store: Store) -> _LogFile | None:
    """The store's call-log thread (made on first use); None on PostgreSQL
    (asyncpg is one round trip a statement already) and for an in-memory
    SQLite database (a second connection would be another database)."""
    file = _files.get(store)
    if file is None and store.thread_engine is not None:
        file = _files[store] = _LogFile(store.thread_engine)
        store.on_close(file.close)
    return file


def _settle(done: asyncio.Future[None], error: BaseException | None) -> None:
    if done.done():  # its caller stopped waiting; the row is written all the same
        return
    if error is None:
        done.set_result(None)
    else:
        done.set_exception(error)
        done.exception()  # retrieved: a future nobody awaits (a client gone) is not an error to log


def _statements(store: Store, rows: list[CallRow]) -> list[tuple[Executable, list[dict[str, Any]]]]:
    """The rows and their ledger lines: two statements, for one transaction."""
    calls = cast(Table, Call.__table__)  # Core, not the ORM's unit of work: less work per row
    sums: dict[tuple[str, str, str], list[int]] = {}
    for row in rows:
        assert row.at is not None
        line = sums.setdefault((row.at.strftime("%Y-%m"), row.endpoint, row.served), [0, 0, 0])
        line[0] += 1 if row.sent else 0
        line[1] += row.tokens_in
        line[2] += row.tokens_out
    lines = [
        {
            "month": month,
            "endpoint": endpoint,
            "served": served,
            "requests": n,
            "tokens_in": i,
            "tokens_out": o,
        }
        for (month, endpoint, served), (n, i, o) in sums.items()
    ]
    return [(calls.insert(), [_call_values(row) for row in rows]), (_ledger_upsert(store.is_sqlite), lines)]


@functools.cache
def _ledger_upsert(sqlite: bool) -> Executable:
    """The ledger's add-to-the-month upsert, built once per dialect: building
    it (its `excluded` columns) cost more than the batch it writes, on the
    panel's path between its last seat and its reply."""
    ledger = cast(Table, UsageMonth.__table__)
    insert = sqlite_insert if sqlite else pg_insert
    upsert = insert(ledger)
    return upsert.on_conflict_do_update(
        index_elements=["month", "endpoint", "served"],
        set_={
            "requests": ledger.c.requests + upsert.excluded.requests,
            "tokens_in": ledger.c.tokens_in + upsert.excluded.tokens_in,
            "tokens_out": ledger.c.tokens_out + upsert.excluded.tokens_out,
        },
    )


def _call_values(row: CallRow) -> dict[str, Any]:
    return {
        "id": row.id,
        "at": row.at,
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
        "error": row.error[:ERROR_LIMIT],
        "explorer": row.explorer,
    }


async def set_call_task(store: Store, call_id: str, task: str) -> None:
    """Say what a finished call was for, when only its reply could tell
    (route mode names the tools a turn called): after the row, once it is
    in (`settled`). Like the task `submit_call` writes, `task` names things,
    never prompt or reply text."""
    await settled(store, [call_id])
    async with store.write() as session:
        await session.execute(update(Call).where(Call.id == call_id).values(task=task))


async def get_call(store: Store, call_id: str) -> Call | None:
    await settled(store, [call_id])
    async with store.read() as session:
        return await session.get(Call, call_id)


async def calls_of_ask(store: Store, ask_id: str) -> list[Call]:
    """Every call of one gateway ask, oldest first (seats, then the merge)."""
    async with store.read() as session:
        rows = await session.scalars(select(Call).where(Call.ask_id == ask_id).order_by(Call.at))
        return list(rows)
