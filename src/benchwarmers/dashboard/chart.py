"""The Quotas page's chart: tokens or USD per endpoint per day of the month, as SVG we draw.

No chart library: a few dozen lines of arithmetic give stacked bars, one
colour per endpoint (from the stylesheet's palette, so the dark scheme
applies), day numbers along the bottom and a scale on the left. The SVG
carries a `<title>` per bar, so a pointer (or a screen reader) reads the
figures, and a table beside it on the page holds the same numbers.

The same bars draw either measure (`MEASURES`): tokens, or USD at the
price of each call's time (calls whose price was unknown add nothing to a
USD bar, and its title says how many there were).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

Measure = Literal["tokens", "usd"]
MEASURES: tuple[Measure, ...] = ("tokens", "usd")

WIDTH, HEIGHT = 720, 220
LEFT, BOTTOM, TOP = 56, 24, 12
PALETTE_SIZE = 6  # .series-0 ... .series-5 in app.css


@dataclass(frozen=True, slots=True)
class Bar:
    x: float
    y: float
    width: float
    height: float
    series: int
    title: str


@dataclass(frozen=True, slots=True)
class Chart:
    width: int
    height: int
    bars: list[Bar]
    ticks: list[tuple[float, str]]  # (y, label) on the left scale
    days: list[tuple[float, str]]  # (x, label) along the bottom
    legend: list[tuple[int, str]]  # (series, endpoint)
    baseline: float
    empty: bool


def usage_chart(days: dict[str, Any], measure: Measure = "tokens") -> Chart:
    """`days` is `Backend.usage_by_day()`: month, days_in_month, series;
    `measure`: what the bars add up, tokens or USD."""
    month: str = days["month"]
    count: int = days["days_in_month"]
    series: dict[str, dict[str, dict[str, Any]]] = days["series"]
    endpoints = sorted(series)
    totals = [
        sum(series[e].get(f"{month}-{d:02d}", {}).get(measure, 0) for e in endpoints)
        for d in range(1, count + 1)
    ]
    top = _nice(max(totals, default=0)) if measure == "tokens" else _nice_usd(max(totals, default=0.0))
    plot_w, plot_h = WIDTH - LEFT - 8, HEIGHT - BOTTOM - TOP
    slot = plot_w / count
    bars: list[Bar] = []
    for d in range(1, count + 1):
        y = float(TOP + plot_h)
        for index, endpoint in enumerate(endpoints):
            figures = series[endpoint].get(f"{month}-{d:02d}", {})
            amount = figures.get(measure, 0)
            if not amount:
                continue
            h = plot_h * amount / top
            y -= h
            bars.append(
                Bar(
                    x=round(LEFT + (d - 1) * slot + slot * 0.15, 1),
                    y=round(y, 1),
                    width=round(slot * 0.7, 1),
                    height=round(h, 1),
                    series=index % PALETTE_SIZE,
                    title=f"{endpoint}, {month}-{d:02d}: {_figure(measure, figures)}",
                )
            )
    label = _short if measure == "tokens" else _dollars
    ticks = [(round(TOP + plot_h * (1 - f), 1), label(top * f)) for f in (0, 0.5, 1)]
    labels = [
        (round(LEFT + (d - 0.5) * slot, 1), str(d)) for d in range(1, count + 1) if d == 1 or d % 5 == 0
    ]
    return Chart(
        width=WIDTH,
        height=HEIGHT,
        bars=bars,
        ticks=ticks,
        days=labels,
        legend=[(i % PALETTE_SIZE, e) for i, e in enumerate(endpoints)],
        baseline=TOP + plot_h,
        empty=not bars,
    )


def _nice(value: int) -> int:
    """The scale's top: the next 1, 2 or 5 times a power of ten (at least 10)."""
    step = 10
    while True:
        for factor in (1, 2, 5):
            if value <= step * factor:
                return step * factor
        step *= 10


def _nice_usd(value: float) -> float:
    """A USD scale's top: the next 1, 2 or 5 times a power of ten (at least
    $0.0001: a day of a few cheap calls still shows)."""
    step = 0.0001
    while True:
        for factor in (1, 2, 5):
            if value <= step * factor * (1 + 1e-9):
                return round(step * factor, 10)
        step *= 10


def _figure(measure: Measure, figures: dict[str, Any]) -> str:
    """A bar's title: "1,234 tokens", or "$0.42" (and the calls of an unknown price)."""
    if measure == "tokens":
        return f"{figures.get('tokens', 0):,} tokens"
    unpriced = figures.get("unpriced", 0)
    return _dollars(figures.get("usd", 0.0)) + (f" + {unpriced} calls of unknown price" if unpriced else "")


def _dollars(value: float) -> str:
    if value == 0:
        return "$0"
    if value >= 1:
        return f"${value:,.2f}"
    return "$" + f"{value:.6f}".rstrip("0").rstrip(".")


def _short(value: float) -> str:
    for size, suffix in ((1_000_000, "M"), (1_000, "k")):
        if value >= size:
            return f"{value / size:g}{suffix}"
    return f"{value:g}"
