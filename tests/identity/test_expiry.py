"""Expiry and grace as the owner writes them: dates, times from now, never;
mistakes (a past moment, a non-date, a negative grace) refused, saying so."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from benchwarmers.errors import UserError
from benchwarmers.identity.expiry import parse_expiry, parse_grace, show

pytestmark = pytest.mark.unit

NOW = datetime(2026, 12, 4, 13, 0, tzinfo=UTC)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("2027-01-31", datetime(2027, 1, 31, tzinfo=UTC)),
        ("2027-01-31T12:30:00+02:00", datetime(2027, 1, 31, 10, 30, tzinfo=UTC)),
        ("2027-01-31T12:30", datetime(2027, 1, 31, 12, 30, tzinfo=UTC)),
        ("30d", NOW + timedelta(days=30)),
        ("12h", NOW + timedelta(hours=12)),
        ("2w", NOW + timedelta(weeks=2)),
        (" 90m ", NOW + timedelta(minutes=90)),
        ("1h30m", NOW + timedelta(minutes=90)),
        ("never", None),
        ("", None),
    ],
)
def test_an_expiry_is_a_date_a_time_from_now_or_never(text: str, expected: datetime | None) -> None:
    assert parse_expiry(text, NOW) == expected


@pytest.mark.parametrize(
    ("text", "says"),
    [
        ("2026-12-03", "is in the past (2026-12-03 00:00 UTC)"),
        ("2026-12-04", "is in the past"),  # that day began before now
        ("2027-02-30", "is not a date"),
        ("soon", "is not a date"),
        ("-3d", "is not in the future"),
        ("0d", "is not in the future"),
        ("30", "needs its unit"),
    ],
)
def test_a_bad_expiry_says_what_is_wrong(text: str, says: str) -> None:
    with pytest.raises(UserError, match="expiry") as refused:
        parse_expiry(text, NOW)
    assert says in str(refused.value)


@pytest.mark.parametrize(
    ("text", "seconds"),
    [
        ("0", 0.0),
        ("1h", 3600.0),
        ("30m", 1800.0),
        ("2d", 172800.0),
        ("90", 90.0),
        ("45s", 45.0),
        ("1h30m", 5400.0),
        ("2 hours", 7200.0),
    ],
)
def test_a_grace_is_a_time(text: str, seconds: float) -> None:
    assert parse_grace(text) == seconds


@pytest.mark.parametrize(
    ("text", "says"),
    [("-1h", "is negative"), ("-5", "is negative"), ("-1h30m", "is negative"), ("an hour", "not a time")],
)
def test_a_bad_grace_says_what_is_wrong(text: str, says: str) -> None:
    with pytest.raises(UserError, match=says):
        parse_grace(text)


def test_moments_read_in_utc() -> None:
    assert show(datetime(2027, 1, 31, 2, 5, tzinfo=UTC)) == "2027-01-31 02:05 UTC"
