"""`benchwarmers serve [--host 127.0.0.1] [--port 8122] [--demo]`.

The store is opened (and migrated) once before the server starts, so a bad
data folder or database fails as one line here rather than as a traceback
from inside uvicorn; the port is bound by us for the same reason ("port
8122 is in use" instead of an errno). uvicorn's access log is off: Gemini
clients put their key in the query string (`?key=`), and keys never reach a
log.
"""

from __future__ import annotations

import errno
import logging
import signal
import socket
from pathlib import Path
from types import FrameType
from typing import TYPE_CHECKING, Annotated

import typer

from benchwarmers.cli.context import console, with_runtime
from benchwarmers.cli.errors import print_warning
from benchwarmers.errors import UserError
from benchwarmers.runtime import Runtime
from benchwarmers.server import DEFAULT_HOST, DEFAULT_PORT
from benchwarmers.server.gatewaykeys import list_keys
from benchwarmers.server.guard import is_loopback

if TYPE_CHECKING:
    from fastapi import FastAPI

GRACEFUL_SHUTDOWN_SECONDS = 10


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
) -> None:
    """Run the gateway (every API format), the verdict API and the MCP server on one port."""
    if demo:
        from benchwarmers.demo import run_demo

        run_demo(host, port)
        return
    from benchwarmers.server.app import app_for_home  # FastAPI only for the command that serves

    home, active_keys = with_runtime(_preflight)
    app = app_for_home(home, bind_host=host)
    sock = bind_socket(host, port)
    console.print(f"Benchwarmers on {base_url(host, sock.getsockname()[1])} (data folder {home})")
    if not is_loopback(host) and not active_keys:
        print_warning(
            f"listening on {host}, beyond loopback: gateway calls need a key, and none exists yet; "
            "make one with `benchwarmers key add NAME`"
        )
    run_server(app, sock)


async def _preflight(runtime: Runtime) -> tuple[Path, int]:
    keys = await list_keys(runtime.store)
    return runtime.home, sum(1 for k in keys if k.active)


def bind_socket(host: str, port: int) -> socket.socket:
    """A listening socket on host:port, or one clear `UserError` why not."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((host.strip("[]"), port))
    except OSError as exc:
        sock.close()
        if exc.errno == errno.EADDRINUSE:
            raise UserError(
                f"port {port} on {host} is already in use (another benchwarmers?); pick another with --port"
            ) from None
        if exc.errno == errno.EACCES:
            raise UserError(f"not allowed to listen on port {port}; use a port above 1023") from None
        if exc.errno == errno.EADDRNOTAVAIL or isinstance(exc, socket.gaierror):
            raise UserError(f"{host} is not an address of this machine") from None
        raise UserError(f"cannot listen on {host}:{port}: {exc.strerror or exc}") from None
    sock.listen(2048)
    sock.setblocking(False)
    return sock


def base_url(host: str, port: int) -> str:
    shown = {"0.0.0.0": "127.0.0.1", "::": "::1", "": "127.0.0.1"}.get(host, host)
    return f"http://{'[' + shown + ']' if ':' in shown else shown}:{port}"


class _Stopped(Exception):
    """SIGTERM arrived: stop like Ctrl-C does."""


def _stopped(_signum: int, _frame: FrameType | None) -> None:
    raise _Stopped


def run_server(app: FastAPI, sock: socket.socket) -> None:
    """Serve `app` on `sock` until Ctrl-C (uvloop and httptools)."""
    import uvicorn

    logging.basicConfig(level=logging.INFO, format="%(levelname)s: %(name)s: %(message)s")
    # Their INFO lines are noise here, and httpx's would print every outbound URL.
    for chatty in ("alembic", "httpx", "httpcore", "apscheduler"):
        logging.getLogger(chatty).setLevel(logging.WARNING)
    config = uvicorn.Config(
        app,
        loop="uvloop",
        http="httptools",
        ws="none",
        lifespan="on",
        access_log=False,
        server_header=False,
        log_level="info",
        timeout_graceful_shutdown=GRACEFUL_SHUTDOWN_SECONDS,
    )
    server = uvicorn.Server(config)
    # uvicorn shuts down gracefully on TERM and INT, then raises the signal
    # again for the previous handler: ours turns that into a normal return,
    # so callers' cleanup (the demo's throwaway folder) still runs.
    previous = signal.signal(signal.SIGTERM, _stopped)
    try:
        server.run(sockets=[sock])
    except (_Stopped, KeyboardInterrupt):
        pass
    except SystemExit:
        pass  # uvicorn's exit when the app fails to start; said below in one line
    finally:
        signal.signal(signal.SIGTERM, previous)
        sock.close()
    if not server.started:
        raise UserError("the server did not start (the reason is in the log above)")
