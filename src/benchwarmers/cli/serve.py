"""`benchwarmers serve [--host 127.0.0.1] [--port 8122] [--demo] [--workers N]`.

The store is opened (and migrated) once before the server starts, so a bad
data folder or database fails as one line here rather than as a traceback
from inside uvicorn; a folder another live `serve` holds is refused in one
line where two would not be safe (`run.hold_data_folder`); the socket and
uvicorn are `server/run.py`'s (shared with the demo), imported only when
the command runs.
"""

from __future__ import annotations

from functools import partial
from pathlib import Path
from typing import Annotated

import typer

from benchwarmers.cli.context import console, with_core
from benchwarmers.cli.errors import print_warning
from benchwarmers.core import Core
from benchwarmers.errors import UserError
from benchwarmers.hosts import is_loopback
from benchwarmers.server import DEFAULT_HOST, DEFAULT_PORT


def register(app: typer.Typer) -> None:
    app.command("serve")(serve)


def serve(
    host: Annotated[
        str, typer.Option("--host", help="Address to listen on; beyond loopback, gateway keys are required.")
    ] = DEFAULT_HOST,
    port: Annotated[int, typer.Option("--port", min=0, max=65535, help="Port to listen on.")] = DEFAULT_PORT,
    demo: Annotated[
        bool,
        typer.Option("--demo", help="Try it with no key: a throwaway bench of three simulated models."),
    ] = False,
    workers: Annotated[
        int,
        typer.Option(
            "--workers", min=1, help="Server processes on the one port, sharing the store and the limits."
        ),
    ] = 1,
) -> None:
    """Run the gateway (every API format), the verdict API and the MCP server on one port."""
    if demo and workers > 1:
        raise UserError("--demo runs one process (its bench is SQLite); drop --workers")
    if demo:
        from benchwarmers.demo import run_demo

        run_demo(host, port, console)
        return
    # FastAPI and uvicorn only for the command that serves.
    from benchwarmers.assembly import APP_FACTORY, app_for_home
    from benchwarmers.server.run import (
        bind_sockets,
        hold_data_folder,
        listening_on,
        run_server,
        run_workers,
        shared_by_workers,
    )

    home, active_keys, endpoints = with_core(_preflight)
    _held, shared = hold_data_folder(home)  # open as long as we serve; the kernel lets go at exit
    sockets = bind_sockets(host, port, workers)
    sock = sockets[0]
    say = partial(console.print, soft_wrap=True)  # no wrapping mid-path when not on a terminal
    say(f"Benchwarmers on {listening_on(host, sock.getsockname()[1])} (data folder {home})", markup=False)
    if shared:
        say(shared, markup=False)
    if not is_loopback(host):
        say(
            "Listening beyond loopback: every gateway call now needs a gateway key "
            "(clients send it as `Authorization: Bearer KEY`).",
            markup=False,
        )
        if not active_keys:
            print_warning("no gateway key exists yet; make one with `benchwarmers key add NAME`")
    if not endpoints:
        say(
            "No endpoint yet, so the bench is empty: add one with "
            "`benchwarmers endpoint add NAME BASE_URL --key` (or run `benchwarmers quickstart`), "
            "or try `benchwarmers serve --demo`.",
            markup=False,
        )
    if workers > 1:
        say(f"{workers} worker processes on the one port ({shared_by_workers()} shared).", markup=False)
        run_workers(home, host, sockets, APP_FACTORY)
        return
    run_server(app_for_home(home, bind_host=host), sock)


async def _preflight(core: Core) -> tuple[Path, int, int]:
    keys = await core.admin.keys()
    endpoints = await core.admin.endpoints()
    return core.home, sum(1 for k in keys if k.active), len(endpoints)
