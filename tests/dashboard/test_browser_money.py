"""Issue 41's dashboard, in headless Chromium with screenshots: each seat's
cost on the Ask page (a price unknown said so, never $0) and the ask's
total, the same in Recent asks, and the Quotas page's spend per day (in USD
or tokens) and per key, collection and model."""

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

expect = pytest.importorskip("playwright.sync_api").expect
pytestmark = pytest.mark.timeout(240)
WAIT = 30_000  # ms: generous, for a loaded machine; nothing here asserts a duration


async def _bench(home: Path, fake: FakeProvider) -> str:
    """`dear` at $2 in / $8 out, `mystery` of unknown price, both in `mix`; a key `alice`."""
    async with Runtime.open(home) as runtime:
        store = runtime.store
        await add_endpoint(store, "hub", fake.openai_base, "openai", needs_key=False)
        for alias, price in (("dear", (2.0, 8.0)), ("mystery", (None, None))):
            fake.add(FakeModel(alias, answer=f"{alias} says four, in a few more words than one"))
            await add_model(
                store, alias, "hub", alias, price_in=price[0], price_out=price[1], context_window=100_000
            )
        await add_collection(store, "mix", ["dear", "mystery"])
        _info, secret = await create_key(store, "alice", collections=("mix",))
    return secret


def test_costs_on_the_ask_page_recent_asks_and_quotas(
    browser: Any, artifacts: Path, home: Path, fake_provider: FakeProvider
) -> None:
    with ThreadPoolExecutor(1) as pool:
        secret = pool.submit(asyncio.run, _bench(home, fake_provider)).result()
    page = browser.new_context(viewport={"width": 1280, "height": 900}).new_page()
    page.set_default_timeout(WAIT)
    with live_server(home) as server:
        body = {"model": "bench/mix", "messages": [{"role": "user", "content": "2+2?"}]}
        asked = httpx.post(
            f"{server.url}/v1/chat/completions",
            json=body,
            headers={"authorization": f"Bearer {secret}"},
            timeout=30,
        )
        assert asked.status_code == 200, asked.text

        page.goto(server.url + "/ask")
        page.locator('body[data-ready="Ask"]').wait_for(state="attached")
        page.select_option("#f-collection", "mix")
        page.fill("#f-prompt", "what is 2+2?")
        page.click("#ask-form button[type=submit]")
        page.locator("#ask-state >> text=Done.").wait_for()
        dear = page.locator('#conversation .seat-card[data-alias="dear"] .cost')
        expect(dear).to_contain_text("$0.0")
        expect(page.locator('#conversation .seat-card[data-alias="mystery"] .cost')).to_have_text(
            " · cost unknown"
        )
        expect(page.locator("#ask-state")).to_contain_text("This ask cost $0.0")
        expect(page.locator("#ask-state")).to_contain_text("some calls whose price is unknown")
        page.screenshot(path=str(artifacts / "money-ask.png"), full_page=True)

        page.goto(server.url + "/collections")
        recent = page.locator("#asks article.ask").first
        expect(recent.locator('.seat-card[data-alias="dear"] .cost')).to_contain_text("$0.0")
        expect(recent.locator('.seat-card[data-alias="mystery"] .cost')).to_have_text(" · cost unknown")
        page.screenshot(path=str(artifacts / "money-recent.png"), full_page=True)

        page.goto(server.url + "/quotas")
        expect(page.locator("#chart-title")).to_contain_text("Spend (USD) per day")
        bar = page.locator("#usage-chart rect").first
        expect(bar.locator("title")).to_contain_text("hub, ")
        assert "$" in (bar.locator("title").text_content() or "")
        keys = page.locator("#spend-key tbody tr")
        expect(page.locator('#spend-key tr[data-group="alice"] td.usd')).to_contain_text("$0.0")
        expect(page.locator('#spend-key tr[data-group="owner"]')).to_have_count(1)
        assert keys.count() == 2
        expect(page.locator('#spend-collection tr[data-group="mix"] td').first).to_have_text("4")
        expect(page.locator('#spend-model tr[data-group="mystery"] td.usd')).to_have_text("unknown")
        expect(page.locator("#spend-model tfoot td.usd")).to_contain_text("+ 2 unpriced")
        page.screenshot(path=str(artifacts / "money-quotas-usd.png"), full_page=True)

        page.click("#measure-tokens")
        expect(page.locator("#chart-title")).to_contain_text("Tokens per day")
        expect(page.locator("#usage-chart rect title").first).to_contain_text("tokens")
        page.screenshot(path=str(artifacts / "money-quotas-tokens.png"), full_page=True)
