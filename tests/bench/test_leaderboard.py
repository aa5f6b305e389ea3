"""The leaderboard's own arithmetic (`bench/leaderboard.py`): pairs counted
per model and per two models, and the day-by-day trend. The board over a
real store is tested through `GET /bench/leaderboard` (tests/server/routes/
test_decisions.py) and the dashboard (tests/dashboard)."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime

import pytest

from benchwarmers.bench import leaderboard
from benchwarmers.bench.decider import Candidate, Table, rankings
from benchwarmers.bench.forgetting import age_weight
from benchwarmers.bench.pairs import JudgeAgreement, PairCounts, judge_weight
from benchwarmers.bench.rating import Evidence, Tally
from benchwarmers.calls.pairs import Outcome, PairOutcome

pytestmark = pytest.mark.unit

DAY1 = datetime(2026, 12, 1, 9, tzinfo=UTC)
DAY2 = datetime(2026, 12, 2, 9, tzinfo=UTC)


def pair(better: str, worse: str, outcome: Outcome = "better", at: datetime = DAY1) -> PairOutcome:
    return PairOutcome(better, worse, outcome, "short", "person", at)


def test_pairs_count_wins_losses_ties_and_both_bad_per_model_and_per_two() -> None:
    record, matrix = leaderboard._pair_record(
        [pair("a", "b"), pair("a", "b"), pair("b", "a"), pair("a", "c", "tie"), pair("b", "c", "both_bad")]
    )
    assert record["a"] == {"wins": 2, "losses": 1, "ties": 1, "bothBad": 0}
    assert record["b"] == {"wins": 1, "losses": 2, "ties": 0, "bothBad": 1}
    assert record["c"] == {"wins": 0, "losses": 0, "ties": 1, "bothBad": 1}
    assert matrix["a"]["b"] == {"wins": 2, "losses": 1, "ties": 0}
    assert matrix["b"]["a"] == {"wins": 1, "losses": 2, "ties": 0}
    assert matrix["a"]["c"] == matrix["c"]["a"] == {"wins": 0, "losses": 0, "ties": 1}
    assert "c" not in matrix.get("b", {})  # both bad says nothing of which was better


def test_two_models_judged_both_bad_met_though_neither_won() -> None:
    """The matrix counts who beat whom, so "both bad" is not in it; the board
    says beside it how often two models were both bad (the page read them
    "not met", as if the verdict was lost)."""
    pairs = [pair("b", "c", "both_bad"), pair("c", "b", "both_bad"), pair("a", "b"), pair("a", "c", "tie")]
    assert leaderboard._both_bad(pairs) == {"b": {"c": 2}, "c": {"b": 2}}
    assert leaderboard._both_bad([pair("a", "b")]) == {}


def test_the_trend_adds_each_day_to_what_came_before() -> None:
    verdicts = [("a", True, DAY1), ("a", False, DAY2), ("b", True, DAY1)]
    trend = leaderboard._trend("a", verdicts, [pair("a", "b", at=DAY2), pair("a", "c", "tie", at=DAY2)])
    # Day 1: one useful -> (1 + 1) / (2 + 1). Day 2: + not useful, a win, a tie, and day 1's verdict
    # a day old then, weighed as the rating weighs it (`age_weight(1)`) -> (1 + w + 1.5) / (2 + w + 3).
    old = age_weight(1)
    assert trend == [
        {"day": "2026-12-01", "score": round(2 / 3, 4)},
        {"day": "2026-12-02", "score": round((2.5 + old) / (5 + old), 4)},
    ]
    assert leaderboard._trend("nobody", verdicts, []) == []


def test_the_judge_line_says_agreement_and_weight() -> None:
    line = leaderboard.judge_summary(JudgeAgreement(agreed=7, compared=10))
    assert line == f"judge agreement 7/10, weight {judge_weight(7, 10):.2f}"
    assert leaderboard.judge_summary(JudgeAgreement(agreed=2.5, compared=4)).startswith(
        "judge agreement 2.5/4,"
    )


def test_a_model_judged_twice_is_not_known_however_narrow_its_interval() -> None:
    """A model with a perfect suite and two pair wins, nothing else, read
    "99% (91-100%)" on the board, as settled as models judged fifty times:
    its interval is narrow from its suite and the prior pooled from the
    others, not from what people said of it here. Settled now asks both."""
    models = {"a": (40, 8), "b": (35, 12), "c": (30, 20)}
    candidates = [
        Candidate(
            a, Evidence(a, here=Tally(good, bad), suite_shape=Tally(5, 1), suite_other=Tally(5, 1)), True
        )
        for a, (good, bad) in models.items()
    ]
    candidates.append(Candidate("x", Evidence("x", suite_shape=Tally(6, 0), suite_other=Tally(11, 1)), True))
    pairs = PairCounts()
    pairs.add("x", "a", "better", ask=1)
    pairs.add("x", "b", "better", ask=1)
    ranked = {r.alias: r for r in rankings(Table(("a", "b", "c", "x")), candidates, pairs)}
    low, high = ranked["x"].interval
    assert high - low <= leaderboard.SETTLED_WIDTH  # narrow: the width alone called it settled
    assert not leaderboard.settled(ranked["x"])
    assert all(leaderboard.settled(ranked[a]) for a in models)
    judged_enough = replace(ranked["x"], judged=3)  # three verdicts and its two pairs
    assert leaderboard.settled(judged_enough)
    assert not leaderboard.settled(replace(ranked["a"], interval=(0.4, 0.8)))  # judged often, still too wide


def test_equal_scores_share_a_rank_and_the_next_counts_them_all() -> None:
    """Three members nobody judged, on one prior, ranked "1, 2, 3" in the
    order they were named: the board read as if the first had won."""
    assert leaderboard.ranks([0.4, 0.4, 0.4]) == [1, 1, 1]
    assert leaderboard.ranks([0.7, 0.5, 0.5, 0.2]) == [1, 2, 2, 4]
    assert leaderboard.ranks([0.400001, 0.4]) == [1, 1]  # equal as the board shows them
    assert leaderboard.ranks([0.9, 0.8]) == [1, 2] and leaderboard.ranks([]) == []


def test_a_model_we_do_not_know_yet_is_ranked_after_the_settled_ones() -> None:
    """A model with one useful verdict, on a prior pooled from the others'
    records, scored 76% (33-99%) and read "rank 2" above models judged thirty
    times, the hatched band beside it saying it was too wide to rank on. The
    settled standings are ranked first; the others follow, by their estimate."""
    models = {"a": (27, 3), "b": (18, 12), "c": (9, 21)}
    candidates = [
        Candidate(a, Evidence(a, here=Tally(good, bad), suite_other=Tally(5, 1)), True)
        for a, (good, bad) in models.items()
    ]
    candidates += [
        Candidate("once", Evidence("once", here=Tally(1, 0)), True),
        Candidate("never", Evidence("never"), True),
    ]
    ranked = rankings(Table(("a", "b", "c", "once", "never")), candidates, PairCounts())
    by_alias = {r.alias: r for r in ranked}
    assert by_alias["once"].mean > by_alias["b"].mean  # its estimate alone would place it second
    board = [(place, r.alias) for place, r in leaderboard.board_order(ranked)]
    assert board[:3] == [(1, "a"), (2, "b"), (3, "c")]
    after = sorted(("once", "never"), key=lambda alias: -by_alias[alias].mean)
    assert board[3:] == [(4, after[0]), (5, after[1])]
