"""Discover: models worth adding, from models.dev and FreeLLMAPI, merged.

Each entry is one provider model, marked by what this install already has:
`reachable` names the endpoints here that serve that provider (so onboarding
it is one click), `on_bench` the alias when that very provider model is on
the bench, and `also_on_bench` aliases of the same model served through
another provider (Llama 3.3 70B on Groq when OpenRouter's is being looked
at). Two facts about money are kept apart, because they differ for the user:

- `free`: the price is zero (both prices known and 0, from models.dev);
- `free_tier`: the provider offers a free quota of it (FreeLLMAPI lists it),
  even if use beyond the quota is billed at the price shown beside it.

Free models come first, then free tiers, since those are what a panel is
built on.

FreeLLMAPI publishes no feed (its catalogue is seeded from its source
code); it ships as a snapshot in its own field names (`providers`: key,
name, url; `models`: provider, modelId, name, ctx, maxOut, tools, vision),
every one of its models being a free tier. The daily catalog job refreshes
it from `BENCHWARMERS_FREELLMAPI_URL` when that names a copy in the same
field names (kept in `<data folder>/catalog/freellmapi.json`); otherwise
the snapshot stays, and the job says so. It publishes no prices, so its
entries carry none: a price comes from models.dev or stays unknown.

The catalog is the whole of models.dev (hundreds of models), so matching
is done once per list: hosts per provider, endpoints per provider and the
bench's models by served id and by family, not entry by entry.
"""

from __future__ import annotations

import json
import logging
import re
from dataclasses import asdict, dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any

import httpx
from sqlalchemy import select

from benchwarmers.bench.catalog import ModelFacts, endpoint_serves, load_catalog, provider_hosts
from benchwarmers.config import environment
from benchwarmers.store import schema
from benchwarmers.store.db import Store

log = logging.getLogger(__name__)

FREELLMAPI_FILE = "freellmapi_snapshot.json"
FREELLMAPI_URL_ENV = environment.FREELLMAPI_URL.name
FREELLMAPI_STORED = Path("catalog") / "freellmapi.json"


@dataclass(slots=True)
class Discovered:
    provider: str
    model: str
    name: str
    free: bool  # priced at zero
    free_tier: bool  # the provider offers a free quota (FreeLLMAPI lists it)
    price_in: float | None
    price_out: float | None
    context_window: int | None
    output_limit: int | None
    vision: bool
    tools: bool
    sources: list[str] = field(default_factory=list)
    reachable: list[str] = field(default_factory=list)  # endpoint names here that serve the provider
    on_bench: str = ""  # alias of this provider model on the bench
    also_on_bench: list[str] = field(default_factory=list)  # the same model through another provider

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def parse_freellmapi(document: dict[str, Any]) -> list[ModelFacts]:
    """FreeLLMAPI's catalogue as facts (every model there is a free tier;
    prices unknown: a free tier says nothing of the price beyond it)."""
    providers = [p for p in document.get("providers", []) if isinstance(p, dict) and p.get("key")]
    urls: dict[str, str] = {p["key"]: str(p.get("url") or "") for p in providers}
    names: dict[str, str] = {p["key"]: str(p.get("name") or p["key"]) for p in providers}
    facts = []
    for m in document.get("models", []):
        if not isinstance(m, dict) or not m.get("provider") or not m.get("modelId"):
            continue
        facts.append(
            ModelFacts(
                provider=m["provider"],
                model=m["modelId"],
                name=m.get("name") or m["modelId"],
                provider_name=names.get(m["provider"], str(m["provider"])),
                provider_api=urls.get(m["provider"], ""),
                context_window=m.get("ctx"),
                output_limit=m.get("maxOut"),
                vision=bool(m.get("vision")),
                tools=bool(m.get("tools")),
            )
        )
    return facts


def freellmapi_document() -> dict[str, Any]:
    text = resources.files("benchwarmers.bench.data").joinpath(FREELLMAPI_FILE).read_text("utf-8")
    data: dict[str, Any] = json.loads(text)
    return data


def freellmapi_catalog(home: Path | None) -> list[ModelFacts]:
    """FreeLLMAPI's models: the last refresh's copy in the data folder, else the snapshot."""
    stored = home / FREELLMAPI_STORED if home is not None else None
    if stored is not None and stored.is_file():
        try:
            facts = parse_freellmapi(json.loads(stored.read_text("utf-8")))
        except (OSError, ValueError, AttributeError) as exc:
            log.warning("%s is unreadable (%s); using the shipped FreeLLMAPI snapshot", stored, exc)
        else:
            if facts:
                return facts
    return parse_freellmapi(freellmapi_document())


async def refresh_freellmapi(http: httpx.AsyncClient, home: Path, url: str) -> str:
    """The daily job's FreeLLMAPI half: fetch `url` when one is set, keep it
    in the data folder; a line for the job's log either way."""
    date = freellmapi_document().get("_snapshot", {}).get("date", "")
    if not url:
        return f"FreeLLMAPI publishes no feed: its snapshot of {date} stays (or set {FREELLMAPI_URL_ENV})"
    try:
        response = await http.get(url, timeout=30.0)
        response.raise_for_status()
        document = response.json()
        facts = parse_freellmapi(document) if isinstance(document, dict) else []
    except (httpx.HTTPError, ValueError) as exc:
        return f"FreeLLMAPI: {url} unreachable ({type(exc).__name__}); the last copy stays"
    if not facts:
        return f"FreeLLMAPI: {url} holds no models in FreeLLMAPI's field names; the last copy stays"
    target = home / FREELLMAPI_STORED
    target.parent.mkdir(parents=True, exist_ok=True)
    partial = target.with_suffix(".json.partial")
    partial.write_text(json.dumps(document), encoding="utf-8")
    partial.replace(target)
    return f"{len(facts)} FreeLLMAPI models from {url}"


def family(model_id: str) -> str:
    """A provider-neutral name for matching one model across providers:
    `meta-llama/llama-3.3-70b-instruct:free` and `llama-3.3-70b-versatile`
    both become `llama-3.3-70b`."""
    name = model_id.lower().rsplit("/", 1)[-1].split(":", 1)[0]
    name = re.sub(r"-(instruct|versatile|instant|it|chat|latest|preview)$", "", name)
    return name


def merge(sources: dict[str, list[ModelFacts]], free_tier_sources: frozenset[str]) -> list[Discovered]:
    """One entry per provider model; facts from the first source win (a
    price a later source knows fills one the first does not), the sources
    list says where each entry was seen. `free` follows the merged price;
    `free_tier` is set when a source in `free_tier_sources` lists it."""
    merged: dict[tuple[str, str], Discovered] = {}
    for source, facts in sources.items():
        for f in facts:
            key = (f.provider, f.model)
            if key in merged:
                entry = merged[key]
                entry.sources.append(source)
                entry.free_tier = entry.free_tier or source in free_tier_sources
                if entry.price_in is None and entry.price_out is None:
                    entry.price_in, entry.price_out = f.price_in, f.price_out
                    entry.free = f.free
                continue
            merged[key] = Discovered(
                provider=f.provider,
                model=f.model,
                name=f.name,
                free=f.free,
                free_tier=source in free_tier_sources,
                price_in=f.price_in,
                price_out=f.price_out,
                context_window=f.context_window,
                output_limit=f.output_limit,
                vision=f.vision,
                tools=f.tools,
                sources=[source],
            )
    return list(merged.values())


async def discover(store: Store, *, free_only: bool = False, home: Path | None = None) -> list[Discovered]:
    """The Discover list: free first, then free tiers, then the rest; within
    each, reachable first, then by name. `free_only` keeps what can be used
    without paying (free or a free tier)."""
    catalog = [f for f in await load_catalog(store) if f.writes_text]  # image, speech: no seat
    freellm = freellmapi_catalog(home)
    hosts: dict[str, set[str]] = {}
    for f in [*catalog, *freellm]:
        hosts.setdefault(f.provider, set()).update(provider_hosts(f))
    entries = merge(
        {"models.dev": catalog, "FreeLLMAPI": freellm}, free_tier_sources=frozenset({"FreeLLMAPI"})
    )
    async with store.read() as session:
        endpoints = (await session.scalars(select(schema.Endpoint))).all()
        bench = (await session.execute(select(schema.Model, schema.Endpoint).join(schema.Endpoint))).all()
    serving = {
        provider: [
            e.name for e in endpoints if endpoint_serves(e.name, e.base_url, provider, provider_hosts_)
        ]
        for provider, provider_hosts_ in hosts.items()
    }
    by_family: dict[str, list[tuple[str, str, str]]] = {}  # family -> (alias, endpoint, served)
    for model, endpoint in bench:
        by_family.setdefault(family(model.served), []).append(
            (model.alias, endpoint.name, model.served.lower())
        )
    for entry in entries:
        entry.reachable = serving.get(entry.provider, [])
        for alias, endpoint_name, served in by_family.get(family(entry.model), []):
            if endpoint_name in entry.reachable and served == entry.model.lower():
                entry.on_bench = alias
            else:
                entry.also_on_bench.append(alias)
    if free_only:
        entries = [e for e in entries if e.free or e.free_tier]
    entries.sort(key=lambda e: (not e.free, not e.free_tier, not e.reachable, e.name.lower()))
    return entries
