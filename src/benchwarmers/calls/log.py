"""The call log: one row per outbound model call, and the monthly usage
ledger beside it, written together in one transaction the moment a call
ends, so a crash after a seat finished cannot lose that seat, and the
ledger can never count a call the log does not have.

What a row holds is what decides the bench (who answered, how fast, with
how many tokens, with what error), never what was asked or answered: no
prompt text of a gateway request, no image, no key.
"""

from __future__ import annotations

import asyncio
import secrets
import weakref
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from typing import Any, cast

from sqlalchemy import Table, select, update
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


async def record_call(store: Store, row: CallRow) -> None:
    """Write the call and add it to this month's ledger, in one transaction;
    return once that is committed.

    Calls that end while another write of the log is committing go into the
    next transaction together (a group commit): seats of a panel that finish
    at once share one commit instead of queueing for one each, and a call
    still returns only when its own row is in."""
    stamped = row if row.at is not None else replace(row, at=datetime.now(UTC))
    loop = asyncio.get_running_loop()
    writer = _writers.get(store)
    if writer is None or writer.loop is not loop:
        writer = _writers[store] = _LogWriter(store, loop)
    await writer.record(stamped)


class _LogWriter:
    """The call log's group commit for one store (on one event loop)."""

    def __init__(self, store: Store, loop: asyncio.AbstractEventLoop) -> None:
        self.store = store
        self.loop = loop
        self._waiting: list[tuple[CallRow, asyncio.Future[None]]] = []
        self._draining: asyncio.Task[None] | None = None

    async def record(self, row: CallRow) -> None:
        done = self.loop.create_future()
        self._waiting.append((row, done))
        if self._draining is None:
            self._draining = self.loop.create_task(self._drain())
        await done

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
            await _write(self.store, [row for row, _done in batch])
        except Exception as exc:
            if len(batch) == 1:
                _settle(batch[0][1], exc)
                return
            for row, done in batch:  # one row the store refuses must not lose the others
                try:
                    await _write(self.store, [row])
                except Exception as one:
                    _settle(done, one)
                else:
                    _settle(done, None)
        else:
            for _row, done in batch:
                _settle(done, None)


_writers: weakref.WeakKeyDictionary[Store, _LogWriter] = weakref.WeakKeyDictionary()


def _settle(done: asyncio.Future[None], error: BaseException | None) -> None:
    if done.done():  # its caller stopped waiting; the row is written all the same
        return
    if error is None:
        done.set_result(None)
    else:
        done.set_exception(error)


async def _write(store: Store, rows: list[CallRow]) -> None:
    """The rows and their ledger lines: two statements, one transaction."""
    calls = cast(Table, Call.__table__)  # Core, not the ORM's unit of work: less work per row
    ledger = cast(Table, UsageMonth.__table__)
    sums: dict[tuple[str, str, str], list[int]] = {}
    for row in rows:
        assert row.at is not None
        line = sums.setdefault((row.at.strftime("%Y-%m"), row.endpoint, row.served), [0, 0, 0])
        line[0] += 1 if row.sent else 0
        line[1] += row.tokens_in
        line[2] += row.tokens_out
    insert = sqlite_insert if store.is_sqlite else pg_insert
    upsert = insert(ledger)
    upsert = upsert.on_conflict_do_update(
        index_elements=["month", "endpoint", "served"],
        set_={
            "requests": ledger.c.requests + upsert.excluded.requests,
            "tokens_in": ledger.c.tokens_in + upsert.excluded.tokens_in,
            "tokens_out": ledger.c.tokens_out + upsert.excluded.tokens_out,
        },
    )
    async with store.write() as session:
        await session.execute(calls.insert(), [_call_values(row) for row in rows])
        await session.execute(
            upsert,
            [
                {
                    "month": month,
                    "endpoint": endpoint,
                    "served": served,
                    "requests": n,
                    "tokens_in": i,
                    "tokens_out": o,
                }
                for (month, endpoint, served), (n, i, o) in sums.items()
            ],
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
    (route mode names the tools a turn called). The row must be in: call
    this after `record_call` returned for it. Like the task `record_call`
    writes, `task` names things, never prompt or reply text."""
    async with store.write() as session:
        await session.execute(update(Call).where(Call.id == call_id).values(task=task))


async def get_call(store: Store, call_id: str) -> Call | None:
    async with store.read() as session:
        return await session.get(Call, call_id)


async def calls_of_ask(store: Store, ask_id: str) -> list[Call]:
    """Every call of one gateway ask, oldest first (seats, then the merge)."""
    async with store.read() as session:
        rows = await session.scalars(select(Call).where(Call.ask_id == ask_id).order_by(Call.at))
        return list(rows)
