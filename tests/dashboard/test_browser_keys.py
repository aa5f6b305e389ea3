"""Issue 41's Settings part in headless Chromium (with screenshots): each
gateway key's expiry is shown and set, a bad expiry or grace is refused in
the form with nothing saved, and Rotate shows the new secret once while the
old one keeps working through its grace (then not: the guard's clock)."""

from __future__ import annotations

import re
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import httpx
import pytest
from typer.testing import CliRunner

from benchwarmers.cli.main import app
from benchwarmers.testing.live_server import live_server

expect = pytest.importorskip("playwright.sync_api").expect
pytestmark = pytest.mark.timeout(240)
WAIT = 30_000  # ms: generous, for a loaded machine; nothing here asserts a duration


def test_settings_shows_sets_expiry_and_rotates_a_key(browser: Any, artifacts: Path, home: Path) -> None:
    def set_up() -> None:
        result = CliRunner().invoke(app, ["settings", "set", "login_password"], input="first-secret-1\n")
        assert result.exit_code == 0, result.output

    with ThreadPoolExecutor(1) as pool:
        pool.submit(set_up).result()
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    page = context.new_page()
    page.set_default_timeout(WAIT)
    page.on("dialog", lambda dialog: dialog.accept())
    with live_server(home) as server:
        page.goto(server.url + "/settings")
        page.fill("#f-password", "first-secret-1")
        page.click("form[action='/login'] button[type=submit]")
        page.locator('body[data-ready="Settings"]').wait_for(state="attached")

        # A past expiry is refused in the form, and no key is made.
        page.fill("#f-key-name", "laptop")
        page.fill("#f-key-expires", "2020-01-01")
        page.click("#key-form button[type=submit]")
        expect(page.locator('#key-form [data-error-for="expires"]')).to_contain_text("is in the past")
        expect(page.locator("#key-list")).to_have_count(0)

        page.fill("#f-key-expires", "2099-01-31")
        page.click("#key-form button[type=submit]")
        page.locator("#new-secret:not([hidden])").wait_for()
        old = page.locator("#new-secret-value").inner_text()
        row = page.locator('tr[data-key="laptop"]')
        expect(row.locator(".key-expiry time")).to_have_text("2099-01-31 00:00 UTC")
        expect(row.locator(".key-state")).to_have_text("active, expires 2099-01-31 00:00 UTC")

        # Changing it: a bad date says so and changes nothing; a good one shows.
        row.locator('input[name="expires"]').fill("2099-02-30")
        row.get_by_role("button", name="Set").click()
        expect(row.locator('[data-error-for="expires"]')).to_contain_text("is not a date")
        expect(row.locator(".key-expiry time")).to_have_text("2099-01-31 00:00 UTC")
        row.locator('input[name="expires"]').fill("2098-06-30")
        row.get_by_role("button", name="Set").click()
        expect(page.locator('tr[data-key="laptop"] .key-expiry time')).to_have_text("2098-06-30 00:00 UTC")
        page.screenshot(path=str(artifacts / "keys-expiry.png"), full_page=True)

        # Rotate: a negative grace is refused; 1h shows the new secret once.
        row = page.locator('tr[data-key="laptop"]')
        row.locator('input[name="grace"]').fill("-1h")
        row.get_by_role("button", name="Rotate").click()
        expect(row.locator('[data-error-for="grace"]')).to_contain_text("is negative")
        row.locator('input[name="grace"]').fill("1h")
        row.get_by_role("button", name="Rotate").click()
        page.wait_for_function(  # the page reloads: wait for the new secret, not the empty slot between
            "old => { const t = document.getElementById('new-secret-value')?.textContent.trim() || '';"
            " return t.startsWith('bw-') && t !== old; }",
            arg=old,
        )
        new = page.locator("#new-secret-value").inner_text()
        assert new.startswith("bw-") and new != old
        states = page.locator("#key-list .key-state").all_inner_texts()
        assert states[0] == "active, expires 2098-06-30 00:00 UTC"
        assert re.fullmatch(r"rotated out, works until \d{4}-\d\d-\d\d \d\d:\d\d UTC", states[1])
        page.screenshot(path=str(artifacts / "keys-rotated.png"), full_page=True)
        page.reload()
        expect(page.locator("#new-secret")).to_be_hidden()  # shown once
        assert new not in page.content() and old not in page.content()

        def caller(secret: str) -> httpx.Response:
            return httpx.get(f"{server.url}/v1/models", headers={"authorization": f"Bearer {secret}"})

        assert caller(old).status_code == 200 and caller(new).status_code == 200
        server.app.state.guard.clock = lambda: time.time() + 2 * 3600
        refused = caller(old)
        assert refused.status_code == 401 and "was rotated on" in refused.json()["error"]["message"]
        assert caller(new).status_code == 200
