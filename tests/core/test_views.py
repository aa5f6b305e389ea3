"""The core's views: front ends get these, never rows, and one spelling of
each view's JSON serves the routes, the dashboard and the CLI."""

from __future__ import annotations

import inspect
import re
from datetime import UTC, datetime

import pytest

from benchwarmers import core
from benchwarmers.core.views import endpoint_json, model_json, onboarding_view, probe_json, probe_view
from benchwarmers.runtime import Runtime
from benchwarmers.store import schema
from benchwarmers.store.times import iso_utc
from benchwarmers.store.views import EndpointView

pytestmark = pytest.mark.unit


def test_the_facade_exports_no_database_row() -> None:
    rows = {mapper.class_ for mapper in schema.Base.registry.mappers}
    exported = [getattr(core, name) for name in core.__all__]
    assert sorted(c.__name__ for c in rows if any(c is e for e in exported)) == []


def test_no_front_end_is_handed_the_runtime_or_a_row() -> None:
    """Not exported, nor returned by a service (each public method's return
    annotation, read word by word)."""
    assert [name for name in core.__all__ if getattr(core, name) is Runtime] == []
    rows = {mapper.class_.__name__ for mapper in schema.Base.registry.mappers}
    services = (core.Panels, core.RouteMode, core.Admin, core.Spend, core.Operations)
    services += (core.Core, core.CoreHandle)
    leaks = [
        f"{service.__name__}.{name} -> {returned}"
        for service in services
        for name, method in inspect.getmembers(service, inspect.isfunction)
        if not name.startswith("_")
        for returned in [str(inspect.signature(method).return_annotation)]
        if {"schema", "Runtime", *rows} & set(re.findall(r"\w+", returned))
    ]
    assert leaks == []


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


def test_an_endpoint_says_where_its_key_comes_from_never_the_key(monkeypatch: pytest.MonkeyPatch) -> None:
    from benchwarmers.cli import endpoints as cli_endpoints
    from benchwarmers.dashboard import backend

    assert backend.endpoint_json is endpoint_json and cli_endpoints.endpoint_json is endpoint_json
    created = datetime(2026, 12, 4, 12, 0)
    hub = EndpointView("hub", "https://hub.example/v1", "openai", False, True, created)
    local = EndpointView("local", "http://127.0.0.1:11434", "ollama", False, False, created)
    monkeypatch.delenv("BENCHWARMERS_KEY_HUB", raising=False)
    assert endpoint_json(hub, 2) == {
        "name": "hub",
        "base_url": "https://hub.example/v1",
        "api": "openai",
        "simulated": False,
        "needs_key": True,
        "created_at": "2026-12-04T12:00:00+00:00",
        "limit_scope": "",
        "key": "missing",
        "models": 2,
    }
    monkeypatch.setenv("BENCHWARMERS_KEY_HUB", "sk-never-shown")
    assert endpoint_json(hub, 2)["key"] == "BENCHWARMERS_KEY_HUB"
    assert "sk-never-shown" not in str(endpoint_json(hub, 2))
    assert endpoint_json(local, 0)["key"] == "not needed"
