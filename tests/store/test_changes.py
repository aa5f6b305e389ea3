"""Cached reads: dropped by a write here, run out after their time to live,
and read again behind the asks that use them late in that time."""

from __future__ import annotations

import asyncio
from pathlib import Path
from types import SimpleNamespace

import pytest

from benchwarmers.runtime import Runtime
from benchwarmers.store import changes
from benchwarmers.store.endpoints import add_endpoint
from benchwarmers.store.models import add_model, list_models


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def monotonic(self) -> float:
        return self.now


@pytest.fixture
def clock(monkeypatch: pytest.MonkeyPatch) -> Clock:
    clock = Clock()
    # The module's clock alone: the event loop's timers keep the real one.
    monkeypatch.setattr(changes, "time", SimpleNamespace(monotonic=clock.monotonic))
    return clock


class Source:
    """A load that counts its reads and can be held open or made to fail."""

    def __init__(self) -> None:
        self.value = "first"
        self.reads = 0
        self.gate = asyncio.Event()
        self.gate.set()
        self.failing = False

    async def load(self) -> str:
        self.reads += 1
        await self.gate.wait()
        if self.failing:
            raise RuntimeError("the store is away")
        return self.value


async def test_an_entry_used_late_in_its_time_is_served_at_once_and_read_again_behind(
    runtime: Runtime, clock: Clock
) -> None:
    cache: changes.Cached[str] = changes.Cached(("models",), ttl=2.0)
    source = Source()
    assert await cache.get(runtime.store, source.load) == "first"
    clock.now += 1.0  # not yet late: served, not read again
    assert await cache.get(runtime.store, source.load) == "first"
    assert source.reads == 1

    source.value, source.gate = "second", asyncio.Event()  # the next read is held open
    clock.now += 0.6  # past REFRESH_AHEAD of 2 s
    assert await cache.get(runtime.store, source.load) == "first"  # the ask did not wait for the read
    assert await cache.get(runtime.store, source.load) == "first"  # one refresh at a time
    await asyncio.sleep(0)
    assert source.reads == 1  # not read yet: what the ask set going next goes first
    await asyncio.sleep(changes.REFRESH_AFTER * 2)  # a later timer than the refresh's
    assert source.reads == 2
    source.gate.set()
    await changes._refreshes_of(runtime.store).finish()
    clock.now += 1.9  # the refreshed entry's age counts from its read, not the old one's
    assert await cache.get(runtime.store, source.load) == "second"
    assert source.reads == 2


async def test_entries_late_together_are_read_again_one_after_another(runtime: Runtime, clock: Clock) -> None:
    """The caches an ask uses come due together: their refreshes take one
    connection at a time, not one each at once (docs/benchmarks.md, issue 39)."""
    first: changes.Cached[str] = changes.Cached(("models",), ttl=2.0)
    second: changes.Cached[str] = changes.Cached(("endpoints",), ttl=2.0)
    one, two = Source(), Source()
    await first.get(runtime.store, one.load)
    await second.get(runtime.store, two.load)
    one.value, one.gate = "one again", asyncio.Event()  # the first refresh is held open
    two.value = "two again"
    clock.now += 1.8  # both late
    assert await first.get(runtime.store, one.load) == "first"
    assert await second.get(runtime.store, two.load) == "first"
    await asyncio.sleep(changes.REFRESH_AFTER * 2)
    assert (one.reads, two.reads) == (2, 1)  # the second waits for the first's read
    assert changes._refreshes_of(runtime.store)
    one.gate.set()
    await changes._refreshes_of(runtime.store).finish()
    assert (one.reads, two.reads) == (2, 2)
    assert not changes._refreshes_of(runtime.store)
    clock.now += 0.1
    assert await first.get(runtime.store, one.load) == "one again"
    assert await second.get(runtime.store, two.load) == "two again"


async def test_a_refresh_that_fails_leaves_the_entry_to_run_out(runtime: Runtime, clock: Clock) -> None:
    cache: changes.Cached[str] = changes.Cached(("models",), ttl=2.0)
    source = Source()
    await cache.get(runtime.store, source.load)
    source.failing = True
    clock.now += 1.8
    assert await cache.get(runtime.store, source.load) == "first"
    await changes._refreshes_of(runtime.store).finish()
    assert source.reads == 2
    clock.now += 0.3  # past its time: the ask reads itself, and hears of the failure
    with pytest.raises(RuntimeError, match="away"):
        await cache.get(runtime.store, source.load)


async def test_a_write_here_is_still_read_while_the_ask_waits(runtime: Runtime, clock: Clock) -> None:
    await add_endpoint(runtime.store, "local", "http://127.0.0.1:9/v1", "openai", needs_key=False)
    await add_model(runtime.store, "one", "local", "m1")
    assert [m.alias for m in await list_models(runtime.store)] == ["one"]
    clock.now += 1.9  # late in its time, but a write makes it stale: no stale answer
    await add_model(runtime.store, "two", "local", "m2")
    assert [m.alias for m in await list_models(runtime.store)] == ["one", "two"]


async def test_a_write_to_another_table_keeps_the_entry_and_one_to_its_own_drops_it(
    runtime: Runtime, clock: Clock
) -> None:
    """Every use checks one count of the database's writes; a write to any
    table moves it, and then the entry's own tables are compared: kept when
    they did not move, read again when they did, however many uses between."""
    store = runtime.store
    cache = changes.Cached[str](("models",))
    source = Source()
    assert await cache.get(store, source.load) == "first"
    changes.committed(store, ("calls",))  # another table: the count moves, the entry's tables do not
    source.value = "second"
    assert await cache.get(store, source.load) == "first"
    assert await cache.get(store, source.load) == "first"
    assert source.reads == 1
    changes.committed(store, ("endpoints",))
    changes.committed(store, ("models",))  # its own table, after another's
    assert await cache.get(store, source.load) == "second"
    assert await cache.get(store, source.load) == "second"
    assert source.reads == 2


async def test_closing_the_store_lets_a_refresh_under_way_finish(home: Path, clock: Clock) -> None:
    cache: changes.Cached[str] = changes.Cached(("models",), ttl=2.0)
    source = Source()
    async with Runtime.open(home=home) as runtime:
        await cache.get(runtime.store, source.load)
        source.value, source.gate = "second", asyncio.Event()
        clock.now += 1.8
        await cache.get(runtime.store, source.load)
        await asyncio.sleep(0)
        asyncio.get_running_loop().call_later(0.01, source.gate.set)
    assert not changes._refreshes_of(runtime.store)  # done before the store closed
    clock.now += 0.1
    assert await cache.get(runtime.store, Source().load) == "second"


async def test_asks_that_find_no_entry_share_one_read(runtime: Runtime, clock: Clock) -> None:
    cache: changes.Cached[str] = changes.Cached(("models",), ttl=2.0)
    source = Source()
    source.gate = asyncio.Event()
    asks = [asyncio.create_task(cache.get(runtime.store, source.load)) for _ in range(10)]
    await asyncio.sleep(0)
    source.gate.set()
    assert await asyncio.gather(*asks) == ["first"] * 10
    assert source.reads == 1


async def test_a_read_begun_before_a_write_here_is_not_shared(runtime: Runtime, clock: Clock) -> None:
    cache: changes.Cached[str] = changes.Cached(("models",), ttl=2.0)
    source = Source()
    source.gate = asyncio.Event()
    early = asyncio.create_task(cache.get(runtime.store, source.load))
    await asyncio.sleep(0)
    changes.committed(runtime.store, ("models",))  # a write lands while the first read is under way
    source.value = "second"
    late = asyncio.create_task(cache.get(runtime.store, source.load))
    await asyncio.sleep(0)
    source.gate.set()
    assert await late == "second"
    assert source.reads == 2
    await early


async def test_when_the_shared_read_fails_each_ask_reads_for_itself(runtime: Runtime, clock: Clock) -> None:
    cache: changes.Cached[str] = changes.Cached(("models",), ttl=2.0)
    failing, source = Source(), Source()
    failing.gate, failing.failing = asyncio.Event(), True
    first = asyncio.create_task(cache.get(runtime.store, failing.load))
    await asyncio.sleep(0)
    second = asyncio.create_task(cache.get(runtime.store, source.load))  # waits for the first's read
    await asyncio.sleep(0)
    assert source.reads == 0
    failing.gate.set()
    with pytest.raises(RuntimeError, match="away"):
        await first
    assert await second == "first"  # then read for itself
    assert (failing.reads, source.reads) == (1, 1)


async def test_an_ask_cancelled_while_it_waits_for_a_shared_read_is_cancelled(
    runtime: Runtime, clock: Clock
) -> None:
    cache: changes.Cached[str] = changes.Cached(("models",), ttl=2.0)
    source = Source()
    source.gate = asyncio.Event()
    reader = asyncio.create_task(cache.get(runtime.store, source.load))
    await asyncio.sleep(0)
    waiter = asyncio.create_task(cache.get(runtime.store, source.load))
    await asyncio.sleep(0)
    waiter.cancel()
    with pytest.raises(asyncio.CancelledError):
        await waiter
    source.gate.set()
    assert await reader == "first"  # the read went on for the one that began it
    assert source.reads == 1


async def test_inside_current_a_write_by_another_process_is_seen_at_once(
    runtime: Runtime, clock: Clock
) -> None:
    """Another worker's write bumps nothing here: outside `current()` the
    entry is served until its time is up; inside, each cache it names is
    read again once (what it read is kept for the others), one it does not
    name is served as before, and a read under way that began before it is
    not shared."""
    store = runtime.store
    cache = changes.Cached[str](("pair_verdicts",))
    source = Source()
    assert await cache.get(store, source.load) == "first"
    source.value = "second"  # written by another process: no version moved here
    clock.now += 0.5
    assert await cache.get(store, source.load) == "first"
    other, elsewhere = changes.Cached[str](("pair_verdicts",)), Source()
    assert await other.get(store, elsewhere.load) == "first"
    elsewhere.value = "second"
    with changes.current(cache):
        assert await cache.get(store, source.load) == "second"
        assert await cache.get(store, source.load) == "second"
        assert await other.get(store, elsewhere.load) == "first"
    assert (source.reads, elsewhere.reads) == (2, 1)
    assert await cache.get(store, source.load) == "second"  # kept for the asks after it
    assert source.reads == 2
    # A read begun before `current()` began is not the one it waits for.
    source.gate.clear()
    clock.now += 5  # run out: the next use reads, and waits on the gate
    early = asyncio.create_task(cache.get(store, source.load))
    await asyncio.sleep(0)
    source.value = "third"
    clock.now += 0.1
    with changes.current(cache):
        late = asyncio.create_task(cache.get(store, source.load))
        await asyncio.sleep(0)
    source.gate.set()
    await early
    assert await late == "third"
    assert source.reads == 4
