"""The store: one async SQLAlchemy engine, read sessions for anyone, and a
single writer.

SQLite allows one writer at a time; letting several coroutines race for it
turns into "database is locked" under load. So, as Datasette does, every
write goes through one lock in this process (`Store.write`), while reads
run freely against WAL snapshots. PostgreSQL needs no such lock, and across
replicas it would not help anyway, so there the lock is not taken.
"""

from __future__ import annotations

import asyncio
import hashlib
import os
import sqlite3
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable, Iterator
from contextlib import asynccontextmanager, contextmanager
from contextvars import ContextVar
from pathlib import Path
from typing import Any

from sqlalchemy import event
from sqlalchemy.ext.asyncio import AsyncEngine, AsyncSession, async_sessionmaker, create_async_engine

from benchwarmers.errors import StoreError

SQLITE_FILE = "benchwarmers.db"


def sqlite_url(home: Path) -> str:
    return f"sqlite+aiosqlite:///{home / SQLITE_FILE}"


def async_url(url: str) -> str:
    """Accept the URLs people paste (`postgresql://…`, `sqlite:///…`) and name
    the async driver for them."""
    if url.startswith(("postgresql://", "postgres://")):
        return "postgresql+asyncpg://" + url.split("://", 1)[1]
    if url.startswith("sqlite:///"):
        return "sqlite+aiosqlite:///" + url[len("sqlite:///") :]
    return url


class Store:
    def __init__(self, url: str, home: Path | None = None) -> None:
        self.url = async_url(url)
        self.fingerprint = store_fingerprint(url)
        # The data folder of the process that opened it: where the call log's journal lives
        # when the database is not a file here (`store/journal.py`); None: no journal there.
        self.home = home
        self.is_sqlite = self.url.startswith("sqlite")
        kwargs: dict[str, Any] = {}
        if not self.is_sqlite:
            kwargs.update(pool_size=10, max_overflow=20, pool_pre_ping=True)
        self.engine: AsyncEngine = create_async_engine(self.url, **kwargs)
        if self.is_sqlite:
            event.listen(self.engine.sync_engine, "connect", _sqlite_pragmas)
        self._sessions = async_sessionmaker(self.engine, expire_on_commit=False)
        # Which database this is, for the caches (`store/changes.py`): stores on one database
        # share it; an in-memory database is its own. Worked out once: rendering a URL is
        # not free, and every cached read asks.
        engine_url = self.engine.url
        if self.is_sqlite and engine_url.database in (None, "", ":memory:"):
            self.database_key = f"{engine_url}#{id(self.engine)}"
        else:
            self.database_key = engine_url.render_as_string(hide_password=True)
        self.watched = False  # set once `store.changes.watch` sees its writes
        # What modules keep for this store in this process, each under a key of its own
        # (`store/space.py`'s room, `calls/reach.py`'s notes, `panel/pace.py`'s times): a dict
        # here, where a WeakKeyDictionary keyed by the store made a weak reference per lookup,
        # and a call looked up three. Nothing kept here may hold the store (no cycle).
        self.local: dict[str, Any] = {}
        self._write_lock = asyncio.Lock()
        self._closers: list[Callable[[], Awaitable[None]]] = []
        # The SQLite file, for a writer with a connection of its own in a thread of its own
        # (the call log's, `calls/log.py`); None on PostgreSQL or in memory.
        database = self.engine.url.database if self.is_sqlite else None
        self.sqlite_file: str | None = database if database and database != ":memory:" else None

    @asynccontextmanager
    async def read(self) -> AsyncIterator[AsyncSession]:
        """A session for reading, once the writes this process promised and
        has not committed yet (`wait_before_reads`) have landed: only those to
        the tables the read says it reads (`reading`), else every one."""
        if _landings:
            reads = _reading.get()
            for tables, landing in _landings.get(self.database_key, ()):
                if (reads is None or not reads.isdisjoint(tables)) and (waiting := landing()) is not None:
                    await waiting
        async with self._sessions() as session:
            yield session

    @asynccontextmanager
    async def write(self) -> AsyncIterator[AsyncSession]:
        """A session that commits on success and rolls back on error; on SQLite
        the only one open for writing in this process."""
        if self.is_sqlite:
            async with self._write_lock, self._sessions() as session, session.begin():
                yield session
        else:
            async with self._sessions() as session, session.begin():
                yield session

    @asynccontextmanager
    async def writing(self) -> AsyncIterator[None]:
        """The one writer's turn without a session: for a writer with its own
        connection (the call log's, `calls/log.py`), so its transactions never
        interleave with `write()`'s on SQLite."""
        if self.is_sqlite:
            async with self._write_lock:
                yield
        else:
            yield

    def write_turn_taken(self) -> bool:
        """Whether someone in this process holds the writer's turn on SQLite now."""
        return self._write_lock.locked()

    def on_close(self, closer: Callable[[], Awaitable[None]]) -> None:
        """Run `closer` first when the store closes (a writer finishing what it holds)."""
        self._closers.append(closer)

    async def close(self) -> None:
        closers, self._closers = self._closers, []
        for closer in closers:
            await closer()
        await self.engine.dispose()

    async def check(self) -> None:
        """Fail with one clear line when the database cannot be reached."""
        from sqlalchemy import text

        try:
            with reading(()):  # reads no table: waits for no call on its way (`/healthz` asks often)
                async with self.read() as session:
                    await session.execute(text("SELECT 1"))
        except Exception as exc:  # any driver error means the same thing to the user
            raise StoreError(f"cannot open the store at {redacted_url(self.url)}: {exc}") from exc


# What a read of a database waits for first, by `Store.database_key`: writes this process
# handed to a writer of its own and told a client of before they were committed (the call
# log's on an SQLite file, `calls/log.py`), so that whatever reads their tables in this
# process, on any store object or event loop, reads back what it said. Each: the tables it
# writes, and a function returning what to await, or None when nothing is on its way.
Landing = Callable[[], Awaitable[None] | None]
_landings: dict[str, list[tuple[frozenset[str], Landing]]] = {}
# The tables the reads made in this context read, when whoever makes them knows (a cache's
# load: `store/changes.py`); None: any table, so a read waits for every landing.
_reading: ContextVar[frozenset[str] | None] = ContextVar("benchwarmers_reading", default=None)


def wait_before_reads(store: Store, tables: Iterable[str], landing: Landing) -> Callable[[], None]:
    """Have every read of the store's database that may read `tables` wait
    for `landing` first; the function returned undoes it."""
    entry = (frozenset(tables), landing)
    _landings.setdefault(store.database_key, []).append(entry)

    def undo() -> None:
        waiting = _landings.get(store.database_key, [])
        if entry in waiting:
            waiting.remove(entry)
        if not waiting:
            _landings.pop(store.database_key, None)

    return undo


@contextmanager
def reading(tables: Iterable[str]) -> Iterator[None]:
    """The reads made inside read only `tables`: they wait for no write on
    its way to other tables (a cache of the settings need not wait for the
    call log's commit). Whoever says so must name every table its reads
    touch, those of the helpers it calls included (`tests/store/test_reads.py`
    checks the caches'); a read that names none waits for every write."""
    token = _reading.set(frozenset(tables))
    try:
        yield
    finally:
        _reading.reset(token)


def sqlite_connect(file: str) -> sqlite3.Connection:
    """A plain driver connection on the store's SQLite file, with the same
    pragmas, in autocommit mode (its owner says BEGIN and COMMIT): for a
    writer that runs in a thread of its own (opened before that thread starts,
    so it may be used from another thread than the one that opened it)."""
    connection = sqlite3.connect(file, isolation_level=None, check_same_thread=False)
    _sqlite_pragmas(connection, None)
    return connection


def _sqlite_pragmas(dbapi_connection: Any, _record: Any) -> None:
    cursor = dbapi_connection.cursor()
    cursor.execute("PRAGMA journal_mode=WAL")
    cursor.execute("PRAGMA synchronous=NORMAL")
    cursor.execute("PRAGMA foreign_keys=ON")
    cursor.execute("PRAGMA busy_timeout=5000")
    # A deleted row's bytes are overwritten, not left in a free page of the file: the
    # text a collection kept is gone from the data folder once deleted (`store/kept.py`).
    # Debian's SQLite is built with it on; SQLite's own default (macOS, Windows) is off.
    cursor.execute("PRAGMA secure_delete=ON")
    cursor.close()


def store_fingerprint(url: str) -> str:
    """A short digest naming a store (its SQLite file's real path, or its
    database URL without the password): `/healthz` says it, so `doctor` can
    tell whether the server it reached uses this data folder's store
    without the path or the URL leaving the machine."""
    url = async_url(url)
    if url.startswith("sqlite") and ":///" in url:
        scheme, path = url.split(":///", 1)
        url = f"{scheme}:///{os.path.realpath(path)}"
    return hashlib.sha256(redacted_url(url).encode()).hexdigest()[:16]


def redacted_url(url: str) -> str:
    """A database URL without its password, for messages."""
    if "@" in url and "://" in url:
        scheme, rest = url.split("://", 1)
        creds, host = rest.rsplit("@", 1)
        user = creds.split(":", 1)[0]
        return f"{scheme}://{user}:***@{host}"
    return url
