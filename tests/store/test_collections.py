"""The collections' rules: members that exist, once each, settings
checked; the cached reads by name, following every write at once."""

from __future__ import annotations

import pytest

from benchwarmers.errors import Conflict, NotFound, UserError
from benchwarmers.runtime import Runtime
from benchwarmers.store.collections import (
    add_collection,
    collections_by_name,
    get_collection,
    list_collections,
    remove_collection,
    update_collection,
)
from benchwarmers.store.models import add_model, get_model, models_by_alias, remove_model, set_role


async def test_collection_round_trip(bench: Runtime) -> None:
    added = await add_collection(
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
    assert (await get_collection(bench.store, "bench/duo")).purpose == "second opinions"
    updated = await update_collection(bench.store, "duo", members=["alpha"], explorer_seats=1, merger="")
    assert (updated.members, updated.explorer_seats, updated.merger, updated.reply) == (
        ("alpha",),
        1,
        "",
        "merged",
    )
    assert [c.members for c in await list_collections(bench.store)] == [("alpha",)]
    with pytest.raises(Conflict, match="member of duo"):
        await remove_model(bench.store, "alpha")
    await remove_model(bench.store, "beta")
    await remove_collection(bench.store, "duo")
    assert await list_collections(bench.store) == []


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
        (["alpha"], {"deadline": -1}, UserError, "deadline must be 0 to 86400 seconds"),
        (["alpha"], {"deadline": 1e12}, UserError, "deadline must be 0 to 86400 seconds"),
    ],
)
async def test_collection_validation(
    bench: Runtime, members: list[str], options: dict[str, object], error: type[Exception], message: str
) -> None:
    with pytest.raises(error, match=message):
        await add_collection(bench.store, "panel", members, **options)  # type: ignore[arg-type]


async def test_collection_names(bench: Runtime) -> None:
    with pytest.raises(UserError, match="collection name"):
        await add_collection(bench.store, "bench/trio", ["alpha"])
    await add_collection(bench.store, "trio", ["alpha"])
    with pytest.raises(Conflict):
        await add_collection(bench.store, "trio", ["beta"])


async def test_the_indexes_by_name_follow_every_write_at_once(bench: Runtime) -> None:
    # The cached read is indexed when it is loaded: a write here drops both together.
    store = bench.store
    models = await models_by_alias(store)
    assert sorted(models) == ["alpha", "beta"] and models["beta"].role == "code"
    await add_collection(store, "pair", ["alpha", "beta"])
    collections = await collections_by_name(store)
    assert list(collections) == ["pair"] and collections["pair"].members == ("alpha", "beta")
    with pytest.raises(TypeError):
        collections["other"] = collections["pair"]  # type: ignore[index]  # shared by every ask: read-only

    await set_role(store, "beta", "general")
    await add_model(store, "gamma", "hub", "vendor/gamma")
    await update_collection(store, "pair", members=["gamma", "alpha"])
    await add_collection(store, "also", ["gamma"])
    models = await models_by_alias(store)
    assert sorted(models) == ["alpha", "beta", "gamma"] and models["beta"].role == "general"
    assert (await get_model(store, "gamma")).served == "vendor/gamma"
    collections = await collections_by_name(store)
    assert list(collections) == ["also", "pair"] and collections["pair"].members == ("gamma", "alpha")
    assert (await get_collection(store, "bench/also")).members == ("gamma",)

    await remove_collection(store, "also")
    assert list(await collections_by_name(store)) == ["pair"]
    with pytest.raises(NotFound):
        await get_collection(store, "also")


async def test_counts_past_any_panel_are_refused(bench: Runtime) -> None:
    """A quorum or seat count SQLite's integer cannot hold was a 500 (an OverflowError on write)."""
    with pytest.raises(UserError, match=r"quorum must be at most 1000 seats, not 100\.\.\. \(301 digits\)"):
        await add_collection(bench.store, "huge", ["alpha"], quorum=10**300)
    with pytest.raises(UserError, match="seats must be at most 1000"):
        await add_collection(bench.store, "huge", ["alpha"], seats=2**63)
    assert (await add_collection(bench.store, "wide", ["alpha"], quorum=1000)).quorum == 1000
