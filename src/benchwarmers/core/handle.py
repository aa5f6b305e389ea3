"""`CoreHandle`: the core as a long-running front end holds it. The
composition root (`assembly.py`) has the app's lifespan open one at start-up
(`CoreHandle.open`: the runtime under it, store migrated) and keep it on the
app's state; the server's routes, the dashboard and MCP ask it, per
request, for a service as that request's identity. Front ends never hold
the `Runtime` under it: what they may do to the bench is what this and the
services it hands out offer, so a rule lives in the core once and no front
end can reach around it (`lint-imports` forbids them `benchwarmers.runtime`).

    async with CoreHandle.open(home, database_url) as core:   # the app's lifespan
        panels = core.panels(identity, unanswered_is_error=True)   # per request
        store = await core.health()                             # `/healthz`
        policy = await core.login.check(client, name, password) # the dashboard's door

Building a service is a plain constructor call over the runtime already
open: nothing is looked up or opened per request.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import TYPE_CHECKING

from benchwarmers.core.admin import Admin
from benchwarmers.core.diagnostics import serving_store
from benchwarmers.core.login import Login
from benchwarmers.core.operations import BenchServices, Operations, bench_services
from benchwarmers.core.panels import Panels
from benchwarmers.core.routing import RouteMode
from benchwarmers.core.services import Core
from benchwarmers.core.spend import Spend
from benchwarmers.identity.scope import OWNER, Identity
from benchwarmers.runtime import Runtime

if TYPE_CHECKING:
    from benchwarmers.limits.counters import Counters
    from benchwarmers.store.db import Store


class CoreHandle:
    """The core over one open runtime, for every identity; in a server, with
    the bench's background work once it runs (`running_bench`)."""

    __slots__ = ("_bench", "_runtime", "login")

    def __init__(self, runtime: Runtime) -> None:
        self._runtime = runtime
        self._bench: BenchServices | None = None
        self.login = Login(runtime)

    @classmethod
    @asynccontextmanager
    async def open(
        cls, home: Path | None = None, database_url: str | None = None
    ) -> AsyncIterator[CoreHandle]:
        """Open the runtime (data folder and database from the environment
        unless given) and hand out the core over it; close it on the way out."""
        async with Runtime.open(home, database_url) as runtime:
            yield cls(runtime)

    def panels(self, identity: Identity, *, unanswered_is_error: bool = False) -> Panels:
        return Panels(self._runtime, identity, unanswered_is_error=unanswered_is_error)

    def route_mode(self, identity: Identity) -> RouteMode:
        return RouteMode(self._runtime, identity)

    def admin(self, identity: Identity) -> Admin:
        return Admin(self._runtime, identity)

    def spend(self, identity: Identity) -> Spend:
        return Spend(self._runtime, identity)

    def operations(self, identity: Identity) -> Operations:
        """With the bench's background services when they run."""
        return Operations(self._runtime, identity, self._bench)

    def core(self, identity: Identity = OWNER) -> Core:
        """The four services at once (the dashboard's, as the owner)."""
        return Core(self._runtime, identity, self._bench)

    async def health(self) -> str:
        """The store answers and can take a call now (`/healthz`): its
        fingerprint; `StoreError` or `StoreFull` when not."""
        return await serving_store(self._runtime)

    @asynccontextmanager
    async def running_bench(self) -> AsyncIterator[BenchServices]:
        """The bench's background work (the onboarding worker, the
        scheduler) for as long as the block runs; `operations` wakes the
        worker and shows the scheduler's runs meanwhile."""
        async with bench_services(self._runtime) as services:
            self._bench = services
            try:
                yield services
            finally:
                self._bench = None

    def gate(self) -> tuple[Store, Counters]:
        """What the server's guard checks each request against before any
        service runs: the store (its settings, the gateway keys) and the
        rate counters. The guard's own, not a route's."""
        return self._runtime.store, self._runtime.counters
