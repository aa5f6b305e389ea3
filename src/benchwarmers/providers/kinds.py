"""The API kinds we call out to, one `ProviderKind` each: its adapter,
whether its endpoints need a key, its usual base URL, and the one way an
endpoint's models are listed.

Registered by import (`providers/__init__.py`, one `register` line per
adapter module), so the adapter classes are imported like any module (no
name looked up in a string) and every list of API kinds comes from here:
`api_kinds()` for the CLI's and the dashboard's choices (through the core),
`kind(api).needs_key` for "an Ollama endpoint needs no key" wherever an
endpoint is added, `kind(api).default_base_url` for the URL offered first.
`types.ApiKind` is the same names as a static type; a test holds the two
equal.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

from benchwarmers.config import tunables
from benchwarmers.config.keys import endpoint_key, env_var_name
from benchwarmers.errors import ProviderAuthError
from benchwarmers.providers.base import Adapter, Target
from benchwarmers.providers.outbound import OutboundClient
from benchwarmers.types import ApiKind

LIST_SECONDS = tunables.LIST_SECONDS.value


@dataclass(frozen=True, slots=True)
class EndpointAt:
    """An endpoint not kept yet (`endpoint add` checks the server first)."""

    name: str
    api: ApiKind
    base_url: str
    needs_key: bool


class EndpointLike(Protocol):
    """What is needed of an endpoint to call it (`store.views.EndpointView`)."""

    @property
    def name(self) -> str: ...
    @property
    def api(self) -> ApiKind: ...
    @property
    def base_url(self) -> str: ...
    @property
    def needs_key(self) -> bool: ...


@dataclass(frozen=True, slots=True)
class ProviderKind:
    """One API kind. `needs_key`: whether a new endpoint of it needs a key
    unless told otherwise (Ollama runs locally without one);
    `default_base_url`: where its own service answers (Ollama: on this
    machine), the URL an endpoint of it is offered first."""

    adapter: type[Adapter]
    needs_key: bool
    default_base_url: str

    @property
    def api(self) -> ApiKind:
        return self.adapter.api


_KINDS: dict[str, ProviderKind] = {}


def register(provider: ProviderKind) -> ProviderKind:
    if provider.api in _KINDS:
        raise ValueError(f"API kind {provider.api!r} is registered already")
    _KINDS[provider.api] = provider
    return provider


def kinds() -> tuple[ProviderKind, ...]:
    return tuple(_KINDS.values())


def api_kinds() -> tuple[ApiKind, ...]:
    return tuple(provider.api for provider in _KINDS.values())


def kind(api: str) -> ProviderKind:
    """The registered kind; an unknown one is a ValueError naming those known."""
    try:
        return _KINDS[api]
    except KeyError:
        raise ValueError(f"unknown API kind {api!r} (known: {', '.join(_KINDS)})") from None


def adapter_for(api: str, outbound: OutboundClient) -> Adapter:
    """The adapter for an endpoint's API kind, on the shared client: made
    once per client (an adapter keeps no state of a call), asked every call."""
    made = outbound.adapters
    adapter = made.get(api)
    if adapter is None:
        adapter = made[api] = kind(api).adapter(outbound)
    return adapter


def key_of(endpoint: EndpointLike) -> str | None:
    """The endpoint's key (None when it needs none); one that needs a key
    and has none is refused here, before anything goes out, with what to do
    about it (the provider's own "invalid API key" says neither whose key
    nor where)."""
    if not endpoint.needs_key:
        return None
    key = endpoint_key(endpoint.name)
    if key is None:
        raise ProviderAuthError(
            f"no key for endpoint {endpoint.name!r}: set {env_var_name(endpoint.name)}, "
            f"or run `benchwarmers endpoint key set {endpoint.name}`"
        )
    return key


async def listed_models(
    outbound: OutboundClient,
    endpoint: EndpointLike,
    *,
    key: str | None = None,
    timeout: float = LIST_SECONDS,
) -> list[str]:
    """The served ids an endpoint lists now, asked with its key (or `key`,
    one not kept yet); a `ProviderError` when it cannot say (no key for one
    that needs it included)."""
    target = Target(
        endpoint.name,
        endpoint.api,
        endpoint.base_url,
        served="",
        key=key if key is not None else key_of(endpoint),
    )
    return await adapter_for(endpoint.api, outbound).list_models(target, timeout=timeout)
