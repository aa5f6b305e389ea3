"""The text a collection chose to keep (`keep_text`): an ask's question and
its answers, until they expire.

The call log keeps no prompt or answer text, so a panel cannot be read or
judged once its reply is gone. A collection whose owner turns `keep_text`
on keeps, for `keep_days`, each ask's question (the messages' text, the
system prompt; images are never kept, only how many there were) and each
seat's and the merge's answer: one row per ask, one per call. The panel
writes them after its reply is out (`PanelEngine`), so keeping costs the
ask no time; with the setting off nothing is written.

Expired text is never read back, and is deleted by `sweep`: when a runtime
opens and every hour while it is open (`Runtime`). Turning the setting off
or removing the collection deletes its text at once (`store/collections.py`);
changing `keep_days` moves the expiry of what is kept already (`redate`), so
text is always kept for the days the collection says now, from its ask.

Deleted means gone from the data folder, not only from the table: SQLite
overwrites a deleted row's bytes (`secure_delete`, `store/db.py`), and
after each deletion the WAL, which still holds the pages as they were
written, is copied back and cut to nothing (`erase`). One that could not
be cut then (a long read in the way) is owed: a marker file beside the
database says so (`<file>-uncut`), so the next sweep of any process on
that file cuts it, the server's hourly one after a CLI command that gave
up, not only the next sweep of the process that deleted. On PostgreSQL
the rows' space is the database's own vacuum's.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any, cast

from sqlalchemy import Table, bindparam, delete, func, insert, select, update
from sqlalchemy.ext.asyncio import AsyncSession

from benchwarmers.store import wal
from benchwarmers.store.db import Store
from benchwarmers.store.schema import Collection, KeptText
from benchwarmers.store.times import utc
from benchwarmers.types import Request

SWEEP_EVERY_SECONDS = 3600.0
# Beside the SQLite file: a deletion's WAL cut is owed (a file, so another process sees it).
OWED_SUFFIX = "-uncut"


@dataclass(frozen=True, slots=True)
class KeptAsk:
    """What is kept of one ask: its question, and each call's answer by call
    id; read cut (`kept_asks`' `head`), each answer's whole length by call id."""

    question: dict[str, Any]
    answers: dict[str, str] = field(default_factory=dict)
    lengths: dict[str, int] = field(default_factory=dict)


def question_of(request: Request) -> dict[str, Any]:
    """The question as kept: the system prompt and each message's text
    (images counted, never kept)."""
    images = sum(len(m.images) for m in request.messages)
    return {
        "system": request.system,
        "messages": [{"role": m.role, "content": m.text} for m in request.messages],
        "images": images,
    }


async def keep(
    store: Store,
    *,
    collection: str,
    ask_id: str,
    request: Request,
    answers: Sequence[tuple[str, str]],
) -> bool:
    """Keep an ask's question and its answers (call id, text) for the
    collection's `keep_days`; whether they were kept.

    Read from the collection as it is when the panel is done, not as it
    was when it was asked: an ask still answering when its owner turned
    `keep_text` off (or removed the collection, or shortened the days)
    keeps nothing (or keeps for the days set now), where it left its text
    behind for the old days. The collection's row is locked for it, so on
    PostgreSQL the change waits for this write or this write for it
    (SQLite has one writer)."""
    setting = (
        select(Collection.keep_text, Collection.keep_days)
        .where(Collection.name == collection)
        .with_for_update()
    )
    async with store.write() as session:
        found = (await session.execute(setting)).first()
        if found is None or not found.keep_text:
            return False
        await session.execute(insert(KeptText), _rows(collection, found.keep_days, ask_id, request, answers))
    return True


def _rows(
    collection: str, keep_days: int, ask_id: str, request: Request, answers: Sequence[tuple[str, str]]
) -> list[dict[str, Any]]:
    """The rows of one kept ask: the question's, then one per answer (by call id)."""
    expires = datetime.now(UTC) + timedelta(days=keep_days)
    rows: list[dict[str, Any]] = [
        {
            "id": ask_id,
            "ask_id": ask_id,
            "collection": collection,
            "question": question_of(request),
            "answer": "",
            "expires_at": expires,
        }
    ]
    rows += [
        {
            "id": call,
            "ask_id": ask_id,
            "collection": collection,
            "question": None,
            "answer": text,
            "expires_at": expires,
        }
        for call, text in answers
        if call
    ]
    return rows


async def kept_ids(store: Store, ask_ids: Sequence[str]) -> list[str]:
    """The ids (ask and call) of what is kept, and not expired, of these
    asks, sorted: what `kept_asks` would read, without reading the text."""
    if not ask_ids:
        return []
    query = select(KeptText.id).where(
        KeptText.ask_id.in_(list(ask_ids)), KeptText.expires_at > datetime.now(UTC)
    )
    async with store.read() as session:
        return sorted(await session.scalars(query))


async def kept_asks(store: Store, ask_ids: Sequence[str], head: int = 0) -> dict[str, KeptAsk]:
    """What is kept, and not expired, of these asks, by ask id. With `head`,
    each answer and each of the question's messages is cut to its first
    `head` characters, its whole length said beside it (an answer's in
    `lengths`, a message's as `content_chars`, the system prompt's `system_chars`); the answers are cut by the
    database, so megabytes of them are never read into the process."""
    if not ask_ids:
        return {}
    answer = func.substr(KeptText.answer, 1, head) if head else KeptText.answer
    query = select(
        KeptText.id, KeptText.ask_id, KeptText.question, answer.label("answer"), func.length(KeptText.answer)
    ).where(KeptText.ask_id.in_(list(ask_ids)), KeptText.expires_at > datetime.now(UTC))
    found: dict[str, KeptAsk] = {}
    answers: dict[str, dict[str, str]] = {}
    lengths: dict[str, dict[str, int]] = {}
    async with store.read() as session:
        for kept_id, ask_id, question, text, length in await session.execute(query):
            if kept_id == ask_id:
                asked = _cut_question(question or {}, head) if head else question or {}
                found[ask_id] = KeptAsk(asked, answers.setdefault(ask_id, {}), lengths.setdefault(ask_id, {}))
            else:
                answers.setdefault(ask_id, {})[kept_id] = text
                lengths.setdefault(ask_id, {})[kept_id] = length or 0
    return found


def _cut_question(question: dict[str, Any], head: int) -> dict[str, Any]:
    """A kept question with the system prompt's and each message's text cut
    to `head` characters, each one's whole length beside it."""
    messages = [
        {**m, "content": m.get("content", "")[:head], "content_chars": len(m.get("content", ""))}
        for m in question.get("messages", [])
    ]
    system = question.get("system", "")
    return {**question, "system": system[:head], "system_chars": len(system), "messages": messages}


async def sweep(store: Store, now: datetime | None = None) -> int:
    """Delete the text whose time is up; how many rows went."""
    async with store.write() as session:
        result = await session.execute(
            delete(KeptText).where(KeptText.expires_at <= (now or datetime.now(UTC)))
        )
    gone = int(getattr(result, "rowcount", 0) or 0)
    if gone or (store.sqlite_file is not None and os.path.exists(store.sqlite_file + OWED_SUFFIX)):
        await erase(store)
    return gone


async def erase(store: Store) -> None:
    """After kept text was deleted (and committed): on an SQLite file, the
    WAL copied back and cut, so no old page holding it is left on disk. In
    a thread (it may wait a moment for a read to end); not done, a marker
    file says a cut is owed and the next sweep, of this process or another
    on the same file, tries again."""
    if store.sqlite_file is not None:
        await asyncio.to_thread(_cut, store.sqlite_file)


def _cut(file: str) -> None:
    """Cut the WAL, the marker taken off first and put back if the cut
    failed. Another process's marker put after this unlink stays; one put
    before it followed that process's deletion (a mark follows its commit),
    which this cut, begun later, covers: no owed cut is lost."""
    owed = Path(file + OWED_SUFFIX)
    with contextlib.suppress(OSError):  # the text is deleted either way: the cut is the extra
        owed.unlink(missing_ok=True)
    if not wal.truncate(file):
        with contextlib.suppress(OSError):
            owed.touch()


async def redate(session: AsyncSession, collection: str, days_before: int, days_now: int) -> None:
    """A collection's retention changed from `days_before` to `days_now`:
    each row it kept expires that much sooner or later (its ask's time plus
    the days now), and what that puts in the past goes at once."""
    shift = timedelta(days=days_now - days_before)
    if not shift:
        return
    now = datetime.now(UTC)
    rows = (
        await session.execute(
            select(KeptText.id, KeptText.expires_at).where(KeptText.collection == collection)
        )
    ).all()
    moved = [(row_id, utc(expires) + shift) for row_id, expires in rows]
    due = [row_id for row_id, expires in moved if expires <= now]
    later = [{"row": row_id, "expires": expires} for row_id, expires in moved if expires > now]
    if due:
        await session.execute(delete(KeptText).where(KeptText.id.in_(due)))
    if later:
        table = cast(Table, KeptText.__table__)  # Core: one statement, executed for each row
        statement = (
            update(table).where(table.c.id == bindparam("row")).values(expires_at=bindparam("expires"))
        )
        await session.execute(statement, later)
