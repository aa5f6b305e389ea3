"""Reads wait for the writes this process promised and has not committed
yet (the call log's journaled calls, `calls/log.py`) only where they read
those writes' tables (`db.reading`): a cache of other tables is not read
behind the call log's commit, a read that says nothing waits for every
write, and every cache names each table its load touches, so none of them
skips a call it must see."""

from __future__ import annotations

import importlib
import pkgutil
import re
from typing import Any

import pytest
from sqlalchemy import event

import benchwarmers
from benchwarmers.bench import decisions
from benchwarmers.calls import log
from benchwarmers.calls.call_ids import new_call_id
from benchwarmers.calls.log import CallRow
from benchwarmers.limits import budgets, scope, user_limits
from benchwarmers.panel import history
from benchwarmers.runtime import Runtime
from benchwarmers.store import changes, db
from benchwarmers.store.collections import add_collection, get_collection
from benchwarmers.store.db import reading
from benchwarmers.store.endpoints import add_endpoint
from benchwarmers.store.models import add_model, models_by_alias
from benchwarmers.store.schema import Base, Call
from benchwarmers.store.settings import Settings


def a_row(**fields: Any) -> CallRow:
    values: dict[str, Any] = {"kind": "seat", "alias": "a", "endpoint": "e", "served": "m", "status": "ok"}
    return CallRow(new_call_id(), seconds=1.0, **{**values, **fields})


@pytest.fixture
def lingering(monkeypatch: pytest.MonkeyPatch) -> None:
    """A journaled call waits for company until a read that needs it commits it."""
    monkeypatch.setattr(log, "LINGER", 3600.0)


@pytest.mark.usefixtures("lingering")
async def test_a_read_of_other_tables_does_not_wait_for_calls_on_their_way(runtime: Runtime) -> None:
    row = a_row()
    log.submit_call(runtime.store, row)
    with reading(("settings",)):
        async with runtime.store.read() as session:
            # It said it reads the settings: the call is not committed for it (looked at only to see so).
            assert await session.get(Call, row.id) is None
    with reading(("settings", "calls")):
        async with runtime.store.read() as session:
            assert await session.get(Call, row.id) is not None


@pytest.mark.usefixtures("lingering")
async def test_the_stores_check_waits_for_no_call_on_its_way(runtime: Runtime) -> None:
    """`/healthz` checks the store often: under load it must not wait on the call log's commits."""
    row = a_row()
    log.submit_call(runtime.store, row)
    await runtime.store.check()
    with reading(("settings",)):
        async with runtime.store.read() as session:
            # The check did not have the call committed for it (looked at only to see so).
            assert await session.get(Call, row.id) is None


@pytest.mark.usefixtures("lingering")
async def test_a_read_that_names_no_tables_waits_for_every_call_on_its_way(runtime: Runtime) -> None:
    row = a_row()
    log.submit_call(runtime.store, row)
    with reading(("settings",)):
        async with runtime.store.read():
            pass
        with reading(("calls",)):  # the innermost says
            async with runtime.store.read() as session:
                assert await session.get(Call, row.id) is not None
    later = a_row()
    log.submit_call(runtime.store, later)
    async with runtime.store.read() as session:
        assert await session.get(Call, later.id) is not None


@pytest.mark.usefixtures("lingering")
async def test_a_cache_waits_for_calls_on_their_way_only_when_it_reads_the_log(runtime: Runtime) -> None:
    row = a_row()
    log.submit_call(runtime.store, row)

    async def load() -> bool:
        async with runtime.store.read() as session:
            return await session.get(Call, row.id) is not None

    # (A cache that reads the log and does not say so: what the audit below rules out.)
    assert not await changes.Cached(("models",)).get(runtime.store, load)
    assert await changes.Cached(("models",), reads=("calls",)).get(runtime.store, load)


# ------------------------------------------------------- every cache, audited

_NAMED = re.compile(r"""\b(?:FROM|JOIN|INTO|UPDATE)\s+["`]?(\w+)""", re.IGNORECASE)
_TABLES = frozenset(Base.metadata.tables)


async def test_every_cache_reads_only_the_tables_it_names(
    runtime: Runtime, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = runtime.store
    await add_endpoint(store, "e", "http://127.0.0.1:9/v1", needs_key=False)
    for alias in ("a", "b", "c", "d"):
        await add_model(store, alias, "e", alias)
    await add_collection(store, "trio", ["a", "b", "c"], seats=2, explorer_seats=1)
    await log.record_call(store, a_row(collection="trio", shape="short", first_byte_seconds=0.1))
    modules = [
        importlib.import_module(m.name) for m in pkgutil.walk_packages(benchwarmers.__path__, "benchwarmers.")
    ]
    caches = [
        value for module in modules for value in vars(module).values() if isinstance(value, changes.Cached)
    ]
    assert len(caches) >= 10
    for cache in caches:
        cache.forget()
    loaded: set[int] = set()
    read = changes.Cached._read

    async def noted(self: changes.Cached[Any], load: Any) -> Any:
        loaded.add(id(self))
        return await read(self, load)

    monkeypatch.setattr(changes.Cached, "_read", noted)
    stray: list[tuple[frozenset[str], str]] = []

    def on_execute(_conn: Any, _cursor: Any, statement: str, *_rest: Any) -> None:
        reads = db._reading.get()
        touched = {name.lower() for name in _NAMED.findall(statement)} & _TABLES
        if reads is not None and not touched <= reads:
            stray.append((reads, statement))

    engine = store.engine.sync_engine
    event.listen(engine, "before_cursor_execute", on_execute)
    try:
        # What reads each cache: an ask's path, its seating and its limits.
        await models_by_alias(store)
        await get_collection(store, "trio")
        await scope.endpoint_scopes(store)
        await user_limits.limits_for(store, "e", "a")
        await budgets.all_budgets(store)
        await Settings(store).current()
        await decisions.rank(store, "trio", "short", ["a", "b", "c"])
        await decisions.pick_explorers(store, "trio", "short", 1, exclude=["a", "b", "c"])
        await history.note_panel(store, "trio", "short", ["a", "b"], [], [])
    finally:
        event.remove(engine, "before_cursor_execute", on_execute)
    assert stray == []
    # A cache added later must be read above too, or this audit says nothing of it.
    assert [cache.tables for cache in caches if id(cache) not in loaded] == []
