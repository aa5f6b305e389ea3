"""Run the real server on a free loopback port, in a background thread, for
integration tests anywhere in the project.

    with live_server(tmp_path) as server:
        httpx.get(f"{server.url}/healthz")
        server.restart()                      # same data folder, same port
        ...

The app is the one `benchwarmers serve` runs (the composition root's routers,
`assembly.ROUTERS`, over a `core.CoreHandle` on `Runtime.open(home, database_url)`; a test that
looks under the core reads `server.runtime` while it runs), under uvicorn with its own event loop
in a daemon thread, so a test's own loop (pytest-asyncio) and clients
(httpx, the official SDKs) talk to it over real HTTP: no subprocess, and
a fresh data folder gets a copy of a store migrated once per process, so a
start costs tens of milliseconds plus the routers' own start-up.

`acting_as` makes the guard believe the server is bound to that address
(say "0.0.0.0") while it listens on loopback only: how tests check the
rules for exposed servers without exposing anything.
"""

from __future__ import annotations

import asyncio
import os
import socket
import threading
import time
import weakref
from collections.abc import AsyncIterator, Callable, Iterator, Sequence
from contextlib import AbstractAsyncContextManager, asynccontextmanager, contextmanager
from pathlib import Path
from typing import Any

import uvicorn
from fastapi import APIRouter, FastAPI

from benchwarmers.assembly import ROUTERS
from benchwarmers.calls.log import flush_log
from benchwarmers.core import CoreHandle
from benchwarmers.runtime import DATABASE_URL_ENV, Runtime
from benchwarmers.server.app import create_app
from benchwarmers.server.protocol import GuardedHttpToolsProtocol
from benchwarmers.testing.prompt_server import PromptServer
from benchwarmers.testing.store_template import copy_migrated_store

START_TIMEOUT = 30.0
STOP_TIMEOUT = 10.0

Lifespan = Callable[[Any], AbstractAsyncContextManager[Any]]


class LiveServer:
    def __init__(
        self,
        home: Path,
        *,
        database_url: str | None = None,
        port: int = 0,
        acting_as: str = "127.0.0.1",
        routers: Sequence[APIRouter] = ROUTERS,
        extra_routers: Sequence[APIRouter] = (),
    ) -> None:
        self.home = home
        self.routers: tuple[APIRouter, ...] = (*routers, *extra_routers)
        self.database_url = database_url
        self.acting_as = acting_as
        self.port = port
        self.app: FastAPI | None = None
        self.runtime: Runtime | None = None  # the running app's, for tests that look under the core
        self._server: PromptServer | None = None
        self._thread: threading.Thread | None = None
        self._startup_error: BaseException | None = None
        self._loop: asyncio.AbstractEventLoop | None = None

    @property
    def url(self) -> str:
        if self._server is None:
            raise RuntimeError("the live server is not running")
        return f"http://127.0.0.1:{self.port}"

    def start(self) -> LiveServer:
        if self._server is not None:
            raise RuntimeError("the live server is already running")
        if self.database_url is None and not os.environ.get(DATABASE_URL_ENV):
            copy_migrated_store(self.home)
        sock = _listening_socket(self.port)
        self.port = sock.getsockname()[1]
        self._startup_error = None
        self.app = create_app(self._open_core, bind_host=self.acting_as, routers=self.routers)
        self.app.router.lifespan_context = self._recording(self.app.router.lifespan_context)
        config = uvicorn.Config(
            self.app,
            lifespan="on",
            http=GuardedHttpToolsProtocol,  # head deadline and size (server/protocol.py)
            ws="none",
            log_config=None,
            log_level="warning",
            access_log=False,
            server_header=False,
            timeout_graceful_shutdown=2,
        )
        server = PromptServer(config)
        thread = threading.Thread(
            target=_serve, args=(server, sock), name=f"live-server-{self.port}", daemon=True
        )
        thread.start()
        deadline = time.monotonic() + START_TIMEOUT
        while not server.started:
            if not thread.is_alive() or time.monotonic() > deadline:
                server.should_exit = True
                thread.join(STOP_TIMEOUT)
                sock.close()
                reason = self._startup_error or "it did not start in time"
                raise RuntimeError(f"the live server failed to start: {reason}") from self._startup_error
            time.sleep(0.002)
        self._server, self._thread = server, thread
        return self

    def stop(self) -> None:
        server, thread = self._server, self._thread
        self._server = self._thread = None
        if server is None or thread is None:
            return
        server.stop_now()
        thread.join(STOP_TIMEOUT)
        if thread.is_alive():
            server.force_exit = True
            thread.join(STOP_TIMEOUT)

    def settle_log(self) -> None:
        """Until the server has committed every call it handed to its call
        log: on SQLite its replies end once their calls are in the journal
        (`store/journal.py`) and the commit follows them, so a test that
        reads the log straight from the file calls this first."""
        loop = self._loop
        if self._server is not None and loop is not None and loop.is_running():
            asyncio.run_coroutine_threadsafe(flush_log(), loop).result(STOP_TIMEOUT)

    def restart(self) -> LiveServer:
        """Stop and start again on the same data folder and port."""
        self.stop()
        return self.start()

    @asynccontextmanager
    async def _open_core(self) -> AsyncIterator[CoreHandle]:
        """`CoreHandle.open`, keeping the runtime under it as `self.runtime`."""
        async with Runtime.open(self.home, self.database_url) as runtime:
            self.runtime = runtime
            try:
                yield CoreHandle(runtime)
            finally:
                self.runtime = None

    def _recording(self, lifespan: Lifespan) -> Lifespan:
        """The app's lifespan, remembering why it failed to start (uvicorn
        only logs that, and the test should see the reason)."""

        @asynccontextmanager
        async def recording(app: Any) -> AsyncIterator[Any]:
            started = False
            self._loop = asyncio.get_running_loop()
            _running.add(self)
            try:
                async with lifespan(app) as state:
                    started = True
                    yield state
            except BaseException as exc:
                if not started:
                    self._startup_error = exc
                raise

        return recording


_running: weakref.WeakSet[LiveServer] = weakref.WeakSet()


def settle_logs() -> None:
    """`LiveServer.settle_log` for every live server of this process."""
    for server in list(_running):
        server.settle_log()


@contextmanager
def live_server(
    home: Path,
    *,
    database_url: str | None = None,
    acting_as: str = "127.0.0.1",
    routers: Sequence[APIRouter] = ROUTERS,
    extra_routers: Sequence[APIRouter] = (),
) -> Iterator[LiveServer]:
    """A started `LiveServer` for the length of the block. `routers` are the
    app's (all by default); `extra_routers` are mounted beside them (a
    test's probe routes)."""
    server = LiveServer(
        home, database_url=database_url, acting_as=acting_as, routers=routers, extra_routers=extra_routers
    )
    server.start()
    try:
        yield server
    finally:
        server.stop()


def _listening_socket(port: int) -> socket.socket:
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind(("127.0.0.1", port))
    except OSError:
        sock.close()
        raise
    sock.listen(128)
    sock.setblocking(False)
    return sock


def _serve(server: uvicorn.Server, sock: socket.socket) -> None:
    try:
        import uvloop

        runner = asyncio.Runner(loop_factory=uvloop.new_event_loop)
    except ImportError:
        runner = asyncio.Runner()
    try:
        with runner:
            runner.run(server.serve(sockets=[sock]))
    except SystemExit:
        pass  # uvicorn's way of saying the start failed; `start` reports why
    finally:
        sock.close()
