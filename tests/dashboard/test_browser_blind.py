"""Blind per ask in a real browser (headless Chromium): the Ask page's Blind
toggle makes one ask blind in a collection that is not (or not blind in one
that is), and Recent asks keep to it (`calls.blind`, `dashboard/blind.py`):
the ask asked blind names no model there until it is judged, the one asked
with names shows them."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from benchwarmers.testing import FakeModel, FakeProvider
from tests.conftest import capable
from tests.dashboard.test_browser_judging import bench

expect = pytest.importorskip("playwright.sync_api").expect
pytestmark = [pytest.mark.integration, pytest.mark.timeout(240)]

NAMES = ("alpha", "beta")


def test_an_ask_made_blind_by_the_toggle_stays_blind_in_recent_asks_until_judged(
    browser: Any, artifacts: Path, home: Path, fake_provider: FakeProvider
) -> None:
    """Before, Recent asks named the models of an ask asked blind in a
    collection that is not blind at once: judging it there followed brands."""
    models = [FakeModel(name, answer=capable) for name in NAMES]
    with bench(browser, home, fake_provider, models) as b:
        page = b.page
        shut = {"name": "shut", "members": list(NAMES), "blind": True}
        assert b.client.post("/ui/api/collections", json=shut).status_code == 200
        page.reload()
        page.locator('body[data-ready="Ask"]').wait_for(state="attached")
        page.select_option("#f-collection", "trio")
        assert not page.is_checked("#f-blind")
        page.check("#f-blind")
        b.ask("Who is who?")
        page.locator("#ask-state >> text=Done.").wait_for()
        expect(page.locator("#conversation .seat-card")).to_have_count(2)
        assert page.locator("#conversation .seat-card[data-alias]").count() == 0
        (listed,) = b.client.get("/ui/api/asks").json()["asks"]
        assert listed["hidden"] is True and not any(n in str(listed) for n in NAMES)

        page.locator("header nav").get_by_role("link", name="Collections", exact=True).click()
        ask = page.locator("#asks article.ask").first
        cards = ask.locator(".seat-card")
        expect(cards).to_have_count(2)
        assert ask.locator(".seat-card[data-alias]").count() == 0
        assert not any(name in page.inner_text("#recent") for name in NAMES)
        page.screenshot(path=str(artifacts / "recent-asks-blind-by-toggle.png"), full_page=True)
        cards.nth(0).get_by_role("button", name="Useful", exact=True).click()
        expect(cards.nth(0).locator(".judge-state")).to_contain_text("useful")
        assert ask.locator(".seat-card[data-alias]").count() == 0
        cards.nth(1).get_by_role("button", name="Not useful", exact=True).click()
        expect(ask.locator(".seat-card[data-alias]")).to_have_count(2)
        assert {cards.nth(i).get_attribute("data-alias") for i in range(2)} == set(NAMES)

        # Unticked in a blind collection, the ask shows its names in Recent asks too.
        page.locator("header nav").get_by_role("link", name="Ask", exact=True).click()
        page.locator('body[data-ready="Ask"]').wait_for(state="attached")
        page.select_option("#f-collection", "shut")
        assert page.is_checked("#f-blind")
        page.uncheck("#f-blind")
        b.ask("And now?")
        page.locator("#ask-state >> text=Done.").wait_for()
        expect(page.locator("#conversation .seat-card[data-alias]")).to_have_count(2)
        page.locator("header nav").get_by_role("link", name="Collections", exact=True).click()
        newest = page.locator("#asks article.ask").first
        expect(newest.locator(":scope > header strong")).to_have_text("bench/shut")
        expect(newest.locator(".seat-card[data-alias]")).to_have_count(2)
        assert b.watch.take() == []
