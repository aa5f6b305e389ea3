"""The bench's admin rules: endpoints, models, collections."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from benchwarmers.errors import Conflict, NotFound, UserError
from benchwarmers.runtime import Runtime
from benchwarmers.store import registry


@pytest.fixture
def runtime(any_runtime: Runtime) -> Runtime:
    """Every test here runs on SQLite and on PostgreSQL."""
    return any_runtime


@pytest.fixture
async def bench(runtime: Runtime) -> Runtime:
    await registry.add_endpoint(runtime.store, "hub", "https://hub.example/v1/", "openai")
    await registry.add_model(runtime.store, "alpha", "hub", "vendor/alpha")
    await registry.add_model(runtime.store, "beta", "hub", "vendor/beta", role="code")
    return runtime


async def test_endpoint_round_trip(runtime: Runtime) -> None:
    added = await registry.add_endpoint(runtime.store, "my-hub", "http://127.0.0.1:11434/", "ollama")
    assert added.base_url == "http://127.0.0.1:11434"
    assert added.needs_key is False  # ollama runs keyless by default
    assert [e.name for e in await registry.list_endpoints(runtime.store)] == ["my-hub"]
    assert (await registry.get_endpoint(runtime.store, "my-hub")).api == "ollama"
    await registry.remove_endpoint(runtime.store, "my-hub")
    with pytest.raises(NotFound):
        await registry.get_endpoint(runtime.store, "my-hub")


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
        await registry.add_endpoint(runtime.store, name, url, api)


async def test_endpoint_names_that_share_a_key_variable_conflict(runtime: Runtime) -> None:
    await registry.add_endpoint(runtime.store, "my-hub", "https://a.example", "openai")
    with pytest.raises(Conflict, match="BENCHWARMERS_KEY_MY_HUB"):
        await registry.add_endpoint(runtime.store, "my_hub", "https://b.example", "openai")
    with pytest.raises(Conflict, match="already exists"):
        await registry.add_endpoint(runtime.store, "my-hub", "https://b.example", "openai")


async def test_endpoint_with_models_is_not_removed(bench: Runtime) -> None:
    with pytest.raises(Conflict, match=r"still serves 2 model\(s\) \(alpha, beta\)"):
        await registry.remove_endpoint(bench.store, "hub")
    assert await registry.count_models(bench.store) == {"hub": 2}


async def test_model_views_carry_their_endpoint(bench: Runtime) -> None:
    model = await registry.get_model(bench.store, "beta")
    assert (model.endpoint.name, model.endpoint.base_url, model.served, model.role) == (
        "hub",
        "https://hub.example/v1",
        "vendor/beta",
        "code",
    )
    assert model.status == "available"
    assert [m.alias for m in await registry.list_models(bench.store, endpoint="hub")] == ["alpha", "beta"]


async def test_model_errors(bench: Runtime) -> None:
    with pytest.raises(Conflict, match="alias 'alpha' is already"):
        await registry.add_model(bench.store, "alpha", "hub", "vendor/other")
    with pytest.raises(Conflict, match="already on the bench as 'alpha'"):
        await registry.add_model(bench.store, "alpha-2", "hub", "vendor/alpha")
    with pytest.raises(NotFound, match="no endpoint named 'nowhere'"):
        await registry.add_model(bench.store, "gamma", "nowhere", "vendor/gamma")
    with pytest.raises(UserError, match="role 'boss'"):
        await registry.add_model(bench.store, "gamma", "hub", "vendor/gamma", role="boss")
    with pytest.raises(UserError, match="served model id"):
        await registry.add_model(bench.store, "gamma", "hub", "has space")
    with pytest.raises(NotFound):
        await registry.retire(bench.store, "nobody")


async def test_retire_restore_and_role(bench: Runtime) -> None:
    retired = await registry.retire(bench.store, "alpha", "stopped answering")
    assert (retired.status, retired.status_reason) == ("retired", "stopped answering")
    assert [m.alias for m in await registry.list_models(bench.store, include_retired=False)] == ["beta"]
    restored = await registry.restore(bench.store, "alpha")
    assert restored.status == "available"
    vision = await registry.set_role(bench.store, "alpha", "vision")
    assert (vision.role, vision.vision) == ("vision", True)
    with pytest.raises(UserError):
        await registry.set_role(bench.store, "alpha", "boss")


async def test_resting_needs_an_end(bench: Runtime) -> None:
    with pytest.raises(UserError, match="rests until"):
        await registry.set_status(bench.store, "alpha", "resting")
    until = datetime.now(UTC) + timedelta(minutes=5)
    resting = await registry.set_status(bench.store, "alpha", "resting", reason="429", resting_until=until)
    assert resting.resting_until == until
    assert (await registry.restore(bench.store, "alpha")).resting_until is None


async def test_collection_round_trip(bench: Runtime) -> None:
    added = await registry.add_collection(
        bench.store,
        "duo",
        ["beta", "alpha"],
        reply="merged",
        merger="alpha",
        purpose="second opinions",
        seats=2,
    )
    assert added.members == ("beta", "alpha")
    assert (added.reply, added.merger, added.seats) == ("merged", "alpha", 2)
    assert (await registry.get_collection(bench.store, "bench/duo")).purpose == "second opinions"
    updated = await registry.update_collection(
        bench.store, "duo", members=["alpha"], explorer_seats=1, merger=""
    )
    assert (updated.members, updated.explorer_seats, updated.merger, updated.reply) == (
        ("alpha",),
        1,
        "",
        "merged",
    )
    assert [c.members for c in await registry.list_collections(bench.store)] == [("alpha",)]
    with pytest.raises(Conflict, match="member of duo"):
        await registry.remove_model(bench.store, "alpha")
    await registry.remove_model(bench.store, "beta")
    await registry.remove_collection(bench.store, "duo")
    assert await registry.list_collections(bench.store) == []


@pytest.mark.parametrize(
    ("members", "options", "error", "message"),
    [
        (["alpha", "ghost"], {}, NotFound, "'ghost'"),
        ([], {}, UserError, "at least one member"),
        (["alpha", "alpha"], {}, UserError, "listed twice"),
        (["alpha"], {"reply": "chorus"}, UserError, "reply mode"),
        (["alpha"], {"merger": "ghost"}, NotFound, "'ghost'"),
        (["alpha"], {"seats": -1}, UserError, "negative"),
        (["alpha"], {"seat_timeout": 0}, UserError, "timeout"),
    ],
)
async def test_collection_validation(
    bench: Runtime, members: list[str], options: dict[str, object], error: type[Exception], message: str
) -> None:
    with pytest.raises(error, match=message):
        await registry.add_collection(bench.store, "panel", members, **options)  # type: ignore[arg-type]


async def test_collection_names(bench: Runtime) -> None:
    with pytest.raises(UserError, match="collection name"):
        await registry.add_collection(bench.store, "bench/trio", ["alpha"])
    await registry.add_collection(bench.store, "trio", ["alpha"])
    with pytest.raises(Conflict):
        await registry.add_collection(bench.store, "trio", ["beta"])


async def test_the_indexes_by_name_follow_every_write_at_once(bench: Runtime) -> None:
    # The cached read is indexed when it is loaded: a write here drops both together.
    store = bench.store
    models = await registry.models_by_alias(store)
    assert sorted(models) == ["alpha", "beta"] and models["beta"].role == "code"
    await registry.add_collection(store, "pair", ["alpha", "beta"])
    collections = await registry.collections_by_name(store)
    assert list(collections) == ["pair"] and collections["pair"].members == ("alpha", "beta")
    with pytest.raises(TypeError):
        collections["other"] = collections["pair"]  # type: ignore[index]  # shared by every ask: read-only

    await registry.set_role(store, "beta", "general")
    await registry.add_model(store, "gamma", "hub", "vendor/gamma")
    await registry.update_collection(store, "pair", members=["gamma", "alpha"])
    await registry.add_collection(store, "also", ["gamma"])
    models = await registry.models_by_alias(store)
    assert sorted(models) == ["alpha", "beta", "gamma"] and models["beta"].role == "general"
    assert (await registry.get_model(store, "gamma")).served == "vendor/gamma"
    collections = await registry.collections_by_name(store)
    assert list(collections) == ["also", "pair"] and collections["pair"].members == ("gamma", "alpha")
    assert (await registry.get_collection(store, "bench/also")).members == ("gamma",)

    await registry.remove_collection(store, "also")
    assert list(await registry.collections_by_name(store)) == ["pair"]
    with pytest.raises(NotFound):
        await registry.get_collection(store, "also")
