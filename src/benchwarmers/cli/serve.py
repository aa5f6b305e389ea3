"""`benchwarmers serve [--host 127.0.0.1] [--port 8122] [--demo] [--workers N]`.

The store is opened (and migrated) once before the server starts, so a bad
data folder or database fails as one line here rather than as a traceback
from inside uvicorn; the port is bound by us for the same reason ("port
8122 is in use" instead of an errno). uvicorn's access log is off: Gemini
clients put their key in the query string (`?key=`), and keys never reach a
log. `--workers N` is `cli/serve_workers.py`.
"""

from __future__ import annotations

import errno
import logging
import signal
import socket
from functools import partial
from pathlib import Path
from types import FrameType
from typing import TYPE_CHECKING, Annotated, Any

import typer

from benchwarmers.cli.context import console, with_runtime
from benchwarmers.cli.errors import print_warning
from benchwarmers.cli.serve_workers import check_workers, run_workers
from benchwarmers.errors import UserError
from benchwarmers.runtime import Runtime
from benchwarmers.server import DEFAULT_HOST, DEFAULT_PORT
from benchwarmers.server.gatewaykeys import list_keys
from benchwarmers.server.guard import is_loopback
from benchwarmers.store import registry

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
    workers: Annotated[
        int,
        typer.Option(
            "--workers", min=1, help="Server processes on the one port; above 1 needs PostgreSQL and Redis."
        ),
    ] = 1,
) -> None:
    """Run the gateway (every API format), the verdict API and the MCP server on one port."""
    if demo and workers > 1:
        raise UserError("--demo runs one process (its bench is SQLite); drop --workers")
    if demo:
        from benchwarmers.demo import run_demo

        run_demo(host, port)
        return
    from benchwarmers.server.app import app_for_home  # FastAPI only for the command that serves

    home, active_keys, endpoints = with_runtime(partial(_preflight, workers=workers))
    sock = bind_socket(host, port)
    say = partial(console.print, soft_wrap=True)  # no wrapping mid-path when not on a terminal
    say(f"Benchwarmers on {listening_on(host, sock.getsockname()[1])} (data folder {home})", markup=False)
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
        say(f"{workers} worker processes on the one port (PostgreSQL and Redis shared).", markup=False)
        quiet_loggers()
        run_workers(str(home), host, sock, workers, server_options())
        return
    run_server(app_for_home(home, bind_host=host), sock)


async def _preflight(runtime: Runtime, workers: int = 1) -> tuple[Path, int, int]:
    check_workers(runtime, workers)
    keys = await list_keys(runtime.store)
    endpoints = await registry.list_endpoints(runtime.store)
    return runtime.home, sum(1 for k in keys if k.active), len(endpoints)


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
    """The URL a client on this machine uses (a wildcard address is reached on loopback)."""
    shown = {"0.0.0.0": "127.0.0.1", "::": "::1", "": "127.0.0.1"}.get(host, host)
    return _url(shown, port)


def listening_on(host: str, port: int) -> str:
    """What the banner names: the URL, and for a wildcard address, the
    address others reach it on as well as the loopback one used here."""
    if host not in ("0.0.0.0", "::", ""):
        return base_url(host, port)
    outside = _outward_address(socket.AF_INET6 if host == "::" else socket.AF_INET)
    elsewhere = f"{_url(outside, port)} from other machines, " if outside else ""
    return (
        f"every address of this machine ({host or '0.0.0.0'}:{port}): {elsewhere}{base_url(host, port)} here"
    )


def _url(host: str, port: int) -> str:
    return f"http://{'[' + host + ']' if ':' in host else host}:{port}"


def _outward_address(family: socket.AddressFamily) -> str:
    """This machine's address on its default route ("" when there is none).
    A UDP socket's connect sends nothing; it only picks the source address."""
    probe = ("192.0.2.1", 9) if family == socket.AF_INET else ("2001:db8::1", 9)
    try:
        with socket.socket(family, socket.SOCK_DGRAM) as udp:
            udp.connect(probe)
            address: str = udp.getsockname()[0]
    except OSError:
        return ""
    return "" if is_loopback(address) else address


class _Stopped(Exception):
    """SIGTERM arrived: stop like Ctrl-C does."""


def _stopped(_signum: int, _frame: FrameType | None) -> None:
    raise _Stopped


def quiet_loggers() -> None:
    logging.basicConfig(level=logging.INFO, format="%(levelname)s: %(name)s: %(message)s")
    # Their INFO lines are noise here, and httpx's would print every outbound URL.
    for chatty in ("alembic", "httpx", "httpcore", "apscheduler"):
        logging.getLogger(chatty).setLevel(logging.WARNING)


def server_options() -> dict[str, Any]:
    """uvicorn's settings for one worker or many (uvloop and httptools)."""
    return {
        "loop": "uvloop",
        "http": "httptools",
        "ws": "none",
        "lifespan": "on",
        "access_log": False,
        "server_header": False,
        "log_level": "info",
        "timeout_graceful_shutdown": GRACEFUL_SHUTDOWN_SECONDS,
    }


def run_server(app: FastAPI, sock: socket.socket) -> None:
    """Serve `app` on `sock` until Ctrl-C."""
    import uvicorn

    quiet_loggers()
    config = uvicorn.Config(app, **server_options())
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
