"""The Quotas page's chart: tokens per endpoint per day of the month, as SVG we draw.

No chart library: a few dozen lines of arithmetic give stacked bars, one
colour per endpoint (from the stylesheet's palette, so the dark scheme
applies), day numbers along the bottom and a scale on the left. The SVG
carries a `<title>` per bar, so a pointer (or a screen reader) reads the
figures, and a table beside it on the page holds the same numbers.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

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


def usage_chart(days: dict[str, Any]) -> Chart:
    """`days` is `Backend.usage_by_day()`: month, days_in_month, series."""
    month: str = days["month"]
    count: int = days["days_in_month"]
    series: dict[str, dict[str, dict[str, int]]] = days["series"]
    endpoints = sorted(series)
    totals = [
        sum(series[e].get(f"{month}-{d:02d}", {}).get("tokens", 0) for e in endpoints)
        for d in range(1, count + 1)
    ]
    top = _nice(max(totals, default=0))
    plot_w, plot_h = WIDTH - LEFT - 8, HEIGHT - BOTTOM - TOP
    slot = plot_w / count
    bars: list[Bar] = []
    for d in range(1, count + 1):
        y = float(TOP + plot_h)
        for index, endpoint in enumerate(endpoints):
            tokens = series[endpoint].get(f"{month}-{d:02d}", {}).get("tokens", 0)
            if not tokens:
                continue
            h = plot_h * tokens / top
            y -= h
            bars.append(
                Bar(
                    x=round(LEFT + (d - 1) * slot + slot * 0.15, 1),
                    y=round(y, 1),
                    width=round(slot * 0.7, 1),
                    height=round(h, 1),
                    series=index % PALETTE_SIZE,
                    title=f"{endpoint}, {month}-{d:02d}: {tokens:,} tokens",
                )
            )
    ticks = [(round(TOP + plot_h * (1 - f), 1), _short(top * f)) for f in (0, 0.5, 1)]
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


def _short(value: float) -> str:
    for size, suffix in ((1_000_000, "M"), (1_000, "k")):
        if value >= size:
            return f"{value / size:g}{suffix}"
    return f"{value:g}"
