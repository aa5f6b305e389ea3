"""Concurrent panels are capped, in all and per gateway key: past a cap an
ask gets 429 in its caller's format, saying which cap, with Retry-After;
the slots come back when the panels end (their clients may be long gone)."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import httpx

from benchwarmers.identity.keys import create_key
from benchwarmers.runtime import Runtime
from benchwarmers.store.settings import MAX_PANELS, MAX_PANELS_PER_KEY, Settings
from tests.waiting import wait_for

from .hardening_support import Bench, ask_body

FLOOD = 12


def _configure(bench: Bench, total: int, per_key: int) -> str:
    async def work() -> str:
        async with Runtime.open(bench.home) as runtime:
            await Settings(runtime.store).set(MAX_PANELS, total)
            await Settings(runtime.store).set(MAX_PANELS_PER_KEY, per_key)
            _info, secret = await create_key(
                runtime.store, f"lag-{total}-{per_key}", collections=("lagging",)
            )
            return secret

    return asyncio.run(work())


def _flood(
    bench: Bench, headers: dict[str, str], cap: int, path: str = "/v1/chat/completions"
) -> list[httpx.Response]:
    """FLOOD asks at once, with the slow seat held until all but `cap` have
    their reply: the panels let in stay running while the rest are asked,
    however slowly a loaded machine sends them."""
    body: dict[str, Any] = ask_body("lagging")
    if path == "/v1/messages":
        body = {"model": "bench/lagging", "max_tokens": 20, "messages": body["messages"]}

    def one(_: int) -> httpx.Response:
        return httpx.post(bench.url + path, json=body, headers=headers, timeout=60)

    with ThreadPoolExecutor(FLOOD) as pool:
        with bench.slow_held():
            asks = [pool.submit(one, i) for i in range(FLOOD)]
            wait_for(lambda: sum(ask.done() for ask in asks) >= FLOOD - cap)
        return [ask.result() for ask in asks]


def test_a_key_past_its_cap_gets_429_with_retry_after_and_its_slots_come_back(
    bench: Bench, counts: Callable[[str], None]
) -> None:
    secret = _configure(bench, total=100, per_key=2)
    headers = {"authorization": f"Bearer {secret}"}
    replies = _flood(bench, headers, cap=2)
    refused = [r for r in replies if r.status_code == 429]
    answered = [r for r in replies if r.status_code == 200]
    counts(f"panel caps (key): {len(replies)} asks, {len(answered)} answered, {len(refused)} refused")
    assert (len(answered), len(refused)) == (2, FLOOD - 2)
    for reply in refused:
        assert reply.headers["retry-after"].isdigit()
        assert "running its limit of 2 panels" in reply.json()["error"]["message"]
    # The slots come back as the panels' tasks end (just after their replies):
    # once they have, asks one after another all pass (at most one lingers).
    ask = ask_body("lagging")
    for _ in range(50):
        if (
            httpx.post(bench.url + "/v1/chat/completions", json=ask, headers=headers, timeout=60).status_code
            == 200
        ):
            break
        time.sleep(0.1)
    statuses = [
        httpx.post(bench.url + "/v1/chat/completions", json=ask, headers=headers, timeout=60).status_code
        for _ in range(3)
    ]
    assert statuses == [200, 200, 200]


def test_the_server_wide_cap_holds_for_the_owner_too_in_the_callers_format(
    bench: Bench, counts: Callable[[str], None]
) -> None:
    _configure(bench, total=2, per_key=100)
    try:
        replies = _flood(bench, {}, cap=2, path="/v1/messages")
        refused = [r for r in replies if r.status_code == 429]
        counts(f"panel caps (server): {len(replies)} asks, {len(refused)} refused")
        assert len(refused) == FLOOD - 2 and all(r.headers.get("retry-after") for r in refused)
        error = refused[0].json()
        assert error["type"] == "error" and "limit of 2 panels" in error["error"]["message"]
    finally:
        _configure(bench, total=64, per_key=8)
