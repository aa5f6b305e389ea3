"""The provider-kind registry: every API kind registered once, by import,
with its adapter, whether it needs a key and its usual URL; every list of
kinds and every "needs a key" reads it; an endpoint's models are listed one
way, with one rule for a missing key."""

from __future__ import annotations

from dataclasses import dataclass

import pytest

from benchwarmers.core import api_kinds as core_api_kinds
from benchwarmers.core import default_base_url, needs_key_by_default
from benchwarmers.errors import ProviderAuthError
from benchwarmers.providers import kinds
from benchwarmers.providers.memory import MemoryClient, WireRequest, WireResponse
from benchwarmers.runtime import Runtime
from benchwarmers.store.endpoints import add_endpoint
from benchwarmers.types import API_KINDS, ApiKind

pytestmark = pytest.mark.unit


@dataclass(frozen=True)
class Endpoint:
    name: str
    api: ApiKind
    base_url: str
    needs_key: bool


def test_every_api_kind_is_registered_once_with_its_adapter() -> None:
    assert set(kinds.api_kinds()) == set(API_KINDS) == set(core_api_kinds())
    for provider in kinds.kinds():
        assert provider.adapter.api == provider.api
        assert provider.default_base_url.startswith(("http://", "https://"))
    with pytest.raises(ValueError, match="registered already"):
        kinds.register(kinds.kinds()[0])
    with pytest.raises(ValueError, match="unknown API kind 'cohere'"):
        kinds.kind("cohere")


async def test_adapters_are_made_once_per_client() -> None:
    async with MemoryClient(lambda request: WireResponse.json({})) as outbound:
        for api in kinds.api_kinds():
            adapter = kinds.adapter_for(api, outbound)
            assert isinstance(adapter, kinds.kind(api).adapter)
            assert kinds.adapter_for(api, outbound) is adapter


def test_ollama_needs_no_key_and_the_others_do() -> None:
    assert {api: needs_key_by_default(api) for api in API_KINDS} == {
        "openai": True,
        "anthropic": True,
        "gemini": True,
        "ollama": False,
    }
    assert needs_key_by_default("no-such-kind")  # refused by the kind's own check, not let keyless
    assert default_base_url("ollama") == "http://127.0.0.1:11434"


async def test_the_store_default_agrees_with_the_registry(runtime: Runtime) -> None:
    """The store sits below the providers and keeps its own default for
    callers below the core; it must say what the registry says."""
    for api in API_KINDS:
        added = await add_endpoint(runtime.store, f"e-{api}", "http://127.0.0.1:9", api)
        assert added.needs_key is kinds.kind(api).needs_key


async def test_an_endpoint_that_needs_a_missing_key_is_refused_before_listing(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    sent: list[WireRequest] = []

    def handler(request: WireRequest) -> WireResponse:
        sent.append(request)
        return WireResponse.json({"data": [{"id": "m1"}], "models": [{"name": "m1"}]})

    monkeypatch.delenv("BENCHWARMERS_KEY_HUB", raising=False)
    async with MemoryClient(handler) as outbound:
        keyed = Endpoint("hub", "openai", "https://api.example/v1", needs_key=True)
        with pytest.raises(ProviderAuthError, match="no key for endpoint 'hub'"):
            await kinds.listed_models(outbound, keyed)
        assert sent == []
        monkeypatch.setenv("BENCHWARMERS_KEY_HUB", "sk-test-0000")
        assert await kinds.listed_models(outbound, keyed) == ["m1"]
        assert sent[-1].headers["authorization"] == "Bearer sk-test-0000"
        local = Endpoint("local", "ollama", "http://ollama.example:11434", needs_key=False)
        assert await kinds.listed_models(outbound, local) == ["m1"]
        assert "authorization" not in sent[-1].headers
