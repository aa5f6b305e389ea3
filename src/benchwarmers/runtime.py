"""The Runtime: what one process opens once and everything else borrows.

The server, each CLI command and each test open one Runtime; it holds the
data folder, the migrated store, the one pooled HTTP client every outbound
call shares (connection reuse matters when a panel fans out to many models
on one provider), and the settings.

    async with Runtime.open() as rt:                 # home and database from the environment
        await list_models(rt.store)                  # store.models

    async with Runtime.open(home=tmp_path, database_url="postgresql://...") as rt: ...

Extending it: add an attribute below (with a default when it is built
after the store, e.g. `limiter`), build it in `open` and close it in the
`finally` block, in reverse order of opening.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import os
import ssl
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import httpx

from benchwarmers.config import environment
from benchwarmers.config.home import ensure_home, resolve_home
from benchwarmers.limits.counters import Counters, MemoryCounters, open_counters
from benchwarmers.limits.enforce import Limiter
from benchwarmers.limits.panels import PanelSlots
from benchwarmers.limits.shared import SocketCounters
from benchwarmers.limits.spending import Spending
from benchwarmers.providers.outbound import OutboundClient
from benchwarmers.store import changes, journal, kept
from benchwarmers.store.conversations import Conversations
from benchwarmers.store.db import Store, sqlite_url
from benchwarmers.store.migrate import migrate
from benchwarmers.store.settings import Settings

DATABASE_URL_ENV = environment.DATABASE_URL.name
# Counters in Redis, so several servers share rate limits (and drop each other's
# stale route stickiness); else in this process.
REDIS_URL_ENV = environment.REDIS_URL.name


class Runtime:
    def __init__(
        self,
        home: Path,
        store: Store,
        http: httpx.AsyncClient,
        outbound: OutboundClient,
        settings: Settings,
        limiter: Limiter | None = None,
        conversations: Conversations | None = None,
    ) -> None:
        self.home = home
        self.store = store
        self.http = http
        self.outbound = outbound
        # Panels running in this process, under the max_panels caps (limits/panels.py).
        self.panel_slots = PanelSlots()
        self.settings = settings
        self.limiter = limiter or Limiter(store, MemoryCounters())
        self.counters: Counters = self.limiter.counters
        # Budgets, counted on the limiter's counters (limits/spending.py).
        self.spending = Spending(store, self.counters)
        # Route stickiness, read from memory (store/conversations.py).
        self.conversations = conversations or Conversations(store)

    @classmethod
    @asynccontextmanager
    async def open(cls, home: Path | None = None, database_url: str | None = None) -> AsyncIterator[Runtime]:
        """Resolve and check the data folder, open and migrate the store
        (`database_url`, else `BENCHWARMERS_DATABASE_URL`, else SQLite in the
        data folder), and open the HTTP client."""
        folder = ensure_home(home if home is not None else resolve_home())
        url = database_url or os.environ.get(DATABASE_URL_ENV, "").strip() or sqlite_url(folder)
        store = Store(url, home=folder)
        changes.watch(store)  # its writes drop the cached reads at once (store/changes.py)
        redis_url = os.environ.get(REDIS_URL_ENV, "").strip() or None
        # A worker of `serve --workers N` without Redis: the supervisor's counters
        # (limits/shared.py), and route stickiness read again after its few seconds, as
        # replicas without Redis do (another worker may have moved a conversation).
        shared = None if redis_url else environment.COUNTERS_SOCKET.read() or None
        limiter = Limiter(store, SocketCounters(shared) if shared else open_counters(redis_url))
        conversations = Conversations(store, redis_url, ttl=changes.DEFAULT_TTL if shared else None)
        sweeper: asyncio.Task[None] | None = None
        try:
            await migrate(store)
            await journal.replay(store)  # calls a killed process told clients of, not yet committed
            await conversations.start()
            await kept.sweep(store)  # kept text whose time is up (store/kept.py), then hourly
            sweeper = asyncio.create_task(_sweep_kept_text(store))
            # Model calls on `outbound` (a panel fans out to hundreds of streams per
            # endpoint: our own keep-alive HTTP/1.1, gated, providers/outbound.py and
            # wire.py); other fetches (catalog,
            # datasets) on `http`, no default timeout (each passes its own).
            async with OutboundClient() as outbound, httpx.AsyncClient(timeout=None, verify=_tls()) as http:
                yield cls(
                    home=folder,
                    store=store,
                    http=http,
                    outbound=outbound,
                    settings=Settings(store),
                    limiter=limiter,
                    conversations=conversations,
                )
        finally:
            if sweeper is not None:
                sweeper.cancel()
                await asyncio.gather(sweeper, return_exceptions=True)
            await conversations.close()
            await limiter.close()
            await store.close()


async def _sweep_kept_text(store: Store) -> None:
    """Every hour while the runtime is open: the kept text whose time is up goes."""
    while True:
        await asyncio.sleep(kept.SWEEP_EVERY_SECONDS)
        with contextlib.suppress(Exception):  # a store briefly out of reach: the next hour tries again
            await kept.sweep(store)


@functools.cache
def _tls() -> ssl.SSLContext:
    """The fetch client's TLS settings (httpx's own defaults), built once per
    process: loading the CA bundle costs tens of milliseconds, which every
    CLI command and every test opening a runtime paid again."""
    return httpx.create_ssl_context()
