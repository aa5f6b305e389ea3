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
from benchwarmers.store.models import set_status
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
        await set_status(runtime.store, "two", "resting", reason=LONG_REASON, resting_until=until)


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


async def _queue_with_a_mute_and_a_waiting_item(home: Path) -> None:
    from benchwarmers.bench import onboarding
    from benchwarmers.bench.onboarding import OnboardRequest
    from benchwarmers.calls.caller import Caller
    from benchwarmers.store.schema import OnboardingItem

    async with Runtime.open(home) as runtime:
        ids = await onboarding.enqueue(runtime.store, [OnboardRequest("hub", "mute", "quick")])
        await onboarding.drain(runtime, Caller(runtime), suite=None, only=set(ids))
        [waiting] = await onboarding.enqueue(runtime.store, [OnboardRequest("hub", "later", "quick")])
        async with runtime.store.write() as session:
            row = await session.get(OnboardingItem, waiting)
            assert row is not None
            row.not_before = datetime.now(UTC) + timedelta(hours=8)  # resting after a 429


def test_the_onboarding_queue_cancels_says_failures_and_never_queues_twice(
    browser: Any, artifacts: Path, home: Path, fake_provider: FakeProvider
) -> None:
    fake_provider.add(FakeModel("slow", answer=capable, latency=3.0))
    fake_provider.add(FakeModel("mute", error=FakeError(status=500, message="upstream exploded")))
    fake_provider.add(FakeModel("later", answer=capable))

    def set_up() -> None:
        cli("endpoint", "add", "hub", fake_provider.openai_base, "--keyless")
        asyncio.run(_queue_with_a_mute_and_a_waiting_item(home))

    off_thread(set_up)
    page = browser.new_context(viewport={"width": 1280, "height": 900}).new_page()
    page.set_default_timeout(WAIT)
    with live_server(home) as server:
        page.goto(server.url + "/onboard?endpoint=hub")
        mute = page.locator("#queue-table tr", has_text="mute")
        expect(mute.locator(".status")).to_have_text("no answer")  # not a green "done"
        assert "q-unavailable" in mute.locator(".status").get_attribute("class")
        expect(mute).to_contain_text("upstream exploded")
        waiting = page.locator("#queue-table tr", has_text="later")
        expect(waiting.locator(".status")).to_have_text("waiting")
        expect(waiting).to_contain_text(re.compile(r"until \d{4}-\d\d-\d\d \d\d:\d\d UTC"))
        assert not ISO.search(page.locator("#queue-table").inner_text())  # readable times only
        expect(page.locator("#onboard-chip")).to_be_hidden()  # a wait for a rate limit is not onboarding
        later_box = page.locator('#listed input[value="later"]')
        expect(later_box).to_be_disabled()  # already queued: cannot be ticked again

        page.locator('#listed input[value="slow"]').check()
        page.get_by_role("button", name=re.compile("^Quick$")).click()
        slow = page.locator("#queue-table tr", has_text="slow")
        expect(slow.get_by_role("button", name=re.compile("Cancel"))).to_be_visible()
        expect(page.locator("#onboard-chip")).to_be_visible()
        expect(page.locator("#listed li", has_text="slow")).to_contain_text("in the queue")
        expect(page.locator('#listed input[value="slow"]')).to_be_disabled()
        page.screenshot(path=str(artifacts / "round-two-queue-running.png"), full_page=True)
        slow.get_by_role("button", name=re.compile("Cancel")).click()
        expect(slow.locator(".status")).to_have_text("cancelled")
        expect(page.locator("#onboard-chip")).to_be_hidden()
        listed_slow = page.locator("#listed li", has_text="slow")
        expect(listed_slow).not_to_contain_text(
            "in the queue"
        )  # out of the queue (registered, so on the bench)
        waiting.get_by_role("button", name=re.compile("Cancel")).click()
        expect(waiting.locator(".status")).to_have_text("cancelled")
        page.screenshot(path=str(artifacts / "round-two-queue.png"), full_page=True)


def test_quotas_and_the_model_page_change_limits_and_the_bench_follows(
    browser: Any, artifacts: Path, home: Path, fake_provider: FakeProvider
) -> None:
    """Item 14: from the browser alone, the endpoint's used-up limit is
    forgotten (the Bench shows its models available again), a limit is set
    on a model and cleared, and the endpoint's scope is changed."""
    for served in ("one", "two"):
        fake_provider.add(FakeModel(served, answer=capable))
    until = datetime.now(UTC) + timedelta(hours=3)

    def set_up() -> None:
        cli("endpoint", "add", "hub", fake_provider.openai_base, "--keyless")
        for served in ("one", "two"):
            cli("model", "add", served, "-e", "hub", "-s", served)
        asyncio.run(_endpoint_used_up(home, until))

    off_thread(set_up)
    page = browser.new_context(viewport={"width": 1280, "height": 900}).new_page()
    page.set_default_timeout(WAIT)
    page.on("dialog", lambda dialog: dialog.accept())
    with live_server(home) as server:
        page.goto(server.url + "/models/one")
        limits = page.locator("#model-limit-list")
        expect(limits).to_contain_text("429 body")
        page.fill("#f-limit-amount", "40")
        page.select_option("#f-limit-kind", "rpd")
        page.get_by_role("button", name="Set on this model").click()
        mine = page.locator('#model-limit-list tr[data-limit="hub|one|requests|day|set"]')
        expect(mine).to_contain_text("40 requests / day")
        page.fill("#f-limit-amount", "0")
        page.get_by_role("button", name="Set on this model").click()
        expect(page.locator('#limit-form [data-error-for="amount"]')).to_contain_text("at least 1")
        mine.get_by_role("button", name="Clear").click()
        expect(mine).to_have_count(0)
        page.screenshot(path=str(artifacts / "round-two-model-limits.png"), full_page=True)

        page.goto(server.url + "/quotas")
        learned = page.locator('#quotas tr[data-limit="hub||requests|day|429 body"]')
        expect(learned).to_have_count(1)
        page.select_option("#f-scope-hub", "model")
        expect(page.locator("#limit-controls .scopes")).to_contain_text("now: model (set)")
        learned.get_by_role("button", name="Forget").click()
        expect(learned).to_have_count(0)
        page.select_option("#f-limit-endpoint", "hub")
        page.fill("#f-limit-model", "two")
        page.select_option("#f-limit-kind", "tpm")
        page.fill("#f-limit-amount", "900")
        page.get_by_role("button", name="Set limit").click()
        expect(page.locator('#quotas tr[data-limit="hub|two|tokens|minute|set"]')).to_contain_text(
            "900 tokens"
        )
        page.screenshot(path=str(artifacts / "round-two-quotas-controls.png"), full_page=True)

        page.goto(server.url + "/models")
        expect(page.locator('tr[data-alias="one"] .status')).to_have_text("available")
