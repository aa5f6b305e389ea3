"""Budgets over HTTP: `GET/PUT /bench/budgets`; an ask its gateway key's
budget cannot pay for refused with 429 in the caller's format, read by
each official SDK, with `Retry-After` the seconds to the budget's reset;
a panel whose budget pays for some seats seated with those, the others
left off "budget: ..."; bad input a 400 with nothing saved."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import anthropic
import httpx
import ollama
import openai
import pytest
from google import genai
from google.genai import errors as genai_errors

from benchwarmers.identity.keys import create_key
from benchwarmers.limits.budgets import set_budget
from benchwarmers.runtime import Runtime
from benchwarmers.store.collections import add_collection
from benchwarmers.store.endpoints import add_endpoint
from benchwarmers.store.models import add_model
from benchwarmers.testing import FakeModel, FakeProvider
from benchwarmers.testing.live_server import LiveServer

# USD per million tokens: an ask of "hi" allowing 100 tokens of reply is
# estimated at $0.000101 on `cheap`, $0.00101 on `dear`.
CHEAP, DEAR = 1.0, 10.0
PANEL_BUDGET = 0.0011  # pays for either seat, not both
TINY = 0.000001  # pays for no ask at all


@pytest.fixture(scope="module")
def bench(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[LiveServer, dict[str, str]]]:
    """A server with `cheap` and `dear` (priced) and `local` (price unknown);
    collections solo [cheap], duo [dear, cheap], free [local]; keys: `broke`
    (a budget that pays for nothing), `half` (pays for one seat of duo),
    `tokens-only` (a token budget) and `admin` (none). Secrets by name."""
    home = tmp_path_factory.mktemp("home")
    with FakeProvider() as fake:
        for served in ("cheap", "dear", "local"):
            fake.add(FakeModel(served, answer=f"{served} answers"))

        async def setup() -> dict[str, str]:
            async with Runtime.open(home) as runtime:
                store = runtime.store
                await add_endpoint(store, "fake", fake.openai_base, "openai", needs_key=False)
                await add_model(store, "cheap", "fake", "cheap", price_in=CHEAP, price_out=CHEAP)
                await add_model(store, "dear", "fake", "dear", price_in=DEAR, price_out=DEAR)
                await add_model(store, "local", "fake", "local")
                await add_collection(store, "solo", ["cheap"])
                await add_collection(store, "duo", ["dear", "cheap"])
                await add_collection(store, "free", ["local"])
                secrets = {}
                for name in ("broke", "half", "tokens-only", "admin"):
                    _, secrets[name] = await create_key(store, name)
                await set_budget(store, "key", "broke", "day", usd=TINY, tokens=None)
                await set_budget(store, "key", "half", "week", usd=PANEL_BUDGET, tokens=None)
                await set_budget(store, "key", "tokens-only", "month", usd=None, tokens=10)
                return secrets

        secrets = asyncio.run(setup())
        server = LiveServer(home).start()
        try:
            yield server, secrets
        finally:
            server.stop()


def _retry_after_is_the_reset(headers: Any, period: str = "day") -> None:
    """`Retry-After` is the seconds to the budget's reset: the next UTC midnight
    for a day budget, the first of next month for a month one (reckoned here
    from the calendar, not by the code under test)."""
    now = datetime.now(UTC)
    midnight = datetime(now.year, now.month, now.day, tzinfo=UTC) + timedelta(days=1)
    reset = (
        midnight
        if period == "day"
        else datetime(now.year + now.month // 12, now.month % 12 + 1, 1, tzinfo=UTC)
    )
    wait = int(headers["retry-after"])
    assert abs(wait - (reset - now).total_seconds()) <= 120  # the ask's own time, on a loaded box


def _ask_body(model: str) -> dict[str, Any]:
    return {"model": model, "max_tokens": 100, "messages": [{"role": "user", "content": "hi"}]}


# ------------------------------------------------------------ refusals, by SDK


def test_openai_chat_and_responses_read_the_refusal(bench: tuple[LiveServer, dict[str, str]]) -> None:
    server, secrets = bench
    client = openai.OpenAI(base_url=f"{server.url}/v1", api_key=secrets["broke"], max_retries=0)
    with pytest.raises(openai.RateLimitError) as caught:
        client.chat.completions.create(
            model="bench/solo", max_tokens=100, messages=[{"role": "user", "content": "hi"}]
        )
    assert caught.value.status_code == 429
    assert "budget key broke per day: $0.000001 of $0.000001 left, resets " in caught.value.message
    _retry_after_is_the_reset(caught.value.response.headers)
    with pytest.raises(openai.RateLimitError) as caught_responses:
        client.responses.create(model="bench/solo", input="hi", max_output_tokens=100)
    assert "budget key broke per day:" in caught_responses.value.message
    _retry_after_is_the_reset(caught_responses.value.response.headers)


def test_anthropic_reads_the_refusal(bench: tuple[LiveServer, dict[str, str]]) -> None:
    server, secrets = bench
    client = anthropic.Anthropic(base_url=server.url, api_key=secrets["broke"], max_retries=0)
    with pytest.raises(anthropic.RateLimitError) as caught:
        client.messages.create(
            model="bench/solo", max_tokens=100, messages=[{"role": "user", "content": "hi"}]
        )
    assert caught.value.body["error"]["type"] == "rate_limit_error"
    assert "budget key broke per day:" in caught.value.body["error"]["message"]
    _retry_after_is_the_reset(caught.value.response.headers)


def test_google_genai_reads_the_refusal(bench: tuple[LiveServer, dict[str, str]]) -> None:
    server, secrets = bench
    client = genai.Client(api_key=secrets["broke"], http_options={"base_url": server.url})
    with pytest.raises(genai_errors.ClientError) as caught:
        client.models.generate_content(model="bench/solo", contents="hi")
    assert caught.value.code == 429 and caught.value.status == "RESOURCE_EXHAUSTED"
    assert "budget key broke per day:" in (caught.value.message or "")
    # The SDK keeps no headers on its error: the same ask, read raw.
    raw = httpx.post(
        f"{server.url}/v1beta/models/bench/solo:generateContent",
        json={"contents": [{"role": "user", "parts": [{"text": "hi"}]}]},
        headers={"x-goog-api-key": secrets["broke"]},
        timeout=30,
    )
    assert raw.status_code == 429 and raw.json()["error"]["status"] == "RESOURCE_EXHAUSTED"
    _retry_after_is_the_reset(raw.headers)


def test_ollama_reads_the_refusal(bench: tuple[LiveServer, dict[str, str]]) -> None:
    server, secrets = bench
    client = ollama.Client(host=server.url, headers={"authorization": f"Bearer {secrets['broke']}"})
    with pytest.raises(ollama.ResponseError) as caught:
        client.chat(model="bench/solo", messages=[{"role": "user", "content": "hi"}])
    assert caught.value.status_code == 429 and "budget key broke per day:" in caught.value.error
    raw = httpx.post(
        f"{server.url}/api/chat",
        json={"model": "bench/solo", "stream": False, "messages": [{"role": "user", "content": "hi"}]},
        headers={"authorization": f"Bearer {secrets['broke']}"},
        timeout=30,
    )
    assert raw.status_code == 429 and "budget key broke per day:" in raw.json()["error"]
    _retry_after_is_the_reset(raw.headers)


def test_route_mode_is_refused_like_a_limit(bench: tuple[LiveServer, dict[str, str]]) -> None:
    server, secrets = bench
    reply = httpx.post(
        f"{server.url}/v1/chat/completions",
        json=_ask_body("bench/solo:route"),
        headers={"authorization": f"Bearer {secrets['broke']}"},
        timeout=30,
    )
    assert reply.status_code == 429, reply.text
    assert "budget key broke per day:" in reply.json()["error"]["message"]
    _retry_after_is_the_reset(reply.headers)


# ------------------------------------------------------------------ panels


def test_a_panel_seats_what_its_budget_pays_for_cheapest_first(
    bench: tuple[LiveServer, dict[str, str]],
) -> None:
    server, secrets = bench
    headers = {"authorization": f"Bearer {secrets['half']}"}
    reply = httpx.post(
        f"{server.url}/v1/chat/completions", json=_ask_body("bench/duo"), headers=headers, timeout=30
    )
    assert reply.status_code == 200, reply.text
    bench_json = reply.json()["bench"]
    assert [seat["alias"] for seat in bench_json["seats"]] == ["cheap"]
    (left,) = [m for m in bench_json["leftOff"] if m["alias"] == "dear"]
    assert left["reason"].startswith("budget: key half per week: $")
    # What the seat really cost is what the budget shows spent: a settled call, not its estimate.
    budgets = httpx.get(f"{server.url}/bench/budgets", headers=headers, timeout=30).json()["budgets"]
    (half,) = [b for b in budgets if b["name"] == "half"]
    assert 0 < half["spentUsd"] < 0.000101
    assert half["leftUsd"] == pytest.approx(PANEL_BUDGET - half["spentUsd"])
    resets = datetime.fromisoformat(half["resetsAt"])
    now = datetime.now(UTC)
    assert resets.weekday() == 0 and now < resets <= now + timedelta(days=7)


def test_an_unknown_price_counts_in_tokens_only(bench: tuple[LiveServer, dict[str, str]]) -> None:
    server, secrets = bench
    # A USD budget cannot price `local`: not counted against it ...
    free = httpx.post(
        f"{server.url}/v1/chat/completions",
        json=_ask_body("bench/free"),
        headers={"authorization": f"Bearer {secrets['broke']}"},
        timeout=30,
    )
    assert free.status_code == 200, free.text
    # ... while a token budget bounds it.
    tokens = httpx.post(
        f"{server.url}/v1/chat/completions",
        json=_ask_body("bench/free"),
        headers={"authorization": f"Bearer {secrets['tokens-only']}"},
        timeout=30,
    )
    assert tokens.status_code == 429
    assert (
        "budget key tokens-only per month: 10 of 10 tokens left, resets " in tokens.json()["error"]["message"]
    )
    _retry_after_is_the_reset(tokens.headers, period="month")


# ---------------------------------------------------------------- the routes


def test_put_sets_lists_and_removes_a_budget(bench: tuple[LiveServer, dict[str, str]]) -> None:
    server, secrets = bench
    headers = {"authorization": f"Bearer {secrets['admin']}"}
    row = {"scope": "collection", "name": "solo", "period": "month", "usd": "$2.50", "tokens": 1000}
    put = httpx.put(f"{server.url}/bench/budgets", json=row, headers=headers, timeout=30)
    assert put.status_code == 200, put.text
    body = put.json()
    assert body | {"resetsAt": ""} == {
        "scope": "collection",
        "name": "solo",
        "period": "month",
        "usd": 2.5,
        "tokens": 1000,
        "spentUsd": body["spentUsd"],
        "spentTokens": body["spentTokens"],
        "leftUsd": pytest.approx(2.5 - body["spentUsd"]),
        "leftTokens": 1000 - body["spentTokens"],
        "resetsAt": "",
    }
    assert datetime.fromisoformat(body["resetsAt"]).day == 1
    listed = httpx.get(f"{server.url}/bench/budgets", headers=headers, timeout=30).json()["budgets"]
    assert [(b["usd"], b["tokens"]) for b in listed if b["scope"] == "collection"] == [(2.5, 1000)]
    removed = httpx.put(
        f"{server.url}/bench/budgets",
        json={"scope": "collection", "name": "solo", "period": "month", "usd": None, "tokens": None},
        headers=headers,
        timeout=30,
    )
    assert removed.status_code == 200 and removed.json()["usd"] is None and removed.json()["tokens"] is None
    listed = httpx.get(f"{server.url}/bench/budgets", headers=headers, timeout=30).json()["budgets"]
    assert not any(b["scope"] == "collection" for b in listed)


@pytest.mark.parametrize(
    ("row", "says"),
    [
        ({"scope": "key", "name": "admin", "period": "day", "usd": -1}, "0 or more"),
        ({"scope": "key", "name": "admin", "period": "day", "usd": "five"}, "number of US dollars"),
        ({"scope": "key", "name": "admin", "period": "day", "usd": "EUR5"}, "number of US dollars"),
        ({"scope": "key", "name": "admin", "period": "day", "usd": 5, "currency": "EUR"}, "in USD"),
        ({"scope": "key", "name": "admin", "period": "day", "tokens": -3}, "whole number"),
        ({"scope": "key", "name": "admin", "period": "day", "tokens": 2.5}, "whole number"),
        ({"scope": "key", "name": "admin", "period": "day", "tokens": True}, "whole number"),
        ({"scope": "key", "name": "admin", "period": "fortnight", "usd": 5}, "period must be one of"),
        ({"scope": "team", "name": "admin", "period": "day", "usd": 5}, "scope must be one of"),
        ({"scope": "key", "name": "nobody", "period": "day", "usd": 5}, "no gateway key named 'nobody'"),
        ({"scope": "collection", "name": "nothing", "period": "day", "usd": 5}, "no collection named"),
        ({"scope": "install", "name": "x", "period": "day", "usd": 5}, "names nothing"),
        ({"scope": "key", "name": "admin", "period": "day", "usd": 5, "eur": 1}, "unknown field 'eur'"),
        ([1, 2], "send one budget"),
    ],
)
def test_bad_input_is_a_400_and_saves_nothing(
    bench: tuple[LiveServer, dict[str, str]], row: Any, says: str
) -> None:
    server, secrets = bench
    headers = {"authorization": f"Bearer {secrets['admin']}"}
    before = httpx.get(f"{server.url}/bench/budgets", headers=headers, timeout=30).json()
    reply = httpx.put(f"{server.url}/bench/budgets", json=row, headers=headers, timeout=30)
    assert reply.status_code in (400, 404), reply.text
    assert says in reply.json()["error"]["message"]
    after = httpx.get(f"{server.url}/bench/budgets", headers=headers, timeout=30).json()
    assert [(b["scope"], b["name"], b["period"], b["usd"], b["tokens"]) for b in after["budgets"]] == [
        (b["scope"], b["name"], b["period"], b["usd"], b["tokens"]) for b in before["budgets"]
    ]


def test_a_key_scoped_to_a_collection_may_not_read_or_set_budgets(home: Path) -> None:
    async def work() -> str:
        async with Runtime.open(home) as runtime:
            _, secret = await create_key(runtime.store, "narrow", collections=("solo",))
            return secret

    secret = asyncio.run(work())
    server = LiveServer(home).start()
    try:
        headers = {"authorization": f"Bearer {secret}"}
        assert httpx.get(f"{server.url}/bench/budgets", headers=headers, timeout=30).status_code == 403
        put = httpx.put(
            f"{server.url}/bench/budgets",
            json={"scope": "install", "period": "day", "usd": 1},
            headers=headers,
            timeout=30,
        )
        assert put.status_code == 403
    finally:
        server.stop()
