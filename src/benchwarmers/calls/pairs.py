"""Pair verdicts: which of two answers to one ask was better, a tie, or
both bad; the core of `POST /bench/verdict`'s pair bodies (the HTTP route,
the CLI and the MCP tool alike), and the pairs the rating reads back.

A panel is two or more answers to the same question, so a person comparing
them says more than a verdict on each alone: "A is better than B" holds
whatever the two were worth. A pair names two seats of one ask (both
answered: a seat that failed or was cancelled is not an answer), and is
stored once per unordered pair and kind of judge: the same verdict again
writes nothing, a different one replaces it, as single verdicts do. "Best
of the panel" is a shortcut for the pairs of one seat over every other
seat of its ask that answered.

Like a single verdict, a pair names call ids and needs nothing of the
prompt or the answers; the models behind the calls are copied onto the row
(a call never changes), so the rating reads `pair_outcomes` without
joining the call log.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, Literal, TypeAlias, cast

from sqlalchemy import Executable, Table, or_, select
from sqlalchemy.dialects.postgresql import insert as pg_insert
from sqlalchemy.dialects.sqlite import insert as sqlite_insert

from benchwarmers.calls.log import settled
from benchwarmers.calls.verdicts import ANSWERED, check_verdict_body, collection_name, given_note
from benchwarmers.errors import NotFound, UserError
from benchwarmers.store.db import Store
from benchwarmers.store.schema import Call, PairVerdict, Verdict
from benchwarmers.store.times import utc

Outcome: TypeAlias = Literal["better", "tie", "both_bad"]
# Who judged: a person (the dashboard, the CLI, an agent's tool call); later an LLM judge.
JudgeKind: TypeAlias = Literal["person", "judge"]
# The keys of a pair body, each its own way of judging.
PAIR_KEYS = ("better", "tie", "both_bad", "best")
PAIR_FORMS = (
    '{"better": "<call>", "worse": "<call>"}, {"tie": ["<call>", "<call>"]}, '
    '{"both_bad": ["<call>", "<call>"]} or {"best": "<call>"} (each with an optional "note")'
)
# A body that names a seat's verdict (`call`, `useful`) beside a pair's keys: which was meant?
SEAT_KEYS = ("call", "useful")
BOTH_WAYS = "judge one seat (call and useful) or a pair (better/worse, tie, both_bad, best), not both"
# `worse` is half of the `better` form only: beside `best` (or alone) it would be dropped unread.
WORSE_ALONE = '"worse" goes with "better": {"better": "<call>", "worse": "<call>"}'
# Our JSON names that outcome `bothBad` (the leaderboard's and the asks' pairs): a body may too.
SPELLINGS = {"bothBad": "both_bad"}
# Every key a pair body may hold; another is refused, not ignored (a typo judged nothing).
PAIR_BODY_KEYS = (*PAIR_KEYS, "worse", "note")


@dataclass(frozen=True, slots=True)
class PairJudgement:
    """A pair body, checked: `calls` is (better, worse) for `better`, the two
    for `tie` and `both_bad`, the one best seat for `best`. `note` None (the
    body had none): a pair judged the same again keeps its note."""

    how: Literal["better", "tie", "both_bad", "best"]
    calls: tuple[str, ...]
    note: str | None = ""


@dataclass(frozen=True, slots=True)
class RecordedPair:
    better: str
    worse: str
    outcome: Outcome
    ask: str
    better_alias: str
    worse_alias: str
    note: str
    # False when the same verdict was already there (nothing was written).
    changed: bool

    def as_json(self) -> dict[str, Any]:
        return {
            "better": self.better,
            "worse": self.worse,
            "outcome": self.outcome,
            "ask": self.ask,
            "betterAlias": self.better_alias,
            "worseAlias": self.worse_alias,
            "note": self.note,
            "changed": self.changed,
        }


@dataclass(frozen=True, slots=True)
class RecordedPairs:
    pairs: tuple[RecordedPair, ...]

    def as_json(self) -> dict[str, Any]:
        return {"pairs": [p.as_json() for p in self.pairs]}


@dataclass(frozen=True, slots=True)
class PairOutcome:
    """One pair as the rating reads it: the models, not the calls."""

    better_alias: str
    worse_alias: str
    outcome: Outcome
    shape: str
    kind: str
    at: datetime


def verdict_body(
    *,
    call: str = "",
    useful: bool | None = None,
    note: str | None = None,
    better: str = "",
    worse: str = "",
    tie: Sequence[str] | None = None,
    both_bad: Sequence[str] | None = None,
    best: str = "",
) -> dict[str, Any]:
    """The `POST /bench/verdict` body a front end's options say (the CLI's
    flags, the MCP tool's arguments), checked as the server checks it, so a
    mistake is the same one line whichever way it came. No `note` (None)
    sends no "note": the same verdict again keeps the note it has."""
    body: dict[str, Any] = {}
    if better or worse:
        body |= {"better": better, "worse": worse}
    if tie is not None:
        body["tie"] = list(tie)
    if both_bad is not None:
        body["both_bad"] = list(both_bad)
    if best:
        body["best"] = best
    if note is not None:
        body["note"] = note
    if not is_pair_body(body):  # one seat's verdict
        body |= {"call": call, "useful": useful}
        check_verdict_body(body)
        return body
    if call or useful is not None:
        raise UserError(BOTH_WAYS)
    check_pair_body(body)
    return body


def checked_verdict_body(body: object) -> dict[str, Any]:
    """A verdict body handed on as it came (the MCP tool's arguments),
    checked as `POST /bench/verdict` checks it, one seat's or a pair's: a
    key no form takes, a wrong type, a `worse` alone are refused in the
    server's words before anything is stored, never dropped on the way; the
    body returned reads `bothBad` as `both_bad`."""
    if is_pair_body(body):
        check_pair_body(body)
        return _spelled(cast(Mapping[str, Any], body))
    check_verdict_body(body)
    return dict(cast(Mapping[str, Any], body))


def is_pair_body(body: object) -> bool:
    """Whether a verdict body judges a pair (else it is `{"call", "useful"}`)."""
    return isinstance(body, Mapping) and any(key in body for key in (*PAIR_KEYS, "worse", *SPELLINGS))


def _spelled(body: Mapping[str, Any]) -> dict[str, Any]:
    """`body` with `SPELLINGS` read as the keys they spell; a key given both ways is refused."""
    spelled: dict[str, Any] = {}
    for key, value in body.items():
        name = SPELLINGS.get(key, key)
        if name in spelled:
            raise UserError(f"judge one way at a time: {name!r} given twice (once as {key!r}): {PAIR_FORMS}")
        spelled[name] = value
    return spelled


def check_pair_body(body: object) -> PairJudgement:
    """One of the pair bodies -> a `PairJudgement`, or a UserError that says
    which form was expected. The same call twice is refused here."""
    if not isinstance(body, Mapping):
        raise UserError(f"the body must be a JSON object: {PAIR_FORMS}")
    body = _spelled(body)
    unknown = [key for key in body if key not in (*PAIR_BODY_KEYS, *SEAT_KEYS)]
    if unknown:  # refused, not ignored: nothing is stored
        raise UserError(f"a pair body takes no {unknown[0]!r}: {PAIR_FORMS}")
    given = [key for key in PAIR_KEYS if key in body]
    if "worse" in body and "better" not in given:  # refused, not half-read: nothing is stored
        raise UserError(WORSE_ALONE if not given else f"{WORSE_ALONE}, not with {given[0]!r}")
    if len(given) != 1:
        raise UserError(f"judge one way at a time, not {' and '.join(repr(k) for k in given)}: {PAIR_FORMS}")
    if any(key in body for key in SEAT_KEYS):  # refused, not half-read: nothing is stored
        raise UserError(BOTH_WAYS)
    how = cast(Literal["better", "tie", "both_bad", "best"], given[0])
    note = given_note(body)
    if how == "best":
        return PairJudgement("best", (_call_id(body.get("best"), '"best"'),), note)
    if how == "better":
        calls = (_call_id(body.get("better"), '"better"'), _call_id(body.get("worse"), '"worse"'))
    else:
        listed = body.get(how)
        if not (isinstance(listed, list) and len(listed) == 2):
            raise UserError(f'"{how}" must be a list of two call ids: {{"{how}": ["<call>", "<call>"]}}')
        calls = (_call_id(listed[0], f'"{how}"'), _call_id(listed[1], f'"{how}"'))
    if calls[0] == calls[1]:
        raise UserError(f"a pair is two different calls; {calls[0]!r} was named twice")
    return PairJudgement(how, calls, note)


def _call_id(value: object, field: str) -> str:
    if not isinstance(value, str) or not value.strip():
        raise UserError(f"{field} must be a call id (a string, as in bench.seats[].call)")
    return value.strip()


def pair_key(call_a: str, call_b: str) -> str:
    return f"{min(call_a, call_b)}|{max(call_a, call_b)}"


async def record_pairs(
    store: Store,
    judged: PairJudgement,
    *,
    collections: frozenset[str] | None = None,
    kind: JudgeKind = "person",
) -> RecordedPairs:
    """Store a pair judgement, or refuse it with nothing stored: an unknown
    call, or one of a collection outside `collections` (what a key limited
    to those may judge), is NotFound alike; calls of two asks, or one that
    is not an answered seat, a UserError."""
    await settled(store, list(judged.calls))  # calls this process is still writing are found
    async with store.write() as session:
        named = {c.id: c for c in await session.scalars(select(Call).where(Call.id.in_(judged.calls)))}
        for call_id in judged.calls:
            found = named.get(call_id)
            if found is None or (collections is not None and found.collection not in collections):
                raise NotFound(f"no call {call_id!r} in the call log")
            _check_judgeable(found)
        if judged.how == "best":
            best = named[judged.calls[0]]
            others = await session.scalars(
                select(Call)
                .where(
                    Call.ask_id == best.ask_id,
                    Call.kind == "seat",
                    Call.status.in_(ANSWERED),
                    Call.id != best.id,
                )
                .order_by(Call.seat)
            )
            sides = [(best, other) for other in others]
            if not sides:
                raise UserError(
                    f"{best.id!r} is the only seat of its ask that answered: nothing to be best of"
                )
            outcome: Outcome = "better"
        else:
            first, second = named[judged.calls[0]], named[judged.calls[1]]
            if first.ask_id != second.ask_id:
                raise UserError(
                    f"a pair compares two answers to one ask; "
                    f"{first.id!r} and {second.id!r} answered different asks"
                )
            outcome = "better" if judged.how == "better" else judged.how
            if outcome != "better" and second.id < first.id:  # a tie or both bad: in sorted order
                first, second = second, first
            sides = [(first, second)]
        keys = [pair_key(a.id, b.id) for a, b in sides]
        stored = {
            p.pair_key: p
            for p in await session.scalars(
                select(PairVerdict).where(PairVerdict.pair_key.in_(keys), PairVerdict.kind == kind)
            )
        }
        now = datetime.now(UTC)
        recorded: list[RecordedPair] = []
        for (better, worse), key in zip(sides, keys, strict=True):
            before = stored.get(key)
            same = (
                before is not None
                and (before.better_call, before.worse_call, before.outcome) == (better.id, worse.id, outcome)
                and judged.note in (None, before.note)
            )
            note = before.note if same and before is not None else judged.note or ""
            if not same:
                await session.execute(
                    _pair_upsert(store.is_sqlite),
                    {
                        "ask_id": better.ask_id,
                        "pair_key": key,
                        "better_call": better.id,
                        "worse_call": worse.id,
                        "better_alias": better.alias,
                        "worse_alias": worse.alias,
                        "outcome": outcome,
                        "kind": kind,
                        "collection": better.collection,
                        "shape": better.shape,
                        "note": note,
                        "at": now,
                    },
                )
            recorded.append(
                RecordedPair(
                    better.id,
                    worse.id,
                    outcome,
                    better.ask_id,
                    better.alias,
                    worse.alias,
                    note,
                    changed=not same,
                )
            )
    return RecordedPairs(tuple(recorded))


def _check_judgeable(call: Call) -> None:
    """A pair compares answers: seats of a panel that answered (not a merge,
    a route turn, a failed or cancelled seat)."""
    if call.kind != "seat" or not call.ask_id:
        raise UserError(
            f"{call.id!r} is a {call.kind} call, not a panel seat: only seats are compared in pairs"
        )
    if call.status not in ANSWERED:
        raise UserError(f"{call.id!r} did not answer ({call.status}): there is nothing to compare")


@functools.cache
def _pair_upsert(sqlite: bool) -> Executable:
    """Write a pair, or replace the one already there (a concurrent write of
    the same pair, from any replica, lands on the same row)."""
    table = cast(Table, PairVerdict.__table__)
    upsert = (sqlite_insert if sqlite else pg_insert)(table)
    replaced = ("better_call", "worse_call", "better_alias", "worse_alias", "outcome", "note", "at")
    return upsert.on_conflict_do_update(
        index_elements=["pair_key", "kind"], set_={name: upsert.excluded[name] for name in replaced}
    )


async def pair_outcomes(store: Store, collection: str) -> list[PairOutcome]:
    """Every pair judged on a collection (`bench/x` or `x`), oldest first."""
    query = (
        select(
            PairVerdict.better_alias,
            PairVerdict.worse_alias,
            PairVerdict.outcome,
            PairVerdict.shape,
            PairVerdict.kind,
            PairVerdict.at,
        )
        .where(PairVerdict.collection == collection_name(collection))
        .order_by(PairVerdict.at, PairVerdict.id)
    )
    async with store.read() as session:
        rows = (await session.execute(query)).all()
    return [PairOutcome(b, w, cast(Outcome, o), s, k, utc(at)) for b, w, o, s, k, at in rows]


async def pairs_of_asks(store: Store, ask_ids: Sequence[str]) -> dict[str, list[dict[str, Any]]]:
    """The person's pairs on these asks, per ask, as a recorded pair's JSON
    (what the dashboard's recent asks show beside their seats)."""
    if not ask_ids:
        return {}
    query = (
        select(PairVerdict)
        .where(PairVerdict.ask_id.in_(list(ask_ids)), PairVerdict.kind == "person")
        .order_by(PairVerdict.at, PairVerdict.id)
    )
    out: dict[str, list[dict[str, Any]]] = {}
    async with store.read() as session:
        for pair in await session.scalars(query):
            out.setdefault(pair.ask_id, []).append(
                {
                    "better": pair.better_call,
                    "worse": pair.worse_call,
                    "outcome": pair.outcome,
                    "betterAlias": pair.better_alias,
                    "worseAlias": pair.worse_alias,
                    "note": pair.note,
                    "at": utc(pair.at).isoformat(timespec="seconds"),
                }
            )
    return out


async def model_notes(store: Store, alias: str, limit: int = 50) -> list[dict[str, Any]]:
    """The notes people wrote on one model's answers, newest first: on its
    answers alone (`verdict`, `answer` the call's kind: a seat, a merge...) and on
    the pairs it was in (`pair`, with the other model and whether this one
    won). What the model's page shows."""
    singles = (
        select(Verdict)
        .where(Verdict.alias == alias, Verdict.note != "")
        .order_by(Verdict.at.desc())
        .limit(limit)
    )
    paired = (
        select(PairVerdict)
        .where(
            or_(PairVerdict.better_alias == alias, PairVerdict.worse_alias == alias), PairVerdict.note != ""
        )
        .order_by(PairVerdict.at.desc())
        .limit(limit)
    )
    notes: list[dict[str, Any]] = []
    async with store.read() as session:
        for verdict in await session.scalars(singles):
            notes.append(
                {
                    "kind": "verdict",
                    # The judged call's kind (`seat`, `merge`, `route`...): a merger often sits
                    # too, and its page tells a note on its merge from one on its seat.
                    "answer": verdict.kind,
                    "call": verdict.call_id,
                    "ask": verdict.ask_id,
                    "collection": verdict.collection,
                    "shape": verdict.shape,
                    "useful": verdict.useful,
                    "note": verdict.note,
                    "at": utc(verdict.at).isoformat(timespec="seconds"),
                }
            )
        for pair in await session.scalars(paired):
            won = pair.better_alias == alias
            notes.append(
                {
                    "kind": "pair",
                    "call": pair.better_call if won else pair.worse_call,
                    "ask": pair.ask_id,
                    "collection": pair.collection,
                    "shape": pair.shape,
                    "outcome": pair.outcome,
                    # "better" / "worse" for a decided pair; a tie or both bad is the same for both.
                    "side": ("better" if won else "worse") if pair.outcome == "better" else pair.outcome,
                    "other": pair.worse_alias if won else pair.better_alias,
                    "note": pair.note,
                    "at": utc(pair.at).isoformat(timespec="seconds"),
                }
            )
    notes.sort(key=lambda n: n["at"], reverse=True)
    return notes[:limit]
