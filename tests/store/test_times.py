"""Stored moments leave the store as aware UTC, whatever the database did."""

from __future__ import annotations

import inspect
from datetime import UTC, datetime, timedelta, timezone
from types import ModuleType, SimpleNamespace

import pytest

from benchwarmers.calls import verdicts
from benchwarmers.limits import rest
from benchwarmers.panel import seating
from benchwarmers.panel.seating import unfit_reason
from benchwarmers.store import views
from benchwarmers.store.times import iso_utc, utc

pytestmark = pytest.mark.unit


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


def test_a_resting_model_says_until_when_in_utc() -> None:
    """Whatever zone a moment arrives in, a person reads it in UTC."""
    resting = SimpleNamespace(
        role="chat",
        status="resting",
        status_reason="",
        resting_until=datetime(2026, 5, 1, 14, 0, 0, tzinfo=timezone(timedelta(hours=2))),
    )
    now = datetime(2026, 5, 1, 11, 0, 0, tzinfo=UTC)
    reason = unfit_reason(resting, SimpleNamespace(has_images=False), 0, now)  # type: ignore[arg-type]
    assert reason == "resting until 2026-05-01T12:00:00+00:00 (rate limited)"


@pytest.mark.parametrize("module", [views, verdicts, seating, rest])
def test_modules_read_stored_moments_through_store_times(module: ModuleType) -> None:
    """One way to make a stored moment aware: `store.times.utc`, no private copies."""
    source = inspect.getsource(module)
    assert "tzinfo" not in source
    assert module.utc is utc
