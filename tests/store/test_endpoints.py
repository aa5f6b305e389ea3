"""The endpoints' rules: a name that is a key variable of its own, a URL
and API kind checked, none removed from under its models."""

from __future__ import annotations

import pytest

from benchwarmers.errors import Conflict, NotFound, UserError
from benchwarmers.runtime import Runtime
from benchwarmers.store.endpoints import (
    add_endpoint,
    count_models,
    get_endpoint,
    list_endpoints,
    remove_endpoint,
)


@pytest.fixture
def runtime(any_runtime: Runtime) -> Runtime:
    """Every test here runs on SQLite and on PostgreSQL."""
    return any_runtime


async def test_endpoint_round_trip(runtime: Runtime) -> None:
    added = await add_endpoint(runtime.store, "my-hub", "http://127.0.0.1:11434/", "ollama")
    assert added.base_url == "http://127.0.0.1:11434"
    assert added.needs_key is False  # ollama runs keyless by default
    assert [e.name for e in await list_endpoints(runtime.store)] == ["my-hub"]
    assert (await get_endpoint(runtime.store, "my-hub")).api == "ollama"
    await remove_endpoint(runtime.store, "my-hub")
    with pytest.raises(NotFound):
        await get_endpoint(runtime.store, "my-hub")


@pytest.mark.parametrize(
    ("name", "url", "api", "message"),
    [
        ("Bad Name", "https://x.example", "openai", "endpoint name"),
        ("hub", "ftp://x.example", "openai", "base URL"),
        ("hub", "https://", "openai", "base URL"),
        ("hub", "https://x.example:99999", "openai", "base URL"),
        ("hub", "https://x.example", "cohere", "API kind"),
    ],
)
async def test_endpoint_validation(runtime: Runtime, name: str, url: str, api: str, message: str) -> None:
    with pytest.raises(UserError, match=message):
        await add_endpoint(runtime.store, name, url, api)


async def test_endpoint_names_that_share_a_key_variable_conflict(runtime: Runtime) -> None:
    await add_endpoint(runtime.store, "my-hub", "https://a.example", "openai")
    with pytest.raises(Conflict, match="BENCHWARMERS_KEY_MY_HUB"):
        await add_endpoint(runtime.store, "my_hub", "https://b.example", "openai")
    with pytest.raises(Conflict, match="already exists"):
        await add_endpoint(runtime.store, "my-hub", "https://b.example", "openai")


async def test_endpoint_with_models_is_not_removed(bench: Runtime) -> None:
    with pytest.raises(Conflict, match=r"still serves 2 model\(s\) \(alpha, beta\)"):
        await remove_endpoint(bench.store, "hub")
    assert await count_models(bench.store) == {"hub": 2}
