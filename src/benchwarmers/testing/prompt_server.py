"""uvicorn for the servers tests start and stop in a thread (`LiveServer`,
`FakeProvider`): stopped the moment it is told, since a test run stops
hundreds of them."""

from __future__ import annotations

import asyncio
import socket
from contextlib import suppress

import uvicorn


class PromptServer(uvicorn.Server):
    """uvicorn, stopped the moment it is told: a test run stops hundreds of
    live servers, and uvicorn spends two tenths of a second on each stop
    even when idle (its main loop looks at `should_exit` every tenth, and
    its shutdown sleeps a tenth for connections to close even when there
    are none). `stop_now` wakes the loop; with no connection left, the
    shutdown goes straight on to uvicorn's own wait for tasks and lifespan."""

    def __init__(self, config: uvicorn.Config) -> None:
        super().__init__(config)
        self._wake: asyncio.Event | None = None
        self._loop: asyncio.AbstractEventLoop | None = None

    async def main_loop(self) -> None:
        self._loop, self._wake = asyncio.get_running_loop(), asyncio.Event()
        counter = 0
        should_exit = await self.on_tick(counter)
        while not should_exit:
            counter = (counter + 1) % 864000  # uvicorn's own tick count: the date header once a second
            with suppress(TimeoutError):
                await asyncio.wait_for(self._wake.wait(), 0.1)
            should_exit = await self.on_tick(counter)

    async def shutdown(self, sockets: list[socket.socket] | None = None) -> None:
        if self.server_state.connections:
            await super().shutdown(sockets)  # its tenth of a second lets them close
            return
        for server in self.servers:
            server.close()
        for sock in sockets or []:
            sock.close()
        try:
            await asyncio.wait_for(self._wait_tasks_to_complete(), self.config.timeout_graceful_shutdown)
        except TimeoutError:
            # The lifespan's shutdown waits for them to unwind (`server.app.cancelled_requests_unwound`).
            for task in self.server_state.tasks:
                task.cancel(msg="Task cancelled, timeout graceful shutdown exceeded")
        if not self.force_exit:
            await self.lifespan.shutdown()

    def stop_now(self) -> None:
        """From any thread: exit, without waiting for the next tick."""
        self.should_exit = True
        if self._loop is not None and self._wake is not None:
            with suppress(RuntimeError):  # its loop has closed already
                self._loop.call_soon_threadsafe(self._wake.set)
