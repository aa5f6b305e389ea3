"""Budgets in the dashboard, in headless Chromium: Settings sets one per
key (a bad amount said by its field, nothing saved), Quotas shows it with
what its period spent, what is left and when it resets, and Settings
removes it."""

from __future__ import annotations

import asyncio
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import httpx
import pytest

from benchwarmers.identity.keys import create_key
from benchwarmers.runtime import Runtime
from benchwarmers.store.collections import add_collection
from benchwarmers.store.endpoints import add_endpoint
from benchwarmers.store.models import add_model
from benchwarmers.testing import FakeModel, FakeProvider
from benchwarmers.testing.live_server import live_server
from tests.dashboard.conftest import set_setting

expect = pytest.importorskip("playwright.sync_api").expect
pytestmark = pytest.mark.timeout(240)
WAIT = 30_000  # ms: generous, for a loaded machine; nothing here asserts a duration
PASSWORD = "budget-secret-1"


async def _bench(home: Path, base: str) -> str:
    async with Runtime.open(home) as runtime:
        store = runtime.store
        await add_endpoint(store, "hub", base, "openai", needs_key=False)
        await add_model(store, "paid", "hub", "paid", price_in=1.0, price_out=1.0)
        await add_collection(store, "solo", ["paid"])
        _, secret = await create_key(store, "laptop")
        return secret


def test_settings_sets_a_key_budget_and_quotas_shows_what_is_left(
    browser: Any, artifacts: Path, home: Path, fake_provider: FakeProvider
) -> None:
    fake_provider.add(FakeModel("paid", answer="paid answer"))

    def set_up() -> str:  # off this thread: Playwright keeps an event loop running on it
        set_setting(home, "login_password", PASSWORD)
        return asyncio.run(_bench(home, fake_provider.openai_base))

    with ThreadPoolExecutor(1) as pool:
        secret = pool.submit(set_up).result()
    page = browser.new_context(viewport={"width": 1280, "height": 1000}).new_page()
    page.set_default_timeout(WAIT)
    with live_server(home) as server:
        page.goto(server.url + "/settings")
        page.fill("#f-password", PASSWORD)
        page.click("form[action='/login'] button[type=submit]")
        page.locator('body[data-ready="Settings"]').wait_for(state="attached")

        form = page.locator("#budget-form")
        form.locator("select[name=for]").select_option("key:laptop")
        form.locator("select[name=period]").select_option("day")
        page.fill("#f-budget-usd", "EUR5")
        form.locator("button[type=submit]").click()
        expect(form.locator('[data-error-for="usd"]')).to_contain_text("number of US dollars")
        assert httpx.get(server.url + "/bench/budgets", timeout=30).json() == {"budgets": []}

        page.fill("#f-budget-usd", "0.5")
        page.fill("#f-budget-tokens", "5000")
        form.locator("button[type=submit]").click()
        row = page.locator('#budget-list tr[data-budget="key:laptop:day"]')
        expect(row).to_contain_text("$0.5")
        expect(row).to_contain_text("5000")
        page.screenshot(path=str(artifacts / "budgets-settings.png"), full_page=True)

        asked = httpx.post(
            server.url + "/v1/chat/completions",
            json={"model": "bench/solo", "max_tokens": 50, "messages": [{"role": "user", "content": "hi"}]},
            headers={"authorization": f"Bearer {secret}"},
            timeout=60,
        )
        assert asked.status_code == 200, asked.text
        (budget,) = httpx.get(server.url + "/bench/budgets", timeout=30).json()["budgets"]
        assert 0 < budget["spentTokens"] < 5000

        page.goto(server.url + "/quotas")
        quota = page.locator('#budgets tr[data-budget="key:laptop:day"]')
        expect(quota).to_contain_text("key laptop")
        expect(quota.locator("td.left")).to_contain_text(f"{budget['leftTokens']} tokens")
        expect(quota.locator("td.left")).to_contain_text("$0.49")
        expect(quota.locator("time")).to_have_attribute("datetime", budget["resetsAt"])
        page.screenshot(path=str(artifacts / "budgets-quotas.png"), full_page=True)

        page.goto(server.url + "/settings")
        page.on("dialog", lambda dialog: dialog.accept())
        page.locator('#budget-list tr[data-budget="key:laptop:day"]').get_by_role(
            "button", name="Remove"
        ).click()
        expect(page.locator('tr[data-budget="key:laptop:day"]')).to_have_count(0)
        assert httpx.get(server.url + "/bench/budgets", timeout=30).json() == {"budgets": []}
