"""Decisions against a real store: verdicts move the ranking, ineligible
models are never picked, the explorer seat rotates, seating history is
written on change with its reason, and the reasons reach the API."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from sqlalchemy import select, update

from benchwarmers.bench import decider, decisions
from benchwarmers.bench.explain import (
    decisions_report,
    model_report,
    record_seating,
    seating_history,
    seating_reason,
)
from benchwarmers.bench.pair_reads import judge_agreement, pair_counts
from benchwarmers.bench.pairs import JudgeAgreement, judge_weight
from benchwarmers.bench.rating import HEALTH_MAX
from benchwarmers.bench.seated import note_seated
from benchwarmers.calls.pairs import PairJudgement, record_pairs
from benchwarmers.errors import UserError
from benchwarmers.runtime import Runtime
from benchwarmers.store.collections import add_collection, get_collection, update_collection
from benchwarmers.store.endpoints import add_endpoint
from benchwarmers.store.models import add_model, retire, set_status
from benchwarmers.store.schema import Call, LearnedLimit, Model, Probe, SeatingHistory, SuiteResult

from .conftest import Seat, judge_pair

pytestmark = pytest.mark.unit


async def add(rt: Runtime, alias: str, **kw: object) -> None:
    await add_model(rt.store, alias, "local", alias + "-served", **kw)  # type: ignore[arg-type]


async def test_useful_verdicts_rise_and_not_useful_fall(offline: Runtime, seat: Seat) -> None:
    for alias in ("a", "b", "c"):
        await add(offline, alias)
    before = {r.alias: r for r in await decisions.rank(offline.store, "bench/trio", "short")}
    assert len({r.mean for r in before.values()}) == 1
    for _ in range(6):
        await seat("a", useful=True)
        await seat("c", useful=False)
    after = {r.alias: r for r in await decisions.rank(offline.store, "bench/trio", "short")}
    assert [r for r in await decisions.rank_aliases(offline.store, "trio", "short", ["c", "b", "a"])] == [
        "a",
        "b",
        "c",
    ]
    assert after["a"].mean > before["a"].mean and after["c"].mean < before["c"].mean
    assert after["a"].judged == 6 and after["b"].judged == 0
    width = lambda r: r.interval[1] - r.interval[0]  # noqa: E731
    assert width(after["a"]) < width(before["a"])
    # Verdicts on another collection count only a little, on the other shape of this one a little too.
    for _ in range(6):
        await seat("b", collection="other", useful=True)
    moved = {r.alias: r for r in await decisions.rank(offline.store, "trio", "short")}
    assert before["b"].mean < moved["b"].mean < after["a"].mean


async def test_suite_health_and_limits_feed_the_ranking(offline: Runtime) -> None:
    for alias in ("solid", "flaky", "failing"):
        await add(offline, alias)
    now = datetime.now(UTC)
    async with offline.store.write() as session:
        for i in range(6):
            session.add(
                SuiteResult(run_id="r", alias="solid", task=f"t{i}", shape="code", at=now, passed=True)
            )
            session.add(
                SuiteResult(run_id="r", alias="failing", task=f"t{i}", shape="code", at=now, passed=False)
            )
            session.add(
                SuiteResult(run_id="r", alias="flaky", task=f"t{i}", shape="code", at=now, passed=True)
            )
        for ok in (True, False, False):
            session.add(Probe(alias="flaky", kind="daily", name="word", at=now, answered=ok, ok=ok))
    ranked = await decisions.rank(offline.store, "trio", "code")
    assert [r.alias for r in ranked] == ["solid", "flaky", "failing"]
    flaky = ranked[1]
    assert any("2 of 3 recent probes went unanswered" in reason for reason in flaky.reasons)
    assert "suite 6/6 on this shape" in ranked[0].reasons[0]


async def test_wrong_probe_answers_are_quality_not_health(offline: Runtime) -> None:
    """A model that answered all four onboarding probes, wrongly, is healthy:
    no health penalty; its failed checks only lower its prior a little."""
    for alias in ("right", "wrong"):
        await add(offline, alias)
    now = datetime.now(UTC)
    async with offline.store.write() as session:
        for name in ("word", "sum", "json", "format"):
            session.add(Probe(alias="right", kind="onboard", name=name, at=now, answered=True, ok=True))
            session.add(Probe(alias="wrong", kind="onboard", name=name, at=now, answered=True, ok=False))
    ranked = {r.alias: r for r in await decisions.rank(offline.store, "trio", "short")}
    wrong, right = ranked["wrong"], ranked["right"]
    assert not any(reason.startswith("health") for reason in wrong.reasons)
    assert "passed 0 of 4 onboarding probe checks" in wrong.reasons[0]
    assert "passed 4 of 4 onboarding probe checks" in right.reasons[0]
    assert wrong.mean < right.mean and right.mean - wrong.mean <= 0.25
    assert right.score - wrong.score < HEALTH_MAX  # less than four unanswered probes would cost


async def test_ineligible_models_go_last_with_the_reason(offline: Runtime, seat: Seat) -> None:
    await add(offline, "ok")
    await add(offline, "gone")
    await add(offline, "tired")
    await add(offline, "painter", role="image")
    await retire(offline.store, "gone", "stopped answering")
    await set_status(offline.store, "tired", "resting", resting_until=datetime.now(UTC) + timedelta(hours=1))
    for alias in ("gone", "tired", "painter"):
        for _ in range(5):
            await seat(alias, useful=True)
    ranked = await decisions.rank(offline.store, "trio", "short")
    assert ranked[0].alias == "ok"
    assert {r.alias: r.reasons[0] for r in ranked[1:]} == {
        "gone": "not seated: retired",
        "tired": "not seated: resting (rate limited)",
        "painter": "not seated: image model",
    }
    assert await decisions.pick_mergers(offline.store, "trio", "short", ["gone", "ok", "painter"]) == ["ok"]


async def test_explorer_rotates_among_least_judged_eligible(offline: Runtime, seat: Seat) -> None:
    for alias in ("member", "x", "y", "judged"):
        await add(offline, alias)
    await add(offline, "adhoc", ad_hoc=True)
    await add(offline, "gone")
    await add(offline, "tired")
    await add(offline, "painter", role="image")
    await add(offline, "eye", role="vision")
    await add(offline, "new", status="onboarding")
    await retire(offline.store, "gone")
    await set_status(offline.store, "tired", "resting", resting_until=datetime.now(UTC) + timedelta(hours=1))
    await seat("judged", useful=True)

    picks = []
    for _ in range(4):
        (pick,) = await decisions.pick_explorers(offline.store, "trio", "short", 1, exclude=["member"])
        picks.append(pick)
        await seat(pick, explorer=True)  # seated, nobody judged it
        # As the panel engine counts the seats it plans, between reads of the seat counts.
        note_seated(offline.store, "trio", "short", [pick])
    assert picks == ["x", "y", "x", "y"]
    every = await decisions.pick_explorers(offline.store, "trio", "short", 10, exclude=["member"])
    assert set(every) == {"x", "y", "judged"} and every[-1] == "judged"
    # The vision model explores only image asks; text-only models never do.
    assert await decisions.pick_explorers(offline.store, "trio", "vision", 10) == ["eye"]


async def test_route_member_takes_tools(offline: Runtime, seat: Seat) -> None:
    await add(offline, "talker", tools=False)
    await add(offline, "agent")
    for _ in range(5):
        await seat("talker", shape="code", useful=True)
    assert await decisions.pick_route_member(offline.store, "trio", ["talker", "agent"]) == ["agent"]


async def test_seating_history_written_on_change_with_reason(offline: Runtime, seat: Seat) -> None:
    for alias in ("a", "b", "c"):
        await add(offline, alias)
    ranked = await decisions.rank(offline.store, "trio", "short")
    reason = seating_reason(ranked, ["a", "b", "c"], explorers=["c"])
    assert "c (explorer" in reason and "a score" in reason
    assert await record_seating(offline.store, "bench/trio", "short", ["a", "b", "c"], reason)
    assert not await record_seating(offline.store, "trio", "short", ["a", "b", "c"], "same again")
    assert await record_seating(offline.store, "trio", "short", ["a", "c"], "b fell behind")
    assert await record_seating(offline.store, "trio", "long", ["a", "c"], "another shape")
    async with offline.store.read() as session:
        rows = (await session.scalars(select(SeatingHistory).order_by(SeatingHistory.id))).all()
    assert [(r.collection, r.shape, r.seated) for r in rows] == [
        ("trio", "short", ["a", "b", "c"]),
        ("trio", "short", ["a", "c"]),
        ("trio", "long", ["a", "c"]),
    ]
    history = await seating_history(offline.store, "trio")
    assert history[0]["reason"] == "another shape" and history[-1]["reason"] == reason


async def test_reports_for_model_show_and_the_api(offline: Runtime, seat: Seat) -> None:
    await add(offline, "a")
    await add(offline, "b")
    await seat("a", useful=True)
    await seat("a", shape="code", useful=False)
    report = await decisions_report(offline.store, "trio", ["a", "b"])
    assert report["collection"] == "bench/trio"
    assert set(report["shapes"]) == {"short", "long", "code", "vision"}
    short = {row["alias"]: row for row in report["shapes"]["short"]}
    assert short["a"]["judged"] == 1 and len(short["a"]["interval"]) == 2 and short["b"]["judged"] == 0
    assert all(
        not row["eligible"] and row["reasons"][0].startswith("not seated")
        for row in report["shapes"]["vision"]
    )
    mine = await model_report(offline.store, "a")
    assert [(r["collection"], r["shape"]) for r in mine] == [("bench/trio", "code"), ("bench/trio", "short")]


async def test_speed_price_and_limits_break_equal_records(offline: Runtime, seat: Seat) -> None:
    await add_endpoint(offline.store, "busy", "http://127.0.0.1:9/v1", "openai", needs_key=False)
    await add(offline, "quick", price_out=0.0)
    await add(offline, "slow")
    await add(offline, "dear", price_out=30.0)
    await add_model(offline.store, "crowded", "busy", "crowded")
    now = datetime.now(UTC)
    async with offline.store.write() as session:
        session.add(Probe(alias="slow", kind="speed", name="short", at=now, ok=True, first_byte_seconds=9.0))
        session.add(
            LearnedLimit(
                endpoint="busy", unit="requests", window="day", limit=1000, remaining=20, seen_at=now
            )
        )
    ranked = await decisions.rank(offline.store, "trio", "short")
    assert ranked[0].alias == "quick"
    reasons = {r.alias: " ".join(r.reasons) for r in ranked}
    assert "first byte 9.0s" in reasons["slow"]
    assert "$30 per million output tokens" in reasons["dear"]
    assert "near its rate limit" in reasons["crowded"]


async def test_pairs_judged_move_the_ranking(offline: Runtime, seat: Seat) -> None:
    """Pairs (`calls/pairs.py`) are fitted into the same posterior as the
    single verdicts: equal records, then c judged better than a four times."""
    for alias in ("a", "b", "c"):
        await add(offline, alias)
        for useful in (True, False, True, False):
            await seat(alias, useful=useful)
    for i in range(4):
        await judge_pair(offline.store, "trio", i, "c", "a")
    ranked = await decisions.rank(offline.store, "trio", "short")
    assert [r.alias for r in ranked] == ["c", "b", "a"]
    assert any("pairs: preferred 4" in why for why in ranked[0].reasons)
    assert ranked[0].judged == 4  # pairs are not single verdicts


async def test_a_models_report_ranks_it_among_its_collection_so_its_pairs_count(offline: Runtime) -> None:
    """The model page's (and `model show`'s) figure is the leaderboard's:
    ranked alone, a model's pairs moved only its words ("preferred 4"),
    its usefulness stayed the prior's, though seating read them."""
    for alias in ("a", "b"):
        await add(offline, alias)
    await add_collection(offline.store, "duo", ["a", "b"])
    for i in range(4):
        await judge_pair(offline.store, "duo", i, "a", "b")
    board = {r.alias: r for r in await decisions.rank(offline.store, "duo", "short", ["a", "b"])}
    assert board["a"].mean > 0.6 > 0.4 > board["b"].mean
    standings: dict[tuple[str, str], dict[str, Any]] = {}
    for alias in ("a", "b"):
        (mine,) = await model_report(offline.store, alias, standings)
        assert (mine["collection"], mine["mean"]) == ("bench/duo", round(board[alias].mean, 4))
        assert mine["interval"] == [round(x, 4) for x in board[alias].interval]
        assert (mine["judged"], mine["compared"]) == (0, 4)  # judged in pairs alone: a record all the same
    assert list(standings) == [("duo", "short")]  # ranked once for both reports
    alone = await model_report(offline.store, "b")
    assert alone[0]["mean"] == round(board["b"].mean, 4)


async def test_judge_pairs_count_by_their_agreement_with_people(offline: Runtime) -> None:
    """A judge's pairs (kind "judge") are weighed in one place by how often
    it agreed with people on the same pairs of this collection; people's count 1."""
    for alias in ("a", "b", "c"):
        await add(offline, alias)
    now = datetime.now(UTC)

    async def panel(i: int, *aliases: str) -> None:
        async with offline.store.write() as session:
            for alias in aliases:
                session.add(
                    Call(
                        id=f"{alias}{i}",
                        at=now,
                        kind="seat",
                        alias=alias,
                        collection="trio",
                        shape="short",
                        ask_id=f"ask{i}",
                        status="ok",
                    )
                )

    # Asks 0-3: a person and the judge both say c beat a; on ask 3 the judge says the opposite.
    for i in range(4):
        await panel(i, "c", "a")
        await record_pairs(offline.store, PairJudgement("better", (f"c{i}", f"a{i}")))
        judged = (f"c{i}", f"a{i}") if i < 3 else (f"a{i}", f"c{i}")
        await record_pairs(offline.store, PairJudgement("better", judged), kind="judge")
    # Asks 4-13: only the judge, b over a.
    for i in range(4, 14):
        await panel(i, "b", "a")
        await record_pairs(offline.store, PairJudgement("better", (f"b{i}", f"a{i}")), kind="judge")
    earned = await judge_agreement(offline.store, "bench/trio")
    assert earned == JudgeAgreement(agreed=3, compared=4)
    assert await judge_agreement(offline.store, "elsewhere") == JudgeAgreement()
    pairs = await pair_counts(offline.store, "trio", "short", now)
    assert pairs is not None
    w = judge_weight(3, 4)
    assert 0 < w < 0.2
    assert pairs.record("b") == pytest.approx((10 * w, 0))
    # On asks 0-3 a person judged the same pairs: their word stands, the judge's there count nothing.
    assert pairs.record("c") == pytest.approx((4, 0))
    ranked = {r.alias: r for r in await decisions.rank(offline.store, "trio", "short")}
    assert ranked["b"].mean > ranked["a"].mean


async def test_promotion_as_the_collection_says(offline: Runtime, seat: Seat) -> None:
    for alias in ("a", "b", "star"):
        await add(offline, alias)
    await add_collection(offline.store, "trio", ["a", "b"], explorer_seats=1)
    for _ in range(12):
        await seat("a", useful=True)
        await seat("b", useful=False)
        await seat("star", useful=True)
    suggest = await decisions.seat_plan(offline.store, await get_collection(offline.store, "trio"), "short")
    assert suggest.record == ("a", "b") and suggest.suggestions[0].startswith("promote star")
    auto = await update_collection(offline.store, "trio", promotion="auto")
    promoted = await decisions.seat_plan(offline.store, auto, "short")
    assert promoted.record == ("a", "star") and "promoted" in promoted.why["star"]
    never = await update_collection(offline.store, "trio", promotion="never")
    assert (await decisions.seat_plan(offline.store, never, "short")).suggestions == ()
    with pytest.raises(UserError):
        await update_collection(offline.store, "trio", promotion="sometimes")


@pytest.mark.parametrize("promotion", ["suggest", "never"])
@pytest.mark.parametrize("seats", [0, 4])
async def test_every_member_seats_as_the_decider_does(
    offline: Runtime, seat: Seat, promotion: str, seats: int
) -> None:
    """The hot path's shortcut (no cap, no explorer, no promotion that seats
    a non-member) decides exactly what `decide` on `seat_state` decides,
    with a record that would reorder the seats, members held out (resting,
    failing), a seating line, and after each change."""
    store = offline.store
    for alias in ("a", "b", "c", "d", "outsider"):
        await add(offline, alias)
    await add_collection(store, "trio", ["a", "b", "c", "d"], seats=seats)
    await update_collection(store, "trio", promotion=promotion)
    for _ in range(6):
        await seat("d", useful=True)
        await seat("a", useful=False)
        await seat("outsider", useful=True)
    await record_seating(store, "trio", "short", ("b", "a"), "a test")

    async def both() -> tuple[decider.Decision, decider.Decision]:
        view = await get_collection(store, "trio")
        table, candidates, pairs = await decisions.seat_state(store, view, "short")
        return await decisions.seat_plan(store, view, "short"), decider.decide(table, candidates, pairs=pairs)

    fast, slow = await both()
    assert fast == slow and fast.why == slow.why
    assert fast.record == ("a", "b", "c", "d") and fast.left_off == ()
    await set_status(store, "b", "resting", resting_until=datetime.now(UTC) + timedelta(hours=1))
    async with store.write() as session:
        await session.execute(update(Model).where(Model.alias == "c").values(failures=5))
    fast, slow = await both()
    assert fast == slow and fast.why == slow.why
    assert fast.record == ("a", "d") and [alias for alias, _ in fast.left_off] == ["b", "c"]
    await set_status(store, "b", "available")
    fast, slow = await both()
    assert fast == slow and fast.record == ("a", "b", "d")


async def test_every_member_answer_is_reused_until_a_fact_changes_or_a_rest_ends(
    offline: Runtime, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A plain ask on an unchanged bench is seated from the last answer; a
    write to the facts, or the clock passing a member's rest, decides again."""
    store = offline.store
    for alias in ("a", "b"):
        await add(offline, alias)
    await add_collection(store, "duo", ["a", "b"])
    view = await get_collection(store, "duo")
    assert (await decisions.seat_plan(store, view, "short")).record == ("a", "b")
    ends = datetime.now(UTC) + timedelta(hours=1)
    async with store.write() as session:
        await session.execute(update(Model).where(Model.alias == "b").values(resting_until=ends))
    resting = await decisions.seat_plan(store, view, "short")
    assert resting.record == ("a",) and [alias for alias, _ in resting.left_off] == ["b"]
    assert await decisions.seat_plan(store, view, "short") is resting

    class Later(datetime):
        @classmethod
        def now(cls, tz: object = None) -> datetime:  # type: ignore[override]
            return ends + timedelta(seconds=1)

    monkeypatch.setattr(decisions, "datetime", Later)
    assert (await decisions.seat_plan(store, view, "short")).record == ("a", "b")
