"""Issue 40's browser items, each in headless Chromium with a screenshot:
the Quotas page with a limit the provider gave no number for (item 15),
and the Bench with a model whose replies arrive in one piece (item 16)."""

from __future__ import annotations

import asyncio
import re
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import httpx
import pytest
from typer.testing import CliRunner

from benchwarmers.cli.main import app
from benchwarmers.runtime import Runtime
from benchwarmers.store.schema import LearnedLimit
from benchwarmers.testing import FakeModel, FakeProvider
from benchwarmers.testing.live_server import live_server
from tests.conftest import capable

expect = pytest.importorskip("playwright.sync_api").expect
pytestmark = pytest.mark.timeout(240)
WAIT = 30_000  # ms: generous, for a loaded machine; nothing here asserts a duration


def cli(*args: str) -> str:
    result = CliRunner().invoke(app, list(args))
    assert result.exit_code == 0, result.output
    return result.stdout


async def _learned_without_a_number(home: Path) -> None:
    """What a provider's "daily quota exceeded" body (no figures) leaves."""
    async with Runtime.open(home) as runtime, runtime.store.write() as session:
        session.add(
            LearnedLimit(
                endpoint="hub",
                served="",
                unit="requests",
                window="day",
                limit=None,
                remaining=0,
                resets_at=None,
                source="429 body",
                seen_at=datetime.now(UTC),
            )
        )


def test_quotas_and_speeds_say_only_what_is_known(
    browser: Any, artifacts: Path, home: Path, fake_provider: FakeProvider
) -> None:
    fake_provider.add(FakeModel("instant", answer=capable))  # each reply in one piece, at once

    def set_up() -> None:  # off this thread: Playwright keeps an event loop running on it
        cli("endpoint", "add", "hub", fake_provider.openai_base, "--keyless")
        cli("onboard", "instant", "-e", "hub", "--quick")
        asyncio.run(_learned_without_a_number(home))

    with ThreadPoolExecutor(1) as pool:
        pool.submit(set_up).result()
    page = browser.new_context(viewport={"width": 1280, "height": 900}).new_page()
    page.set_default_timeout(WAIT)
    with live_server(home) as server:
        page.goto(server.url + "/quotas")
        row = page.locator("#quotas tbody tr", has_text="hub")
        expect(row).to_contain_text("requests, how many not said / day")
        cells = [c.inner_text() for c in row.locator("td").all()]
        assert cells[3:5] == ["—", "—"], cells  # used, left: unknown, not "None" and "0"
        assert "None" not in page.locator("main").inner_text()
        page.screenshot(path=str(artifacts / "first-day-quotas.png"), full_page=True)

        page.goto(server.url + "/models")
        speed = page.locator("tr", has_text="instant").locator("td", has_text="not timed yet")
        expect(speed).to_have_count(1)
        assert "tok/s" not in page.locator("main").inner_text()
        page.screenshot(path=str(artifacts / "first-day-bench-speed.png"), full_page=True)

        page.goto(server.url + "/models/instant")
        assert "tok/s" not in page.locator("main").inner_text()
        page.screenshot(path=str(artifacts / "first-day-model-speed.png"), full_page=True)


def test_a_model_and_an_endpoint_with_models_are_removed_from_the_dashboard(
    browser: Any, artifacts: Path, home: Path, fake_provider: FakeProvider
) -> None:
    """Item 17: remove says first what it takes with it; the log is kept."""
    for served in ("one", "two"):
        fake_provider.add(FakeModel(served, answer=capable))

    def set_up() -> None:
        cli("endpoint", "add", "hub", fake_provider.openai_base, "--keyless")
        for served in ("one", "two"):
            cli("model", "add", served, "-e", "hub", "-s", served)
        cli("collection", "add", "pair", "-m", "one", "-m", "two")

    with ThreadPoolExecutor(1) as pool:
        pool.submit(set_up).result()
    page = browser.new_context(viewport={"width": 1280, "height": 900}).new_page()
    page.set_default_timeout(WAIT)
    said: list[str] = []
    page.on("dialog", lambda dialog: (said.append(dialog.message), dialog.accept()))
    with live_server(home) as server:
        reply = httpx.post(
            server.url + "/v1/chat/completions",
            json={"model": "bench/pair", "messages": [{"role": "user", "content": "hi"}]},
            timeout=60,
        )
        calls = [seat["call"] for seat in reply.json()["bench"]["seats"]]

        page.goto(server.url + "/models")
        page.locator("tr", has_text="one").get_by_role("button", name="Remove").click()
        page.wait_for_load_state()
        expect(page.locator("tr", has_text="one")).to_have_count(0)
        assert said[-1] == (
            "Remove one from the bench and from pair? Its calls and verdicts stay in the log; "
            "retiring keeps it instead."
        )
        page.screenshot(path=str(artifacts / "first-day-model-removed.png"), full_page=True)

        page.goto(server.url + "/endpoints")
        page.locator('tr[data-endpoint="hub"]').get_by_role("button", name="Remove").click()
        expect(page.locator('tr[data-endpoint="hub"]')).to_have_count(0)
        assert said[-1].startswith("Remove the endpoint hub and its 1 model(s)?")
        page.screenshot(path=str(artifacts / "first-day-endpoint-removed.png"), full_page=True)

        for call in calls:  # the log kept both seats: a verdict still finds them
            judged = httpx.post(server.url + "/bench/verdict", json={"call": call, "useful": True})
            assert judged.status_code == 200, judged.text


def test_the_password_change_asks_the_current_one_and_a_new_key_copies(
    browser: Any, artifacts: Path, home: Path
) -> None:
    """Item 21: the login speaks of the password alone when it asks no
    name; changing the password asks the current one and says it signs you
    out; a new gateway key has a copy button."""

    def set_up() -> None:
        result = CliRunner().invoke(app, ["settings", "set", "login_password"], input="first-secret-1\n")
        assert result.exit_code == 0, result.output

    with ThreadPoolExecutor(1) as pool:
        pool.submit(set_up).result()
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    page = context.new_page()
    page.set_default_timeout(WAIT)
    with live_server(home) as server:
        context.grant_permissions(["clipboard-read", "clipboard-write"], origin=server.url)
        page.goto(server.url + "/settings")
        page.fill("#f-password", "wrong-password")
        page.click("form[action='/login'] button[type=submit]")
        expect(page.locator("p.error")).to_have_text("the password is not right")
        page.fill("#f-password", "first-secret-1")
        page.click("form[action='/login'] button[type=submit]")
        page.locator('body[data-ready="Settings"]').wait_for(state="attached")

        page.fill("#f-key-name", "laptop")
        page.click("#key-form button[type=submit]")
        page.locator("#new-secret:not([hidden])").wait_for()
        page.click("#copy-secret")
        expect(page.locator("#copy-secret")).to_have_text("Copied")
        copied = page.evaluate("navigator.clipboard.readText()")
        assert copied == page.locator("#new-secret-value").inner_text() and copied.startswith("bw-")
        page.screenshot(path=str(artifacts / "first-day-key-copy.png"), full_page=True)

        form = page.locator("#password-form")
        page.fill("#f-password-value", "second-secret-2")
        form.locator("button[type=submit]").click()
        expect(form.locator('[data-error-for="current"]')).to_contain_text("the current password")
        page.fill("#f-password-current", "not-it-at-all")
        form.locator("button[type=submit]").click()
        expect(form.locator('[data-error-for="current"]')).to_have_text("the current password is not right")
        page.screenshot(path=str(artifacts / "first-day-password-current.png"), full_page=True)
        page.fill("#f-password-current", "first-secret-1")
        form.locator("button[type=submit]").click()
        page.wait_for_url("**/login?changed=1")
        expect(page.locator("p.notice")).to_have_text("The password changed: sign in with the new one.")
        page.screenshot(path=str(artifacts / "first-day-password-changed.png"), full_page=True)
        page.fill("#f-password", "second-secret-2")
        page.click("form[action='/login'] button[type=submit]")
        page.wait_for_url(re.compile(r"/models$|/endpoints"))
