"""The core's views: front ends get these, never rows, and one spelling of
each view's JSON serves the routes, the dashboard and the CLI."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from benchwarmers import core
from benchwarmers.core.views import model_json, onboarding_view, probe_json, probe_view
from benchwarmers.store import schema
from benchwarmers.store.times import iso_utc

pytestmark = pytest.mark.unit


def test_the_facade_exports_no_database_row() -> None:
    rows = {mapper.class_ for mapper in schema.Base.registry.mappers}
    exported = [getattr(core, name) for name in core.__all__]
    assert sorted(c.__name__ for c in rows if any(c is e for e in exported)) == []


def test_a_probe_row_becomes_a_view_and_its_json() -> None:
    at = datetime(2026, 12, 4, 12, 0, tzinfo=UTC)
    row = schema.Probe(
        alias="bee",
        call_id="c-1",
        kind="daily",
        name="word",
        at=at,
        answered=True,
        limited=False,
        ok=False,
        seconds=1.23456,
        first_byte_seconds=None,
        tokens_per_second=None,
        answer="hi",
        error="",
    )
    view = probe_view(row)
    assert (view.alias, view.answered, view.passed, view.limited) == ("bee", True, False, False)
    assert probe_json(view) == {
        "at": iso_utc(at),
        "kind": "daily",
        "name": "word",
        "answered": True,
        "passed": False,
        "call": "c-1",
        "seconds": 1.235,
        "first_byte_seconds": None,
        "tokens_per_second": None,
        "answer": "hi",
        "error": "",
    }


def test_an_onboarding_item_becomes_a_view_with_aware_times() -> None:
    row = schema.OnboardingItem(
        id=3,
        endpoint="hub",
        served="m",
        alias="m",
        role="",
        mode="quick",
        state="queued",
        not_before=datetime(2026, 12, 4, 12, 0),
        step="",
        progress=0.0,
        error="",
        created_at=datetime(2026, 12, 4, 11, 0),
    )
    view = onboarding_view(row)
    assert (view.id, view.state, view.mode) == (3, "queued", "quick")
    assert view.not_before is not None and view.not_before.tzinfo is not None


def test_a_model_is_spelled_once_for_every_front_end() -> None:
    from benchwarmers.dashboard import backend
    from benchwarmers.server.routes import bench_ops

    assert backend.model_json is model_json and bench_ops.model_json is model_json
