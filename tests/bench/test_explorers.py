"""Explorer seats go only to models that can answer and, where the
collection asks for free, cost nothing: an endpoint a call through the real
caller could not reach is skipped until something answers from it."""

from __future__ import annotations

from benchwarmers.bench import decisions
from benchwarmers.calls import reach
from benchwarmers.calls.caller import Caller
from benchwarmers.runtime import Runtime
from benchwarmers.store.collections import add_collection
from benchwarmers.store.endpoints import add_endpoint
from benchwarmers.store.models import add_model, get_model
from benchwarmers.types import Request, Sampling, user


async def add(rt: Runtime, alias: str, **kw: object) -> None:
    await add_model(rt.store, alias, "local", alias + "-served", **kw)  # type: ignore[arg-type]


async def test_explorers_are_reachable_and_free_where_the_collection_asks_for_free(offline: Runtime) -> None:
    # `local` points at a closed port: a call through the caller cannot connect.
    await add_endpoint(offline.store, "other", "http://127.0.0.1:9/v2", "openai", needs_key=False)
    await add(offline, "stranded")
    await add_model(offline.store, "free", "other", "free-served", price_in=0.0, price_out=0.0)
    await add_model(offline.store, "went-paid", "other", "paid-served", price_in=0.1, price_out=0.4)
    await add_model(offline.store, "member", "other", "member-served")
    await add_collection(offline.store, "thrifty", ["member"], explorer_seats=1, free_only=True)
    await add_collection(offline.store, "open", ["member"], explorer_seats=1)
    stranded = await get_model(offline.store, "stranded")
    request = Request(messages=(user("hi"),), sampling=Sampling(max_tokens=5))
    result = await Caller(offline).call(stranded, request, kind="seat", timeout=2.0)
    assert result.status == "error"
    members = ["member"]
    explorers = await decisions.pick_explorers(offline.store, "open", "short", 5, exclude=members)
    assert set(explorers) == {"free", "went-paid"}
    assert await decisions.pick_explorers(offline.store, "thrifty", "short", 5, exclude=members) == ["free"]
    # Any reply from the endpoint makes it reachable again.
    await reach.note(offline.store, "local", reachable=True)
    assert "stranded" in await decisions.pick_explorers(offline.store, "open", "short", 5, exclude=members)
