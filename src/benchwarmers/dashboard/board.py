"""The Leaderboard page's drawings: each model's score with its interval, its
trend, and the small win matrix, from the leaderboard's JSON (CONTRACTS §5:
`score`, `low`, `high` on 0..1, `settled`, `trend`, `matrix`).

An interval is drawn as what it is: a band from `low` to `high` on the whole
0-100% scale with the score as a mark inside it. A band too wide to rank on
(`settled` false) is drawn hatched and read as "we don't know yet", never as
a precise-looking "1% (0-3%)". SVG attributes, not inline styles: the
page's content security policy allows no `style=`.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import date
from typing import Any

BAR_WIDTH, BAR_HEIGHT = 180, 18
SPARK_WIDTH, SPARK_HEIGHT = 120, 24
UNKNOWN = "we don't know yet"


@dataclass(frozen=True, slots=True)
class Interval:
    """One model's band on a `BAR_WIDTH`-wide 0..1 scale."""

    x: float  # where the band starts (low)
    width: float  # high - low
    mark: float  # the score
    settled: bool
    label: str  # what a reader (and a screen reader) is told


def interval(model: dict[str, Any]) -> Interval:
    low, high, score = _unit(model["low"]), _unit(model["high"]), _unit(model["score"])
    low, high = min(low, high), max(low, high)
    settled = bool(model.get("settled"))
    if settled:
        label = f"{_pct(score)} (between {_pct(low)} and {_pct(high)})"
    else:
        label = f"{UNKNOWN}: somewhere between {_pct(low)} and {_pct(high)}"
    return Interval(
        x=round(low * BAR_WIDTH, 1),
        width=round(max(high - low, 0.005) * BAR_WIDTH, 1),
        mark=round(score * BAR_WIDTH, 1),
        settled=settled,
        label=label,
    )


def sparkline(trend: list[dict[str, Any]]) -> str:
    """The trend's scores as SVG polyline points (oldest left; "" for fewer
    than two days), each day as far along as it is in time: the days with a
    judgement may be a month's in a row, then one months later."""
    points = [(_day(point), _unit(point["score"])) for point in trend if point.get("score") is not None]
    if len(points) < 2:
        return ""
    first, span = points[0][0], points[-1][0] - points[0][0]
    along = [(day - first) / span if span else i / (len(points) - 1) for i, (day, _) in enumerate(points)]
    return " ".join(
        f"{round(x * SPARK_WIDTH, 1)},{round((1 - s) * (SPARK_HEIGHT - 4) + 2, 1)}"
        for x, (_, s) in zip(along, points, strict=True)
    )


def _day(point: dict[str, Any]) -> int:
    """A trend point's day as a day number (0 when it is not a date: still drawn, in its order)."""
    try:
        return date.fromisoformat(str(point.get("day", ""))).toordinal()
    except ValueError:
        return 0


def trend_label(trend: list[dict[str, Any]]) -> str:
    if not trend:
        return "no history yet"
    first, last = trend[0], trend[-1]
    if len(trend) == 1:
        return f"{_pct(_unit(last['score']))} on {last['day']}"
    return f"{_pct(_unit(first['score']))} on {first['day']} to {_pct(_unit(last['score']))} on {last['day']}"


def matrix_cell(
    matrix: dict[str, Any], row: str, column: str, both_bad: dict[str, Any] | None = None
) -> dict[str, Any] | None:
    """`row` against `column`: wins, losses, ties and the win rate (None when
    only both-bad pairs met: nobody won), the both-bad pairs (the JSON's
    `bothBad`), or None when they never met."""
    cell = matrix.get(row, {}).get(column) or {}
    wins, losses, ties = int(cell.get("wins", 0)), int(cell.get("losses", 0)), int(cell.get("ties", 0))
    bad = int((both_bad or {}).get(row, {}).get(column, 0))
    compared = wins + losses + ties
    if not compared + bad:
        return None
    rate = (wins + ties / 2) / compared if compared else None
    return {"wins": wins, "losses": losses, "ties": ties, "bothBad": bad, "rate": rate, "met": compared + bad}


def _unit(value: Any) -> float:
    return min(max(float(value or 0.0), 0.0), 1.0)


def _pct(value: float) -> str:
    return f"{value * 100:.0f}%"
