"""The one duration reader both the provider boundary and the limits layer use."""

from __future__ import annotations

import pytest

from benchwarmers.durations import parse_duration

pytestmark = pytest.mark.unit


@pytest.mark.parametrize(
    ("text", "seconds"),
    [
        ("6m0s", 360.0),  # OpenAI's x-ratelimit-reset-*
        ("1.5s", 1.5),  # Gemini's RetryInfo.retryDelay
        ("500us", 0.0005),
        ("250µs", 0.00025),
        ("2 hrs", 7200.0),
        ("2 minutes 3 seconds", 123.0),
        ("1 minute and 5 seconds", 65.0),
        ("1 min, 30 sec", 90.0),
        ("20 MS", 0.02),
        ("-5", 0.0),  # a bare number is seconds, never negative
    ],
)
def test_every_style_reads_the_same_way(text: str, seconds: float) -> None:
    assert parse_duration(text) == pytest.approx(seconds)


@pytest.mark.parametrize("text", ["", "soon", "5 parsecs", "m5", "-1s", "3 minutes or so", "1mo"])
def test_what_is_not_a_duration(text: str) -> None:
    assert parse_duration(text) is None
