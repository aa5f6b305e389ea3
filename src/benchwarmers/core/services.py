"""`Core`: the four services for one identity over one open runtime, what
a front end holds for the length of a command (the CLI) or a request.

    async with Core.open() as core:                 # the owner, data folder from the environment
        await core.admin.add_endpoint("hub", "https://hub.example/v1")
        async for event in await core.panels.panel(ask): ...

Closing it lets panels still running finish and be recorded first
(`finish_background`), then closes the runtime.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

from benchwarmers.core.admin import Admin
from benchwarmers.core.operations import BenchServices, Operations
from benchwarmers.core.panels import Panels, finish_background
from benchwarmers.core.routing import RouteMode
from benchwarmers.core.spend import Spend
from benchwarmers.identity.scope import OWNER, Identity
from benchwarmers.runtime import Runtime
from benchwarmers.store.db import redacted_url


class Core:
    def __init__(
        self, runtime: Runtime, identity: Identity = OWNER, services: BenchServices | None = None
    ) -> None:
        self.panels = Panels(runtime, identity)
        self.route = RouteMode(runtime, identity)
        self.admin = Admin(runtime, identity)
        self.ops = Operations(runtime, identity, services)
        self.spend = Spend(runtime, identity)
        self.home: Path = runtime.home
        # Where the store is, with any password in the URL masked: safe to print.
        self.store_url = redacted_url(runtime.store.url)

    @classmethod
    @asynccontextmanager
    async def open(
        cls, home: Path | None = None, database_url: str | None = None, identity: Identity = OWNER
    ) -> AsyncIterator[Core]:
        """Open the runtime (data folder and database from the environment
        unless given), yield the services, close it all."""
        async with Runtime.open(home=home, database_url=database_url) as runtime:
            try:
                yield cls(runtime, identity)
            finally:
                await finish_background()
