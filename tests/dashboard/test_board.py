"""The Leaderboard's drawings (`dashboard.board`): an interval too wide to rank
on reads as "we don't know yet", never as a precise percentage; the trend
and the win matrix from the leaderboard's JSON."""

from __future__ import annotations

import pytest

from benchwarmers.dashboard import board

pytestmark = pytest.mark.unit


def test_a_wide_interval_says_we_do_not_know_yet_and_draws_the_whole_band() -> None:
    drawn = board.interval({"score": 0.01, "low": 0.0, "high": 0.83, "settled": False})
    assert drawn.label.startswith("we don't know yet")
    assert "1%" not in drawn.label.split(":")[0]
    assert drawn.x == 0 and drawn.width == pytest.approx(0.83 * board.BAR_WIDTH, abs=0.1)
    assert not drawn.settled


def test_a_settled_interval_reads_as_the_score_between_its_bounds() -> None:
    drawn = board.interval({"score": 0.71, "low": 0.55, "high": 0.84, "settled": True})
    assert drawn.label == "71% (between 55% and 84%)"
    assert drawn.x < drawn.mark < drawn.x + drawn.width


def test_out_of_range_and_swapped_bounds_stay_on_the_scale() -> None:
    drawn = board.interval({"score": 1.4, "low": 0.9, "high": -0.2, "settled": True})
    assert (drawn.x, drawn.x + drawn.width, drawn.mark) == (0, board.BAR_WIDTH * 0.9, board.BAR_WIDTH)


def test_the_trend_is_a_line_once_there_are_two_days() -> None:
    assert board.sparkline([{"day": "2026-12-01", "score": 0.5}]) == ""
    points = board.sparkline([{"day": "2026-12-01", "score": 0.0}, {"day": "2026-12-02", "score": 1.0}])
    first, last = (tuple(map(float, p.split(","))) for p in points.split())
    assert first[0] == 0 and last[0] == board.SPARK_WIDTH and last[1] < first[1]
    assert board.trend_label([]) == "no history yet"
    two_days = [{"day": "d1", "score": 0.2}, {"day": "d2", "score": 0.6}]
    assert board.trend_label(two_days) == "20% on d1 to 60% on d2"


def test_the_trend_line_spaces_its_days_as_far_apart_as_they_are() -> None:
    """Thirty days with a judgement may span months: a day judged in June
    after a month of them in January sits at the line's end, the January
    days bunched at its start; they were spaced evenly, a gap of months
    drawn as one day's."""
    days = ["2026-01-01", "2026-01-02", "2026-01-03", "2026-06-30"]
    points = board.sparkline([{"day": day, "score": 0.5} for day in days])
    xs = [float(point.split(",")[0]) for point in points.split()]
    assert xs[0] == 0 and xs[-1] == board.SPARK_WIDTH
    assert xs[2] < board.SPARK_WIDTH * 0.05, xs


def test_a_matrix_cell_counts_a_tie_as_half_a_win() -> None:
    matrix = {"a": {"b": {"wins": 2, "losses": 1, "ties": 1}, "c": {"wins": 0, "losses": 0, "ties": 0}}}
    assert board.matrix_cell(matrix, "a", "b") == {
        "wins": 2,
        "losses": 1,
        "ties": 1,
        "bothBad": 0,
        "rate": 0.625,
        "met": 4,
    }
    assert board.matrix_cell(matrix, "a", "c") is None
    assert board.matrix_cell(matrix, "b", "a") is None


def test_a_matrix_cell_says_both_bad_pairs_and_only_those_met() -> None:
    matrix = {"a": {"b": {"wins": 1, "losses": 0, "ties": 1}}}
    both_bad = {"a": {"b": 1, "c": 2}, "c": {"a": 2}}
    assert board.matrix_cell(matrix, "a", "b", both_bad) == {
        "wins": 1,
        "losses": 0,
        "ties": 1,
        "bothBad": 1,
        "rate": 0.75,
        "met": 3,
    }
    # Met only in both-bad pairs: met (not "not met"), and nobody's win rate.
    assert board.matrix_cell(matrix, "a", "c", both_bad) == {
        "wins": 0,
        "losses": 0,
        "ties": 0,
        "bothBad": 2,
        "rate": None,
        "met": 2,
    }
    assert board.matrix_cell(matrix, "b", "c", both_bad) is None
