"""What this process changed in the store, so hot reads can be cached safely.

Every ask reads the same few rows (the collection, the bench, the user's
limits); reading them from the store each time costs a round trip per
statement, which on SQLite is a thread hop each way. `Cached` keeps such a
read and drops it the moment a write touching its tables commits in this
process (any writer: the registry, onboarding, a rest after a 429, a test),
and after `ttl` seconds in any case, so a change made by another process
(the CLI beside a running server, another replica) shows within that time;
inside `current(caches)` (the leaderboard's judgements) those caches serve
only a read begun after it began, so such a change shows at once.

Reading again when the time is up would make one ask in every `ttl`
seconds per cache wait for the store (1-9 ms each, measured on a panel's
path: half of back-to-back asks paid one), so an entry used in the last
quarter of its time is read again in the background while it is still
served (`REFRESH_AHEAD`); only an entry past its time, or one a write here
made stale, is read while the ask waits, and asks that find no entry at
the same moment wait for one read rather than each making its own (ten
connections would otherwise read ten times at once, half of them on new
pool connections). What is served is never older than `ttl`: a refreshed
entry's age counts from when its read began.

The caches an ask uses were read together, so they come due together: a
panel's ask finds nine late at once. Their refreshes are read one after
another by one task per store (`_Refreshes`), not each in a task of its
own at the same moment: nine reads at once took nine of SQLite's pooled
connections, past the pool's five, so every refresh round opened (a
thread, the file, the pragmas) and closed four more, and their threads
fought the event loop's for the interpreter (docs/benchmarks.md, issue
39: a third of `panel.py`'s asks, 3fd40b0's five caches stayed within
the pool). One after another they take one connection at a time, and an
entry waits at most a few reads longer, well inside its last quarter.

How a write is seen: the store's engine reports every statement; an INSERT,
UPDATE or DELETE marks its table on the connection, and the commit bumps
that table's version for the database. The version is bumped again once the
connection is back in the pool (the commit event fires just *before* the
commit lands, and a read that started in between must not be kept). A
writer that writes past SQLAlchemy (the call log's own connection) says
which tables it wrote once its commit has landed (`committed`).

    BENCH = Cached(("models", "endpoints"))
    models = await BENCH.get(store, lambda: load_models(store))   # a fresh list each time

A cache's load reads only its tables, and those it names in `reads` (a
table whose every write need not drop the entry, like the call log for a
mean of recent first bytes): its reads wait for no write promised to
another table (`db.reading`), so a cache of the settings is not read
behind the call log's commit.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import re
import time
import weakref
from collections import deque
from collections.abc import Awaitable, Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass
from itertools import repeat
from types import MappingProxyType
from typing import Any, Generic, TypeVar

from sqlalchemy import event
from sqlalchemy.engine import Engine

from benchwarmers.config import tunables
from benchwarmers.store.db import Store, reading

T = TypeVar("T")

# How stale a cached read may be when another process changed the store.
DEFAULT_TTL = 2.0
# The share of its time to live after which an entry in use is read again behind the ask.
REFRESH_AHEAD = 0.75
REFRESH_AFTER = tunables.CACHE_REFRESH_AFTER.value

# The table an INSERT / UPDATE / DELETE writes to ("INSERT OR REPLACE INTO x", "UPDATE x SET").
_WRITE = re.compile(
    r"""\s*(?:INSERT(?:\s+OR\s+\w+)?\s+INTO|REPLACE\s+INTO|UPDATE(?:\s+OR\s+\w+)?|DELETE\s+FROM)\s+["`]?(\w+)""",
    re.IGNORECASE,
)
_PENDING = "benchwarmers_changed_tables"  # written, not yet committed
_LANDING = "benchwarmers_committed_tables"  # committed, bumped again once the commit is surely in

# database (`Store.database_key`: stores on one database share it) -> table -> version; only ever goes up.
# Under `_ANY` (no table's name) the count of bumps to any table of it: an
# entry that saw that count knows its tables unchanged without reading each
# one's version (`Cached.get`, on every use of every cache).
_versions: dict[str, dict[str, int]] = {}
_ANY = ""
_watched: weakref.WeakSet[Engine] = weakref.WeakSet()
# Inside `current(caches)`: per cache, the time (this module's clock) before which none of its
# entries or shared reads is used. Never mutated: `current` sets a new mapping.
_NOT_BEFORE: contextvars.ContextVar[Mapping[Cached[Any], float]] = contextvars.ContextVar(
    "benchwarmers_read_after", default=MappingProxyType({})
)
# How many `current` blocks are open in this process, any task's: while none is (every ask's
# read), a cached read does not look `_NOT_BEFORE` up (a context variable and a mapping per read).
_open_current = 0


@contextlib.contextmanager
def current(*caches: Cached[Any]) -> Iterator[None]:
    """Inside it, each of `caches` serves only a read begun inside it: what
    another process (another worker or replica, the CLI) wrote before it
    began is seen, not up to `ttl` later. For a read a person compares with
    what they just wrote through another worker, and with the rows it reads
    itself (the leaderboard's scores beside the pairs it counts); an ask's
    hot path keeps its cached reads, and an entry read inside it is kept
    for them."""
    global _open_current
    began = time.monotonic()
    token = _NOT_BEFORE.set({**_NOT_BEFORE.get(), **dict.fromkeys(caches, began)})
    _open_current += 1
    try:
        yield
    finally:
        _open_current -= 1
        _NOT_BEFORE.reset(token)


def _read_before(cache: Cached[Any], loaded_at: float) -> bool:
    """Whether a read of `cache` made at `loaded_at` began before the `current`
    block this task is in wants (so it may not serve it)."""
    return loaded_at < _NOT_BEFORE.get().get(cache, -1.0)


def watch(store: Store) -> None:
    """Start seeing the writes made through this store's engine, idempotent."""
    if store.watched:
        return
    versions = _versions_of(store.database_key)
    engine = store.engine.sync_engine
    if engine not in _watched:
        _watched.add(engine)
        _watch_engine(engine, versions)
    store.watched = True


def committed(store: Store, tables: tuple[str, ...]) -> None:
    """A commit made past the store's engine has landed, writing `tables`:
    on the event loop's thread, after the commit and before anyone is told
    of it (a read that started before it landed is then not kept)."""
    _bump(_versions_of(store.database_key), tables)


def _versions_of(database: str) -> dict[str, int]:
    return _versions.setdefault(database, {_ANY: 0})


def _bump(versions: dict[str, int], tables: Iterable[str]) -> None:
    for table in tables:
        versions[table] = versions.get(table, 0) + 1
    versions[_ANY] += 1


def _watch_engine(engine: Engine, versions: dict[str, int]) -> None:

    def land(info: dict[str, Any]) -> None:
        landed = info.pop(_LANDING, None)
        if landed:
            _bump(versions, landed)

    def on_execute(conn: Any, _cursor: Any, statement: str, *_rest: Any) -> None:
        info = _info(conn)
        land(info)
        written = _WRITE.match(statement)
        if written:
            info.setdefault(_PENDING, set()).add(written.group(1).lower())

    def on_commit(conn: Any) -> None:
        info = _info(conn)
        land(info)
        written = info.pop(_PENDING, None)
        if written:
            _bump(versions, written)
            info[_LANDING] = written

    def on_rollback(conn: Any) -> None:
        info = _info(conn)
        land(info)
        info.pop(_PENDING, None)

    def on_checkin(_dbapi: Any, record: Any) -> None:
        if record is not None:
            land(record.info)

    event.listen(engine, "before_cursor_execute", on_execute)
    event.listen(engine, "commit", on_commit)
    event.listen(engine, "rollback", on_rollback)
    event.listen(engine, "checkin", on_checkin)


def _info(conn: Any) -> dict[str, Any]:
    """The connection's notes; a throwaway dict when it has none to give (a
    connection invalidated mid-transaction, say by a cancelled read, raises
    on `.info`, and an event handler must never raise)."""
    try:
        info: dict[str, Any] = conn.info
        return info
    except Exception:
        return {}


def stamp(store: Store, tables: tuple[str, ...]) -> tuple[int, ...]:
    versions = _versions.get(store.database_key, {})
    # In C (`map`): a comprehension is a frame of its own.
    return tuple(map(versions.get, tables, repeat(0)))


class _Entry(Generic[T]):
    """A kept read: its tables' versions when it began, when it began, its
    value, and the database's count of bumps (`_ANY`) at which its tables
    were last found at those versions."""

    __slots__ = ("loaded_at", "seen", "stamp", "value")

    def __init__(self, stamp: tuple[int, ...], loaded_at: float, value: T, seen: int) -> None:
        self.stamp = stamp
        self.loaded_at = loaded_at
        self.value = value
        self.seen = seen


class Cached(Generic[T]):
    """One read of `tables`, per database, kept until one of them changes
    here or `ttl` seconds pass, and read again behind the asks that use it
    late in that time. The value must not be mutated by callers (hand out
    copies of mutable ones), and `load` must read the same thing whoever
    calls it (it may run after its caller has gone on) and no table but
    `tables` and `reads` (those whose writes do not drop the entry)."""

    def __init__(
        self, tables: tuple[str, ...], ttl: float = DEFAULT_TTL, *, reads: tuple[str, ...] = ()
    ) -> None:
        self.tables = tables
        self.ttl = ttl
        self.reads = frozenset((*tables, *reads))
        self._entries: dict[str, _Entry[T]] = {}
        self._refreshing: set[str] = set()  # databases whose entry is being read again behind the asks
        # The read under way per database: its stamp and time when it began, and its value to come.
        self._reading: dict[str, tuple[tuple[int, ...], float, asyncio.Future[T]]] = {}

    async def get(self, store: Store, load: Callable[[], Awaitable[T]]) -> T:
        if not store.watched:
            watch(store)
        database = store.database_key
        entry = self._entries.get(database)
        now = time.monotonic()
        if entry is not None:
            # Nothing bumped in this database since the entry was last found
            # current: its tables are as they were, without reading each
            # one's version (most uses: every use of every cache asks).
            versions = _versions[database]
            bumps = versions[_ANY]
            if entry.seen == bumps or entry.stamp == tuple(map(versions.get, self.tables, repeat(0))):
                entry.seen = bumps
                age = now - entry.loaded_at
                if age < self.ttl and not (_open_current and _read_before(self, entry.loaded_at)):
                    if age >= self.ttl * REFRESH_AHEAD and database not in self._refreshing:
                        self._refresh_behind(store, database, load)
                    return entry.value
        return await self._load(store, database, load, stamp(store, self.tables), now)

    def forget(self) -> None:
        """Read again next time (tests, or a change made behind the store's back)."""
        self._entries.clear()

    async def _load(
        self,
        store: Store,
        database: str,
        load: Callable[[], Awaitable[T]],
        before: tuple[int, ...],
        began: float,
    ) -> T:
        """Read, or wait for the same read under way: asks that find no entry
        at once (ten connections after it ran out, or a refresh that has not
        landed in time) share one read, not one each. A read that began
        before a write here, or longer than `ttl` ago, is not shared, and one
        that fails or is cancelled leaves each of its waiters to read for
        itself."""
        loop = asyncio.get_running_loop()
        under_way = self._reading.get(database)
        if under_way is not None:
            stamped, since, shared = under_way
            fresh = began - since < self.ttl and not (_open_current and _read_before(self, since))
            if stamped == before and fresh and shared.get_loop() is loop:
                try:
                    return await asyncio.shield(shared)
                except asyncio.CancelledError:
                    task = asyncio.current_task()
                    if not shared.cancelled() or (task is not None and task.cancelling()):
                        raise  # this ask was cancelled, not the read it waited for
                return await self._read(load)
        shared = loop.create_future()
        self._reading[database] = (before, began, shared)
        try:
            value = await self._read(load)
        except BaseException:
            shared.cancel()
            raise
        finally:
            if database in self._reading and self._reading[database][2] is shared:
                del self._reading[database]
        shared.set_result(value)
        if stamp(store, self.tables) == before:  # nothing committed meanwhile: safe to keep
            self._entries[database] = _Entry(before, began, value, _versions[database][_ANY])
        return value

    async def _read(self, load: Callable[[], Awaitable[T]]) -> T:
        with reading(self.reads):
            return await load()

    def _refresh_behind(self, store: Store, database: str, load: Callable[[], Awaitable[T]]) -> None:
        self._refreshing.add(database)
        _refreshes_of(store).add(_Refresh(self, store, database, load))

    async def _refreshed(self, store: Store, database: str, load: Callable[[], Awaitable[T]]) -> None:
        try:
            # A failed read leaves the entry to run out as before; the next ask's own read reports it.
            with contextlib.suppress(Exception):
                await self._load(store, database, load, stamp(store, self.tables), time.monotonic())
        finally:
            self._refreshing.discard(database)


@dataclass(frozen=True, slots=True)
class _Refresh:
    """One entry to read again behind the asks."""

    cache: Cached[Any]
    store: Store
    database: str
    load: Callable[[], Awaitable[Any]]

    async def run(self) -> None:
        await self.cache._refreshed(self.store, self.database, self.load)

    def drop(self) -> None:
        """Not read after all (its loop went away first): the next late ask asks again."""
        self.cache._refreshing.discard(self.database)


# The refreshes waiting or under way per store, so closing the store lets them finish first.
_refreshes: weakref.WeakKeyDictionary[Store, _Refreshes] = weakref.WeakKeyDictionary()


def _refreshes_of(store: Store) -> _Refreshes:
    refreshes = _refreshes.get(store)
    if refreshes is None:
        refreshes = _refreshes[store] = _Refreshes()
        store.on_close(refreshes.finish)
    return refreshes


class _Refreshes:
    """A store's refreshes, read one after another by one task on its event
    loop (see the module's docstring): the task starts `REFRESH_AFTER`
    after the first, so the ask that found an entry late goes first, and
    reads every refresh asked meanwhile before it ends. Each task reads
    only its own list, on its own loop. True while any is waiting or under way."""

    def __init__(self) -> None:
        self._waiting: deque[_Refresh] = deque()
        self._task: asyncio.Task[None] | None = None

    def __bool__(self) -> bool:
        return bool(self._waiting) or (self._task is not None and not self._task.done())

    def add(self, refresh: _Refresh) -> None:
        loop = asyncio.get_running_loop()
        task = self._task
        if task is None or task.done() or task.get_loop() is not loop:
            if task is not None and not task.done() and not task.get_loop().is_running():
                _drop(self._waiting)  # its loop went away (a test's): never to be read
            self._waiting = deque()
            self._task = loop.create_task(_read_all(self._waiting), name="cache refresh")
        self._waiting.append(refresh)

    async def finish(self) -> None:
        task = self._task
        if task is not None and not task.done() and task.get_loop() is asyncio.get_running_loop():
            await task


async def _read_all(waiting: deque[_Refresh]) -> None:
    try:
        await asyncio.sleep(REFRESH_AFTER)
        while waiting:
            await waiting.popleft().run()
    finally:  # cancelled (the loop closing): those not read are asked again by the next late ask
        _drop(waiting)


def _drop(waiting: deque[_Refresh]) -> None:
    while waiting:
        waiting.popleft().drop()
