"""The Ask page with a quorum and a merger's report, in a real browser
(headless Chromium): a seat cut by the collection's quorum shows as cut,
and the merger's checked report stands beside the seats, each point with
the seats on its side (as Seat A/B, as the page names them)."""

from __future__ import annotations

import json
import threading
from pathlib import Path
from typing import Any

import pytest

from benchwarmers.testing import FakeModel, FakeProvider
from benchwarmers.testing.script import merger
from tests.conftest import capable
from tests.dashboard.test_browser_judging import bench, card

expect = pytest.importorskip("playwright.sync_api").expect
pytestmark = [pytest.mark.integration, pytest.mark.timeout(240)]


def report(request: Any) -> str:
    """A report naming the letters the merger was shown, whichever they are."""
    letters = [block.partition("\n")[0].strip() for block in request.prompt.split("## Seat ")[1:]]
    sides = [
        {"position": "it is blue", "seats": letters[:1]},
        {"position": "it is grey", "seats": letters[1:]},
    ]
    return json.dumps(
        {
            "consensus": ["the sky has a colour"],
            "contradictions": [{"point": "which colour", "sides": sides}],
            "unique": [{"point": "Rayleigh scattering", "seat": letters[0], "right": True}],
            "gaps": ["sunsets"],
            "confidence": 0.9,
        }
    )


def test_the_merge_report_stands_beside_the_seats_and_a_cut_seat_says_so(
    browser: Any, artifacts: Path, home: Path, fake_provider: FakeProvider
) -> None:
    models = [
        FakeModel("alpha", answer=merger(capable, report)),
        FakeModel("beta", answer=merger(capable, report)),
        FakeModel("gamma", answer=capable),
    ]
    with bench(browser, home, fake_provider, models, quorum=2, on_cut="cancel") as b:
        page = b.page
        hold = threading.Event()
        fake_provider.models["gamma"].hold = hold  # onboarded: from now on it waits for the test
        watchdog = threading.Timer(60, hold.set)
        watchdog.start()
        try:
            page.check("#f-merged")
            b.ask("Why is the sky blue?")
            page.locator("#ask-state >> text=Done.").wait_for()
            assert not hold.is_set()
        finally:
            hold.set()
            watchdog.cancel()
        expect(card(page, "gamma").locator(".status")).to_have_text("cancelled")
        expect(card(page, "gamma")).to_contain_text("quorum 2 of 3 reached")
        merged = page.locator("#conversation .merged-card")
        found = merged.locator(".merge-report")
        expect(found).to_be_visible()
        expect(found).to_contain_text("Confidence 90%")
        expect(found).to_contain_text("the sky has a colour")
        expect(found.locator("text=which colour")).to_be_visible()
        expect(found).to_contain_text("Rayleigh scattering")
        expect(found).to_contain_text("judged right")
        expect(found).to_contain_text("sunsets")
        assert "Seat " in found.inner_text()  # seats by the page's labels, never the models' names
        page.screenshot(path=str(artifacts / "ask-merge-report.png"), full_page=True)
        assert b.watch.take() == []
