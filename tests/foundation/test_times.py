"""Stored moments leave the store as aware UTC, whatever the database did."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone

from benchwarmers.store.times import iso_utc, utc


def test_a_naive_moment_is_read_as_utc_and_an_aware_one_converted() -> None:
    naive = datetime(2026, 5, 1, 12, 0, 0)
    assert utc(naive) == datetime(2026, 5, 1, 12, 0, 0, tzinfo=UTC)
    paris = datetime(2026, 5, 1, 14, 0, 0, tzinfo=timezone(timedelta(hours=2)))
    assert utc(paris).tzinfo is UTC and utc(paris) == utc(naive)


def test_iso_utc_always_carries_the_offset() -> None:
    assert iso_utc(datetime(2026, 5, 1, 12, 0, 0)) == "2026-05-01T12:00:00+00:00"
    assert iso_utc(datetime(2026, 5, 1, 7, 0, tzinfo=timezone(timedelta(hours=-5)))) == (
        "2026-05-01T12:00:00+00:00"
    )
    assert iso_utc(None) is None
