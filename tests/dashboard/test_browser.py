"""The dashboard in a real browser (headless Chromium): a new user's whole
first session, then every page from the navigation with a screenshot each.

One test on purpose: the journey builds the bench the tour then shows, and
a browser start is the expensive part.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import httpx
import openai
import pytest

from benchwarmers.testing import FakeModel, FakeProvider
from benchwarmers.testing.live_server import live_server
from tests.conftest import capable

expect = pytest.importorskip("playwright.sync_api").expect
pytestmark = pytest.mark.timeout(240)

NAV = ["Endpoints", "Bench", "Onboard", "Collections", "Ask", "Leaderboard", "Quotas", "Settings"]
WAIT = 30_000  # ms: generous, for a loaded machine; nothing here asserts a duration


class Watch:
    """Every script error, console error, failed request and 4xx/5xx answer the page met."""

    def __init__(self, page: Any) -> None:
        self.problems: list[str] = []
        page.on("pageerror", lambda error: self.problems.append(f"script error: {error}"))
        page.on(
            "console",
            lambda msg: (
                self.problems.append(f"console {msg.type}: {msg.text}") if msg.type == "error" else None
            ),
        )
        page.on("requestfailed", self.failed)
        page.on(
            "response",
            lambda res: (
                self.problems.append(f"{res.status}: {res.request.method} {res.url}")
                if res.status >= 400
                else None
            ),
        )

    def failed(self, request: Any) -> None:
        # Leaving a page cancels its polls in flight (GET, net::ERR_ABORTED): the browser's doing,
        # not a failure. Any other failure, and any cancelled change (POST), counts.
        if request.method == "GET" and request.failure == "net::ERR_ABORTED":
            return
        self.problems.append(f"failed: {request.method} {request.url} {request.failure}")

    def console(self, kind: str, text: str) -> None:
        if kind == "error":
            self.problems.append(f"console error: {text}")

    def refusals(self) -> list[str]:
        """The 4xx answers met since the last look (Chromium also logs each
        to the console, "Failed to load resource"); anything else is kept."""
        problems = self.take()
        kept = [p for p in problems if not p.startswith(("4", "console error: Failed to load resource"))]
        self.problems.extend(kept)
        return [p for p in problems if p.startswith("4")]

    def take(self) -> list[str]:
        problems, self.problems = self.problems, []
        return problems

    def take_after(self, page: Any, count: int, timeout_ms: int = 5_000) -> list[str]:
        """`take`, once `count` problems were met or `timeout_ms` passed: a
        request the page aborted (Stop) reaches these listeners some time
        after what the page drew of it, later on a loaded box."""
        for _ in range(timeout_ms // 50):
            if len(self.problems) >= count:
                break
            page.wait_for_timeout(50)
        return self.take()


def go(page: Any, label: str) -> None:
    """Open a page from the navigation and wait for its script to be ready."""
    page.locator("header nav").get_by_role("link", name=label, exact=True).click()
    page.locator(f'body[data-ready="{label}"]').wait_for(state="attached")


def test_a_new_user_runs_the_bench_from_the_dashboard(
    browser: Any,
    artifacts: Path,
    home: Path,
    fake_provider: FakeProvider,
    quick_suite: None,
) -> None:
    fake_provider.key = "sk-fake-provider"
    fake_provider.add(FakeModel("alpha", answer=capable, latency=0.02))
    fake_provider.add(FakeModel("beta", answer=capable))
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    page = context.new_page()
    page.set_default_timeout(WAIT)
    watch = Watch(page)
    with live_server(home) as server:
        base = server.url

        # With no endpoint yet, the dashboard opens on adding one.
        page.goto(base + "/")
        assert page.url.endswith("/endpoints?add=1")
        assert page.evaluate("document.activeElement.name") == "name"
        page.screenshot(path=str(artifacts / "first-visit.png"), full_page=True)

        # Bad input: a message beside the field, nothing saved.
        page.fill("#f-name", "Not A Name")
        page.fill("#f-base_url", fake_provider.openai_base)
        page.fill("#f-key", "sk-fake-provider")
        page.click("#add-endpoint button[type=submit]")
        name_error = page.locator('#add-endpoint [data-error-for="name"]')
        expect(name_error).to_contain_text("not valid")
        assert page.get_attribute("#f-name", "aria-invalid") == "true"
        assert httpx.get(base + "/ui/api/endpoints").json()["endpoints"] == []
        assert watch.refusals() == [f"400: POST {base}/ui/api/endpoints"]

        # The fake provider, with its key pasted.
        page.fill("#f-name", "fake")
        page.select_option("#f-api", "openai")
        page.click("#add-endpoint button[type=submit]")
        page.wait_for_url(re.compile(r"/onboard\?endpoint=fake$"))

        # Discover: the long list is searched, not scrolled.
        page.fill("#discover-search", "gemini flash")
        expect(page.locator("#discover-state")).to_contain_text("match")
        expect(page.locator("#discover-list")).to_contain_text("Gemini")
        assert 0 < page.locator("#discover-list li").count() <= 30
        page.fill("#discover-search", "")

        # Onboard two models: alpha Full, beta Quick; the queue and the chip follow them.
        page.locator('#listed input[value="alpha"]').check()
        page.click('#onboard button[value="full"]')
        page.locator("#onboard-chip:not([hidden])").wait_for()
        expect(page.locator("#onboard-chip")).to_contain_text("Onboarding")
        page.locator('#listed input[value="beta"]').check()
        page.click('#onboard button[value="quick"]')
        page.locator('#queue-table tr[data-state="done"] >> text=alpha').wait_for(timeout=90_000)
        page.locator('#queue-table tr[data-state="done"] >> text=beta').wait_for(timeout=90_000)
        page.locator("#onboard-chip[hidden]").wait_for(state="attached")
        modes = [r.inner_text() for r in page.locator("#queue-table tbody tr td:nth-child(3)").all()]
        assert sorted(modes) == ["full", "quick"]

        # A collection: first without members (refused beside the field), then right.
        go(page, "Collections")
        form = page.locator("#new-collection form")
        form.locator('input[name="name"]').fill("trio")
        form.locator("button[type=submit]").click()
        expect(form.locator('[data-error-for="members"]')).to_contain_text("at least one member")
        assert httpx.get(base + "/ui/api/collections").json()["collections"] == []
        assert watch.refusals() == [f"400: POST {base}/ui/api/collections"]
        form.locator('input[name="members"][value="alpha"]').check()
        form.locator('input[name="members"][value="beta"]').check()
        form.locator('input[name="purpose"]').fill("two fakes")
        form.locator("button[type=submit]").click()
        page.locator('section[data-collection="trio"]').wait_for()

        # Ask it from the Ask page: seats side by side as they finish.
        go(page, "Ask")
        page.fill("#f-prompt", "What is a benchwarmer?")
        page.click("#ask-form button[type=submit]")
        page.locator("#ask-state >> text=Done.").wait_for()
        cards = page.locator("#conversation .seat-card.s-ok")
        assert cards.count() == 2
        answers = sorted(cards.locator(".answer").all_inner_texts())
        assert answers == ["An answer from alpha.", "An answer from beta."]
        page.screenshot(path=str(artifacts / "ask-answered.png"), full_page=True)

        # And from the official openai client.
        client = openai.OpenAI(base_url=base + "/v1", api_key="anything")
        reply = client.chat.completions.create(
            model="bench/trio", messages=[{"role": "user", "content": "And from a client?"}]
        )
        assert "alpha" in (reply.choices[0].message.content or "")

        # Collections shows both asks with their seats, each judged where it stands.
        go(page, "Collections")
        asks = page.locator("#asks article.ask")
        asks.nth(1).wait_for()
        assert asks.count() == 2
        assert asks.nth(0).locator(".seat-card").count() == 2
        record = page.locator('table[data-record="trio"]')
        assert "No verdicts yet" in record.inner_text()
        # By keyboard: focus the seat, E for a note, type it, Esc back to the seat, U for useful.
        seat = asks.nth(0).locator('.seat-card[data-alias="alpha"]')
        seat.focus()
        page.keyboard.press("e")
        page.keyboard.type("clear and right")
        page.keyboard.press("Escape")
        page.keyboard.press("u")
        expect(seat.locator(".judge-state")).to_contain_text("useful — “clear and right”")
        page.locator('table[data-record="trio"] tr[data-alias="alpha"] td.useful >> text=1').wait_for()
        recorded = httpx.get(base + "/bench/record", params={"collection": "bench/trio"}).json()
        assert recorded["aliases"]["alpha"]["useful"] == 1
        assert recorded["aliases"].get("beta", {}).get("judged", 0) == 0
        assert watch.take() == []

        # Every page opens from the navigation, with no script error and no failed request.
        shots = []
        for label in NAV:
            go(page, label)
            page.wait_for_load_state("networkidle")
            assert page.locator('nav a[aria-current="page"]').inner_text() == label
            shot = artifacts / f"{label.lower()}.png"
            page.screenshot(path=str(shot), full_page=True)
            shots.append(shot)
            assert watch.take() == [], label
        go(page, "Bench")
        page.click("#models a >> text=alpha")
        page.wait_for_load_state("networkidle")
        page.screenshot(path=str(artifacts / "model.png"), full_page=True)
        assert "Record" in page.inner_text("main")
        assert watch.take() == []

        # A phone's width, in the dark scheme.
        phone = browser.new_context(viewport={"width": 390, "height": 844}, color_scheme="dark")
        small = phone.new_page()
        small.goto(base + "/collections")
        small.wait_for_load_state("networkidle")
        small.screenshot(path=str(artifacts / "collections-phone-dark.png"), full_page=True)
        width = small.evaluate("document.documentElement.scrollWidth")
        assert width <= 390, f"the page is {width}px wide on a 390px phone"
        phone.close()
    context.close()
    print("screenshots:", ", ".join(str(s) for s in shots))
