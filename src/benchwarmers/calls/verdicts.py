"""Verdicts on calls, and what they add up to: the core of `POST
/bench/verdict`, `GET /bench/record` and `POST /bench/pending`, used the
same way by the HTTP routes, the CLI and the MCP tools.

A verdict belongs to a call id, so it needs nothing of the prompt or the
answer. A call this process handed to the log's writer and has not
committed yet is waited for (`log.settled`), so a verdict sent on a seat
mid-stream finds it; the record it feeds is counts only. Sending the same verdict twice
writes nothing (agents retry, hooks fire twice); a different one replaces
the first (people change their minds). Each change moves the judged
model's count in `verdict_tallies` in the same transaction: ranking reads
those counts, not every verdict.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, cast

from sqlalchemy import Executable, Table, select, text
from sqlalchemy.dialects.postgresql import insert as pg_insert
from sqlalchemy.dialects.sqlite import insert as sqlite_insert
from sqlalchemy.ext.asyncio import AsyncSession

from benchwarmers.calls.log import settled
from benchwarmers.errors import NotFound, UserError
from benchwarmers.store.db import Store
from benchwarmers.store.schema import Call, PairVerdict, Verdict, VerdictTally
from benchwarmers.store.times import utc

COLLECTION_PREFIX = "bench/"
NOTE_LIMIT = 2000
# Calls whose answer a person reads as an answer: panel seats and merges.
JUDGEABLE_KINDS = ("seat", "merge")
# Verdicts on these calls say how useful a model's own answer was: what the
# rating reads, and a model's line of the record counts (a merge is counted apart).
ANSWER_KINDS = ("seat", "route", "shadow")
ANSWERED = ("ok", "empty")
# Calls stopped before they finished (by the person who asked, or cut at a
# quorum or deadline): their answer was never given whole, so it owes no
# verdict and takes none (a "not useful" would count against the model for
# the stop).
STOPPED = ("cancelled",)


@dataclass(frozen=True, slots=True)
class Recorded:
    call: str
    alias: str
    kind: str
    useful: bool
    note: str
    at: datetime
    # False when the same verdict was already there (nothing was written).
    changed: bool

    def as_json(self) -> dict[str, Any]:
        return {
            "call": self.call,
            "alias": self.alias,
            "kind": self.kind,
            "useful": self.useful,
            "note": self.note,
            "at": self.at.isoformat(timespec="seconds"),
            "changed": self.changed,
        }


def check_verdict_body(body: object) -> tuple[str, bool, str | None]:
    """`{"call", "useful", "note"?}` -> (call, useful, note), or a UserError
    that names the field. No "note" key is None: the note already stored stays
    (`record_verdict`)."""
    if not isinstance(body, Mapping):
        raise UserError(
            'the body must be a JSON object: {"call": "<call id>", "useful": true|false, "note": "..."}'
        )
    unknown = [key for key in body if key not in ("call", "useful", "note")]
    if unknown:  # refused, not ignored: a misspelt key judged nothing, or not what was meant
        raise UserError(
            f'a verdict takes no {unknown[0]!r}: {{"call": "<call id>", "useful": true|false, "note": "..."}}'
            ", or a pair (better and worse, tie, both_bad or best)"
        )
    call, useful = body.get("call"), body.get("useful")
    if not isinstance(call, str) or not call.strip():
        raise UserError('"call" must be a call id (a string, as in bench.seats[].call)')
    if not isinstance(useful, bool):
        raise UserError('"useful" must be true or false')
    return call.strip(), useful, given_note(body)


def given_note(body: Mapping[str, Any]) -> str | None:
    """A body's checked `"note"`, or None when it has no such key: the same
    verdict sent again without its note (an agent's retry, a hook firing
    twice, the CLI said again) keeps the note, where "" wrote over it."""
    return check_note(body["note"]) if "note" in body else None


def check_note(note: object) -> str:
    """A verdict's `"note"` (of a seat or a pair): text, at most `NOTE_LIMIT` characters."""
    if note is None:
        return ""
    if not isinstance(note, str):
        raise UserError('"note" must be a string')
    if len(note) > NOTE_LIMIT:
        raise UserError(f'"note" is too long ({len(note)} characters; at most {NOTE_LIMIT})')
    return note.strip()


async def record_verdict(store: Store, call_id: str, useful: bool, note: str | None = "") -> Recorded:
    """Store a verdict on one call, or leave the same one be. `note` None:
    the same verdict keeps its note; a changed one carries none (the note
    said why of the verdict it replaces)."""
    await settled(store, [call_id])  # a call this process is still writing is found
    async with store.write() as session:
        # Verdicts on one call at once, from any worker or replica, each read the one before,
        # never both "none yet": on PostgreSQL the call's row is locked; on SQLite the file's
        # write lock is taken before the reads (another worker's writer is another process).
        if store.is_sqlite:
            await session.execute(text("BEGIN IMMEDIATE"))
        call = await session.get(Call, call_id, with_for_update={"key_share": True})
        if call is None:
            raise NotFound(f"no call {call_id!r} in the call log")
        if call.status in STOPPED:
            raise UserError(
                f"{call_id!r} was stopped before it finished ({call.status}): "
                "there is no whole answer to judge, and it owes no verdict"
            )
        verdict = await session.get(Verdict, call_id)
        if verdict is not None and verdict.useful == useful and note in (None, verdict.note):
            return Recorded(
                call_id, call.alias, call.kind, useful, verdict.note, utc(verdict.at), changed=False
            )
        note = note or ""
        now = datetime.now(UTC)
        if verdict is None:
            session.add(
                Verdict(
                    call_id=call_id,
                    useful=useful,
                    note=note,
                    at=now,
                    alias=call.alias,
                    kind=call.kind,
                    collection=call.collection,
                    shape=call.shape,
                    ask_id=call.ask_id,
                )
            )
            await _count(session, store.is_sqlite, call, {useful: 1})
        else:
            if verdict.useful != useful:
                await _count(session, store.is_sqlite, call, {useful: 1, verdict.useful: -1})
            verdict.useful, verdict.note, verdict.at = useful, note, now
        return Recorded(call_id, call.alias, call.kind, useful, note, now, changed=True)


async def _count(session: AsyncSession, sqlite: bool, call: Call, moves: dict[bool, int]) -> None:
    """Move the counts of `call`'s model, kind, collection and shape: one
    more verdict (`{useful: 1}`), or one replaced (`{new: 1, old: -1}`: the
    verdict replaced no longer counts). Not useful's row first, always:
    two verdicts changed the other way round at once (PostgreSQL) took the
    two rows in opposite orders, and one was killed as a deadlock."""
    for useful in sorted(moves):
        await session.execute(
            _tally_upsert(sqlite),
            {
                "alias": call.alias,
                "kind": call.kind,
                "collection": call.collection,
                "shape": call.shape,
                "useful": useful,
                "count": moves[useful],
            },
        )


@functools.cache
def _tally_upsert(sqlite: bool) -> Executable:
    """Add to a group's count, or start it (concurrent verdicts on one
    group, from any replica, each add theirs)."""
    tallies = cast(Table, VerdictTally.__table__)
    upsert = (sqlite_insert if sqlite else pg_insert)(tallies)
    return upsert.on_conflict_do_update(
        index_elements=["alias", "kind", "collection", "shape", "useful"],
        set_={"count": tallies.c.count + upsert.excluded.count},
    )


def collection_name(value: str) -> str:
    """`bench/trio` (the form clients use) or `trio` -> `trio`."""
    return value.removeprefix(COLLECTION_PREFIX)


async def record(store: Store, collection: str, task: str = "") -> dict[str, Any]:
    """Judged calls of a collection per alias (and, apart, its merges):
    counts and the last verdict's date. `task` keeps verdicts whose note
    holds it. Counts only: never a prompt, an answer or a note. A route
    turn judged counts as a seat does, as in the rating and on the
    leaderboard (a route-mode collection's record read empty)."""
    name = collection_name(collection)
    # The verdict carries its call's facts, so the call log is not walked.
    query = select(Verdict.kind, Verdict.alias, Verdict.useful, Verdict.at).where(
        Verdict.collection == name, Verdict.kind.in_((*ANSWER_KINDS, "merge"))
    )
    if task:
        query = query.where(Verdict.note.contains(task, autoescape=True))
    aliases: dict[str, dict[str, Any]] = {}
    merged = _tally()
    async with store.read() as session:
        for kind, alias, useful, at in (await session.execute(query)).all():
            tally = merged if kind == "merge" else aliases.setdefault(alias, _tally())
            tally["useful" if useful else "notUseful"] += 1
            tally["judged"] += 1
            tally["lastAt"] = max(tally["lastAt"], utc(at).isoformat(timespec="seconds"))
    out: dict[str, Any] = {"collection": COLLECTION_PREFIX + name, "task": task, "aliases": aliases}
    if merged["judged"]:
        out["merged"] = merged
    return out


async def judged_any(store: Store, collection: str) -> bool:
    """Whether any verdict names `collection`: a removed collection's
    verdicts stay (`remove_collection`), and so does its record."""
    query = select(Verdict.call_id).where(Verdict.collection == collection_name(collection)).limit(1)
    async with store.read() as session:
        return (await session.scalar(query)) is not None


async def pending(
    store: Store, calls: Sequence[str], *, collections: frozenset[str] | None = None
) -> list[str]:
    """Of these ids, those that are seats (or merges) that answered (ok or
    empty) and have no verdict yet, in the order given: neither a verdict of
    their own nor a person's pair naming them (a pair is a verdict of its own
    kind; an agent that said "best of the panel" has judged every seat, and
    its Stop hook should not ask again). A judge's pairs leave a seat
    pending: they are the judge's, not the user's. Unknown ids are not
    seats; with `collections`, neither are seats of other collections (what
    a key limited to those is told)."""
    wanted = list(dict.fromkeys(calls))
    if not wanted:
        return []
    query = (
        select(Call.id)
        .outerjoin(Verdict, Verdict.call_id == Call.id)
        .where(
            Call.id.in_(wanted),
            Call.kind.in_(JUDGEABLE_KINDS),
            Call.status.in_(ANSWERED),
            Verdict.call_id.is_(None),
        )
    )
    if collections is not None:
        query = query.where(Call.collection.in_(collections))
    await settled(store, wanted)
    async with store.read() as session:
        open_ids = set(await session.scalars(query))
        if open_ids:  # read down the pairs' ask index: a seat's pairs are on its own ask
            asks = select(Call.ask_id).where(Call.id.in_(open_ids))
            paired = select(PairVerdict.better_call, PairVerdict.worse_call).where(
                PairVerdict.ask_id.in_(asks), PairVerdict.kind == "person"
            )
            for better, worse in await session.execute(paired):
                open_ids.difference_update((better, worse))
    return [c for c in wanted if c in open_ids]


def check_pending_body(body: object) -> list[str]:
    """`{"calls": [...]}` -> the call ids; anything else a UserError, a key
    beside `calls` too (refused, as a verdict body's is: `{"calls": [...],
    "transcript_path": ...}` would have checked the ids and read no file)."""
    unknown = [key for key in body if key != "calls"] if isinstance(body, Mapping) else []
    if unknown:
        raise UserError(f'the body takes no {unknown[0]!r}: {{"calls": ["<call id>", ...]}}')
    calls = body.get("calls") if isinstance(body, Mapping) else None
    if not (isinstance(calls, list) and all(isinstance(c, str) for c in calls)):
        raise UserError('the body must be {"calls": ["<call id>", ...]}: "calls" a list of call ids')
    return calls


def _tally() -> dict[str, Any]:
    return {"useful": 0, "notUseful": 0, "judged": 0, "lastAt": ""}
