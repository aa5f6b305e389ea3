"""Verdicts keep ranking's counts beside them (`verdict_tallies`): every
way a verdict is written, replaced or sent again leaves the counts equal
to counting the verdicts, and verdicts written at once, from one process
or two replicas, are each counted."""

from __future__ import annotations

import asyncio
import random
from datetime import UTC, datetime

import pytest
from sqlalchemy import func, insert, select, update

from benchwarmers.calls.call_ids import new_call_id
from benchwarmers.calls.verdicts import check_pending_body, check_verdict_body, judged_any, record_verdict
from benchwarmers.errors import UserError
from benchwarmers.runtime import Runtime
from benchwarmers.store.db import Store
from benchwarmers.store.migrate import migrate
from benchwarmers.store.schema import Call, Verdict, VerdictTally

Group = tuple[str, str, str, str, bool]


async def add_calls(store: Store, count: int, aliases: tuple[str, ...], shapes: tuple[str, ...]) -> list[str]:
    ids = [new_call_id() for _ in range(count)]
    rows = [
        {
            "id": call_id,
            "at": datetime.now(UTC),
            "kind": ("seat", "route")[index % 2],
            "alias": aliases[index % len(aliases)],
            "collection": "trio",
            "shape": shapes[index % len(shapes)],
            "status": "ok",
        }
        for index, call_id in enumerate(ids)
    ]
    async with store.write() as session:
        await session.execute(insert(Call), rows)
    return ids


async def tallies(store: Store) -> dict[Group, int]:
    async with store.read() as session:
        rows = await session.execute(
            select(
                VerdictTally.alias,
                VerdictTally.kind,
                VerdictTally.collection,
                VerdictTally.shape,
                VerdictTally.useful,
                VerdictTally.count,
            ).where(VerdictTally.count > 0)
        )
        return {(a, k, c, s, bool(u)): n for a, k, c, s, u, n in rows}


async def counted(store: Store) -> dict[Group, int]:
    """What the tallies must equal: the verdicts, counted."""
    async with store.read() as session:
        rows = await session.execute(
            select(
                Verdict.alias, Verdict.kind, Verdict.collection, Verdict.shape, Verdict.useful, func.count()
            ).group_by(Verdict.alias, Verdict.kind, Verdict.collection, Verdict.shape, Verdict.useful)
        )
        return {(a, k, c, s, bool(u)): n for a, k, c, s, u, n in rows}


async def test_new_same_replaced_and_reworded_verdicts_keep_the_counts(runtime: Runtime) -> None:
    store = runtime.store
    first, second = await add_calls(store, 2, ("a",), ("short",))
    await record_verdict(store, first, True)
    await record_verdict(store, second, True)
    assert await tallies(store) == {
        ("a", "seat", "trio", "short", True): 1,
        ("a", "route", "trio", "short", True): 1,
    }
    await record_verdict(store, first, True)  # sent again: nothing written
    await record_verdict(store, first, True, "clear and right")  # the note alone changed
    assert await tallies(store) == {
        ("a", "seat", "trio", "short", True): 1,
        ("a", "route", "trio", "short", True): 1,
    }
    await record_verdict(store, first, False, "no, wrong")  # a change of mind moves the count
    assert await tallies(store) == {
        ("a", "seat", "trio", "short", False): 1,
        ("a", "route", "trio", "short", True): 1,
    }
    await record_verdict(store, first, True)
    assert await tallies(store) == await counted(store)


async def test_any_sequence_of_verdicts_leaves_the_counts_equal_to_the_verdicts(runtime: Runtime) -> None:
    store = runtime.store
    ids = await add_calls(store, 12, ("a", "b", "c"), ("short", "code"))
    draw = random.Random(15)
    for _ in range(120):
        await record_verdict(store, draw.choice(ids), draw.random() < 0.5, draw.choice(("", "", "note")))
    assert await tallies(store) == await counted(store)


@pytest.mark.parametrize("status", ["cancelled"])
async def test_a_seat_stopped_before_it_finished_takes_no_verdict(runtime: Runtime, status: str) -> None:
    """Stopped from the page (`cancelled`) or cut at a quorum (`cut`): no whole
    answer was given, so it owes no verdict and a "not useful" on it is
    refused (400), with nothing stored or counted."""
    store = runtime.store
    stopped, answered = (await add_calls(store, 3, ("a",), ("short",)))[::2]
    async with store.write() as session:
        await session.execute(update(Call).where(Call.id == stopped).values(status=status))
    with pytest.raises(UserError, match="stopped before it finished"):
        await record_verdict(store, stopped, False, "too slow")
    await record_verdict(store, answered, True)
    assert await tallies(store) == {("a", "seat", "trio", "short", True): 1}
    assert await counted(store) == await tallies(store)


async def test_verdicts_written_at_once_are_each_counted(runtime: Runtime) -> None:
    store = runtime.store
    ids = await add_calls(store, 40, ("a",), ("short",))
    seats = ids[::2]
    await asyncio.gather(*(record_verdict(store, call_id, True) for call_id in seats))
    assert await tallies(store) == {("a", "seat", "trio", "short", True): len(seats)}


async def test_two_replicas_on_postgresql_count_every_verdict(postgres_url: str) -> None:
    first, second = Store(postgres_url), Store(postgres_url)
    try:
        await migrate(first)
        ids = await add_calls(first, 60, ("a", "b"), ("short",))
        await asyncio.gather(
            *(
                record_verdict((first, second)[index % 2], call_id, index % 3 == 0)
                for index, call_id in enumerate(ids)
            )
        )
        assert await tallies(second) == await counted(first)
        assert sum((await tallies(first)).values()) == len(ids)
    finally:
        await first.close()
        await second.close()


async def test_judged_any_says_whether_a_verdict_names_the_collection(runtime: Runtime) -> None:
    """What tells a removed collection's record (its verdicts stay) from a
    name that never was: by either form of the name."""
    (call,) = await add_calls(runtime.store, 1, ("one",), ("short",))
    assert not await judged_any(runtime.store, "bench/trio")
    await record_verdict(runtime.store, call, True)
    assert await judged_any(runtime.store, "bench/trio") and await judged_any(runtime.store, "trio")
    assert not await judged_any(runtime.store, "trio2")


@pytest.mark.parametrize("extra", ["usefull", "notes", "task"])
def test_a_verdict_body_with_a_key_it_does_not_take_is_refused(extra: str) -> None:
    """A misspelt key was ignored: `{"useful": true, "usefull": false}` stored useful."""
    with pytest.raises(UserError, match=f"no '{extra}'"):
        check_verdict_body({"call": "c_a", "useful": True, extra: False})
    assert check_verdict_body({"call": "c_a", "useful": True, "note": None}) == ("c_a", True, "")


def test_a_pending_body_with_a_key_beside_calls_is_refused_not_half_read() -> None:
    """`{"calls": [...], "transcript_path": ...}` checked the ids and
    dropped the rest unread, where a verdict body refuses a key it does
    not take; now it is refused naming the key."""
    assert check_pending_body({"calls": ["c_a"]}) == ["c_a"]
    for body in ({"calls": ["c_a"], "transcript_path": "/x.jsonl"}, {"call": ["c_a"]}):
        with pytest.raises(UserError, match="takes no"):
            check_pending_body(body)
    with pytest.raises(UserError, match='"calls" a list of call ids'):
        check_pending_body({"calls": "c_a"})
