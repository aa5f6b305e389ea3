"""Money over HTTP: each seat's cost in the `bench` object (null for an
unknown price, 0 for a free one), the ask's total, route mode's turn cost,
`GET /bench/usage` grouped every way (a key reads its own spend), its bad
input a 400, and the spend on `/metrics`."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

import httpx
import pytest

from benchwarmers.identity.keys import create_key
from benchwarmers.runtime import Runtime
from benchwarmers.store.collections import add_collection
from benchwarmers.store.endpoints import add_endpoint
from benchwarmers.store.models import add_model
from benchwarmers.testing import FakeModel, FakeProvider
from benchwarmers.testing.live_server import LiveServer, live_server

PRICES = {"dear": (2.0, 8.0), "gift": (0.0, 0.0), "mystery": (None, None)}


@dataclass
class Money:
    server: LiveServer
    key: str  # a gateway key named "spender", limited to the collection `paid`
    router: str  # another, "router", on `paid` too: its route turns only


async def _register(home: Path, fake: FakeProvider) -> tuple[str, str]:
    async with Runtime.open(home) as runtime:
        store = runtime.store
        await add_endpoint(store, "fake", fake.base_for("openai"), "openai", needs_key=False)
        for alias, (price_in, price_out) in PRICES.items():
            fake.add(FakeModel(alias, answer=f"{alias} says four"))
            await add_model(
                store, alias, "fake", alias, price_in=price_in, price_out=price_out, context_window=100_000
            )
        await add_collection(store, "mix", list(PRICES))
        await add_collection(store, "paid", ["dear", "gift"])
        _info, secret = await create_key(store, "spender", collections=("paid",))
        _info, router = await create_key(store, "router", collections=("paid",))
    return secret, router


@pytest.fixture(scope="module")
def money(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Money]:
    home = tmp_path_factory.mktemp("home")
    with FakeProvider() as fake:
        with ThreadPoolExecutor(1) as pool:
            secret, router = pool.submit(asyncio.run, _register(home, fake)).result()
        with live_server(home) as server:
            yield Money(server, secret, router)


@pytest.fixture(scope="module")
def client(money: Money) -> Iterator[httpx.Client]:
    with httpx.Client(base_url=money.server.url, timeout=30) as http:
        yield http


def _ask(client: httpx.Client, collection: str, key: str = "") -> dict:
    headers = {"authorization": f"Bearer {key}"} if key else {}
    body = {"model": f"bench/{collection}", "messages": [{"role": "user", "content": "what is 2+2?"}]}
    reply = client.post("/v1/chat/completions", json=body, headers=headers)
    assert reply.status_code == 200, reply.text
    return reply.json()["bench"]


def test_each_seat_says_its_cost_and_the_panel_its_total(client: httpx.Client) -> None:
    bench = _ask(client, "mix")
    seats = {s["alias"]: s for s in bench["seats"]}
    dear = seats["dear"]
    tokens = dear["usage"]
    assert dear["costUsd"] == pytest.approx(
        (tokens["inputTokens"] * 2.0 + tokens["outputTokens"] * 8.0) / 1e6
    )
    assert seats["gift"]["costUsd"] == 0
    assert seats["mystery"]["costUsd"] is None  # unknown, never 0
    assert bench["costUsd"] == pytest.approx(dear["costUsd"])
    assert bench["costComplete"] is False
    known = _ask(client, "paid")
    assert known["costComplete"] is True
    assert known["costUsd"] == pytest.approx(sum(s["costUsd"] for s in known["seats"]))


def test_a_merged_reply_costs_its_merge_too(client: httpx.Client) -> None:
    bench = _ask(client, "paid:merged")
    merged = bench["merged"]
    assert merged["status"] == "ok"
    assert isinstance(merged["costUsd"], float | int)
    seats = sum(s["costUsd"] for s in bench["seats"])
    assert bench["costUsd"] == pytest.approx(seats + merged["costUsd"])


def test_a_route_turn_says_what_it_cost(client: httpx.Client) -> None:
    body = {
        "model": "bench/paid:route",
        "messages": [{"role": "user", "content": "fix it"}],
        "tools": [{"type": "function", "function": {"name": "edit", "parameters": {"type": "object"}}}],
    }
    reply = client.post("/v1/chat/completions", json=body)
    assert reply.status_code == 200, reply.text
    bench = reply.json()["bench"]
    assert bench["mode"] == "route"
    assert bench["costComplete"] is True and isinstance(bench["costUsd"], float | int)


def test_a_route_turn_is_logged_under_the_key_that_asked(money: Money, client: httpx.Client) -> None:
    """The key rides beside the ask to the route engine (`core.RouteMode`):
    the turn's call is the key's spend, not the owner's."""
    body = {"model": "bench/paid:route", "messages": [{"role": "user", "content": "fix it"}]}
    reply = client.post(
        "/v1/chat/completions", json=body, headers={"authorization": f"Bearer {money.router}"}
    )
    assert reply.status_code == 200, reply.text
    rows = _usage(client, key=money.router, by="key").json()["rows"]
    assert [(r["group"], r["calls"]) for r in rows] == [("router", 1)]


def test_a_streamed_route_turn_says_its_cost_in_its_last_chunk(client: httpx.Client) -> None:
    body = {"model": "bench/paid:route", "messages": [{"role": "user", "content": "fix it"}], "stream": True}
    with client.stream("POST", "/v1/chat/completions", json=body) as reply:
        assert reply.status_code == 200
        events = [json.loads(line[6:]) for line in reply.iter_lines() if line.startswith("data: {")]
    last = events[-1]["bench"]
    assert last["mode"] == "route" and last["costComplete"] is True
    assert last["costUsd"] >= 0


def _usage(client: httpx.Client, key: str = "", **query: str) -> httpx.Response:
    headers = {"authorization": f"Bearer {key}"} if key else {}
    return client.get("/bench/usage", params=query, headers=headers)


def test_usage_by_each_group_and_a_key_reads_its_own(money: Money, client: httpx.Client) -> None:
    # Its own asks: under xdist another test of this module may run on another worker's server.
    _ask(client, "mix")
    _ask(client, "paid", key=money.key)
    today = datetime.now(UTC).date().isoformat()
    for by in ("key", "collection", "model", "day"):
        reply = _usage(client, by=by, since=today, until=today)
        assert reply.status_code == 200, reply.text
        report = reply.json()
        assert (report["by"], report["since"], report["until"]) == (by, today, today)
        rows = report["rows"]
        assert set(rows[0]) == {"group", "calls", "inputTokens", "outputTokens", "costUsd", "unpricedCalls"}
        assert sum(r["calls"] for r in rows) == report["total"]["calls"] > 0
        assert sum(r["costUsd"] for r in rows) == pytest.approx(report["total"]["costUsd"])
    groups = {r["group"]: r for r in _usage(client, by="key").json()["rows"]}
    assert {"owner", "spender"} <= set(groups)
    assert groups["spender"]["calls"] == 2 and groups["spender"]["unpricedCalls"] == 0
    model = {r["group"]: r for r in _usage(client, by="model").json()["rows"]}
    assert model["mystery"]["unpricedCalls"] == model["mystery"]["calls"] > 0
    assert model["mystery"]["costUsd"] == 0 and model["gift"]["unpricedCalls"] == 0
    own = _usage(client, key=money.key, by="key").json()
    assert [r["group"] for r in own["rows"]] == ["spender"]
    assert own["total"]["costUsd"] == pytest.approx(groups["spender"]["costUsd"])


@pytest.mark.parametrize(
    ("query", "words"),
    [
        ({"by": "week"}, "by must be one of key, collection, model, day"),
        ({"by": "model", "since": "2026-02-30"}, "since must be a date as YYYY-MM-DD"),
        ({"by": "day", "until": "tomorrow"}, "until must be a date as YYYY-MM-DD"),
        ({"by": "day", "since": "2026-12-05", "until": "2026-12-01"}, "is after until"),
    ],
)
def test_bad_usage_queries_are_a_400_naming_them(client: httpx.Client, query: dict, words: str) -> None:
    reply = _usage(client, **query)
    assert reply.status_code == 400, reply.text
    assert words in reply.json()["error"]["message"]


def test_metrics_count_spend_by_collection_and_member(client: httpx.Client) -> None:
    _ask(client, "paid")
    text = client.get("/metrics").text
    spend = [line for line in text.splitlines() if line.startswith("benchwarmers_spend_usd_total{")]
    assert any('collection="paid"' in line and 'member="dear"' in line for line in spend)
    assert float(next(line for line in spend if 'member="dear"' in line).rsplit(" ", 1)[1]) > 0
    unpriced = [line for line in text.splitlines() if line.startswith("benchwarmers_unpriced_calls_total{")]
    assert any('member="mystery"' in line for line in unpriced)
