"""Whom a provider's limits count: every model behind a key, or each model.

Providers differ. Groq, Gemini, OpenRouter's free models, Cerebras, GitHub
Models, OpenAI and Anthropic count (most) limits per model: one model's
`x-ratelimit-remaining-requests: 0` says nothing of the next model's
allowance, so blocking the whole endpoint on it would bench a dozen models
that could answer. Others (Mistral's and NVIDIA's free tiers, a local
server) count per key. An endpoint's scope is, first to answer:

1. what the user set (`benchwarmers endpoint scope NAME key|model`);
2. learned: two models on the endpoint reported different ceilings for the
   same limit (30 requests a minute for one, 60 for the other), which a
   shared counter cannot do;
3. the default for the provider its base URL points at (`KNOWN` below);
4. `key`: for a provider we do not know, the careful choice (no call is
   sent into a wall another model's reply already showed).

OpenRouter's daily allowance for free models is per account, but its 429s
mostly come from the upstream provider of one model ("temporarily rate
limited upstream"); per model costs one 429 per model when the account's
day is used up, per key would rest every free model on one model's upstream
trouble, so per model is its default.
"""

from __future__ import annotations

import functools
from urllib.parse import urlsplit

from sqlalchemy import select

from benchwarmers.store.changes import Cached
from benchwarmers.store.db import Store
from benchwarmers.store.schema import Endpoint, LearnedLimit
from benchwarmers.types import LIMIT_SCOPES
from benchwarmers.types import LimitScope as Scope

# Host (or a parent domain of it) -> how that provider counts its limits.
KNOWN: dict[str, Scope] = {
    "api.groq.com": "model",
    "generativelanguage.googleapis.com": "model",
    "openrouter.ai": "model",
    "api.cerebras.ai": "model",
    "models.github.ai": "model",
    "models.inference.ai.azure.com": "model",
    "api.openai.com": "model",
    "api.anthropic.com": "model",
    "api.sambanova.ai": "model",
    "api.mistral.ai": "key",
    "integrate.api.nvidia.com": "key",
    "api.together.xyz": "key",
    "api.cohere.com": "key",
}

# Endpoint name -> (the user's choice or "", base URL), as last read.
_ENDPOINTS: Cached[dict[str, tuple[str, str]]] = Cached(("endpoints",))


@functools.lru_cache(maxsize=1024)
def default_scope(base_url: str) -> Scope:
    """The known provider's scope by host (or a parent domain), else `key`.
    Asked on every admit and every reply, of the same few base URLs: cached."""
    host = (urlsplit(base_url).hostname or "").lower()
    while host:
        if host in KNOWN:
            return KNOWN[host]
        _, _, host = host.partition(".")
    return "key"


async def endpoint_scopes(store: Store) -> dict[str, tuple[str, str]]:
    """Every endpoint's (set scope or "", base URL); asked on every admit, so
    cached until the endpoints table changes (here at once, elsewhere within
    the cache's TTL)."""

    async def read() -> dict[str, tuple[str, str]]:
        async with store.read() as session:
            rows = await session.execute(select(Endpoint.name, Endpoint.limit_scope, Endpoint.base_url))
            return {name: (scope, url) for name, scope, url in rows}

    return await _ENDPOINTS.get(store, read)


def effective_scope(chosen: str, base_url: str, learned_per_model: bool) -> Scope:
    """The order the module docstring gives: set, learned, known, key."""
    if chosen in LIMIT_SCOPES:
        return chosen
    if learned_per_model:
        return "model"
    return default_scope(base_url)


async def scopes_in_words(store: Store) -> dict[str, str]:
    """Each endpoint's scope and where it came from, for `endpoint list`:
    from the store alone (a CLI process has no limiter memory), where a limit
    kept for one model says the endpoint was learned, or set, to count per model."""
    async with store.read() as session:
        per_model = set(
            (await session.scalars(select(LearnedLimit.endpoint).where(LearnedLimit.served != ""))).all()
        )
    out = {}
    for name, (chosen, base_url) in (await endpoint_scopes(store)).items():
        scope = effective_scope(chosen, base_url, name in per_model)
        if chosen:
            out[name] = f"{scope} (set)"
        elif scope != default_scope(base_url):
            out[name] = f"{scope} (learned)"
        else:
            out[name] = scope
    return out
