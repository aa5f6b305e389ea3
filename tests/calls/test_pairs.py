"""Pair verdicts in the store (`calls/pairs.py`): what the rating reads back
(`pair_outcomes`), one row per pair however often it is judged, and the
same on PostgreSQL, where two replicas judging one pair at once land on
one row."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime

import pytest
from sqlalchemy import func, insert, select

from benchwarmers.calls.call_ids import new_call_id
from benchwarmers.calls.pairs import (
    PairJudgement,
    check_pair_body,
    is_pair_body,
    pair_outcomes,
    record_pairs,
)
from benchwarmers.calls.verdicts import pending
from benchwarmers.errors import NotFound, UserError
from benchwarmers.runtime import Runtime
from benchwarmers.store.db import Store
from benchwarmers.store.migrate import migrate
from benchwarmers.store.schema import Call, PairVerdict


async def seats(store: Store, ask_id: str, aliases: tuple[str, ...], collection: str = "trio") -> list[str]:
    ids = [new_call_id() for _ in aliases]
    rows = [
        {
            "id": call_id,
            "at": datetime.now(UTC),
            "kind": "seat",
            "alias": alias,
            "collection": collection,
            "shape": "short",
            "seat": f"Seat {index + 1}",
            "ask_id": ask_id,
            "status": "ok",
        }
        for index, (call_id, alias) in enumerate(zip(ids, aliases, strict=True))
    ]
    async with store.write() as session:
        await session.execute(insert(Call), rows)
    return ids


async def pair_count(store: Store) -> int:
    async with store.read() as session:
        return int(await session.scalar(select(func.count()).select_from(PairVerdict)) or 0)


async def test_outcomes_read_back_per_collection(runtime: Runtime) -> None:
    store = runtime.store
    a, b, c = await seats(store, "a_1", ("alpha", "beta", "gamma"))
    (other,) = await seats(store, "a_2", ("alpha",), collection="elsewhere")
    await record_pairs(store, PairJudgement("better", (b, a)))
    await record_pairs(store, PairJudgement("both_bad", (c, a), "neither"))
    outcomes = await pair_outcomes(store, "bench/trio")
    assert [(o.better_alias, o.worse_alias, o.outcome, o.shape, o.kind) for o in outcomes] == [
        ("beta", "alpha", "better", "short", "person"),
        (
            *(alias for _call, alias in sorted([(a, "alpha"), (c, "gamma")])),  # a tie's calls in id order
            "both_bad",
            "short",
            "person",
        ),
    ]
    assert await pair_outcomes(store, "trio") == outcomes
    assert await pair_outcomes(store, "elsewhere") == []
    with pytest.raises(NotFound):
        await record_pairs(store, PairJudgement("best", (other,)), collections=frozenset({"trio"}))
    with pytest.raises(UserError, match="different asks"):
        await record_pairs(store, PairJudgement("tie", (a, other)))
    assert await pair_count(store) == 2


async def test_a_persons_pair_judges_its_seats_a_judges_does_not(runtime: Runtime) -> None:
    store = runtime.store
    a, b, c, d = await seats(store, "a_3", ("alpha", "beta", "gamma", "delta"))
    (elsewhere,) = await seats(store, "a_4", ("alpha",))
    assert await pending(store, [a, b, c, d, elsewhere]) == [a, b, c, d, elsewhere]
    await record_pairs(store, PairJudgement("better", (b, a)))
    await record_pairs(store, PairJudgement("tie", (c, d)), kind="judge")
    # The person's pair judged a and b; the judge's pair is not the user's verdict.
    assert await pending(store, [a, b, c, d, elsewhere]) == [c, d, elsewhere]
    await record_pairs(store, PairJudgement("best", (c,)))
    assert await pending(store, [a, b, c, d, elsewhere]) == [elsewhere]


async def test_two_replicas_on_postgresql_judge_one_pair_into_one_row(postgres_url: str) -> None:
    first, second = Store(postgres_url), Store(postgres_url)
    try:
        await migrate(first)
        a, b = await seats(first, "a_1", ("alpha", "beta"))
        await asyncio.gather(
            record_pairs(first, PairJudgement("better", (a, b))),
            record_pairs(second, PairJudgement("better", (b, a), "changed my mind")),
        )
        assert await pair_count(first) == 1
        (outcome,) = await pair_outcomes(second, "trio")
        assert {outcome.better_alias, outcome.worse_alias} == {"alpha", "beta"}
        again = await record_pairs(first, PairJudgement("tie", (a, b)))
        assert again.pairs[0].changed is True and await pair_count(second) == 1
    finally:
        await first.close()
        await second.close()


@pytest.mark.parametrize(
    "body",
    [
        {"better": "c_a", "worse": "c_b", "useful": True},
        {"best": "c_a", "call": "c_a"},
        {"tie": ["c_a", "c_b"], "call": "c_a", "useful": False},
    ],
)
def test_a_pair_body_that_also_names_a_seats_verdict_is_refused(body: dict[str, object]) -> None:
    """Which was meant, the seat's verdict or the pair? Refused (nothing is
    stored), as the CLI and the MCP tool refuse both at once, not half-read."""
    with pytest.raises(UserError, match="not both"):
        check_pair_body(body)


@pytest.mark.parametrize(
    ("body", "said"),
    [
        ({"best": "c_a", "worse": "c_b"}, "not with 'best'"),
        ({"tie": ["c_a", "c_b"], "worse": "c_c"}, "not with 'tie'"),
        ({"worse": "c_b"}, '"worse" goes with "better"'),
    ],
)
def test_worse_without_better_is_refused_not_dropped(body: dict[str, object], said: str) -> None:
    """`worse` is half of the better/worse form: beside `best` it was read
    as "best of the panel" and `worse` dropped (stored, not what was said);
    alone it was taken for a seat's verdict missing its `call`."""
    assert is_pair_body(body)
    with pytest.raises(UserError, match=said):
        check_pair_body(body)


@pytest.mark.parametrize(
    ("body", "said"),
    [
        ({"better": "c_a", "worse": "c_b", "nte": "typo"}, "no 'nte'"),
        ({"tie": ["c_a", "c_b"], "outcome": "tie"}, "no 'outcome'"),
        ({"bothBad": ["c_a", "c_b"], "both_bad": ["c_a", "c_b"]}, "given twice"),
    ],
)
def test_a_pair_body_with_a_key_it_does_not_take_is_refused(body: dict[str, object], said: str) -> None:
    """A key no form takes was ignored: the pair stored, what the key meant lost."""
    with pytest.raises(UserError, match=said):
        check_pair_body(body)


def test_both_bad_may_be_spelt_as_the_json_spells_it() -> None:
    body = {"bothBad": ["c_a", "c_b"], "note": "neither"}
    assert is_pair_body(body)
    assert check_pair_body(body) == PairJudgement("both_bad", ("c_a", "c_b"), "neither")
