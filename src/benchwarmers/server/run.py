"""Running the server: the listening socket and uvicorn around the app.

Shared by `benchwarmers serve` and `serve --demo` (`demo.py`), so neither
imports the other; with the app and `is_loopback` beside them, it is all
a launcher needs of the server (imported only by the command that serves).
The port is bound here, before uvicorn starts, so a taken port is one
clear line ("port 8122 is in use") instead of an errno; uvicorn's access
log is off: Gemini clients put their key in the query string (`?key=`),
and keys never reach a log.
"""

from __future__ import annotations

import errno
import logging
import signal
import socket
from types import FrameType
from typing import TYPE_CHECKING

from benchwarmers.errors import UserError
from benchwarmers.server.app import app_for_home, create_app
from benchwarmers.server.guard import is_loopback

if TYPE_CHECKING:
    from fastapi import FastAPI

__all__ = [
    "app_for_home",
    "base_url",
    "bind_socket",
    "create_app",
    "is_loopback",
    "listening_on",
    "run_server",
]

GRACEFUL_SHUTDOWN_SECONDS = 10


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


def run_server(app: FastAPI, sock: socket.socket) -> None:
    """Serve `app` on `sock` until Ctrl-C (uvloop and httptools)."""
    import uvicorn

    from benchwarmers.server.protocol import GuardedHttpToolsProtocol

    logging.basicConfig(level=logging.INFO, format="%(levelname)s: %(name)s: %(message)s")
    # Their INFO lines are noise here, and httpx's would print every outbound URL.
    for chatty in ("alembic", "httpx", "httpcore", "apscheduler"):
        logging.getLogger(chatty).setLevel(logging.WARNING)
    config = uvicorn.Config(
        app,
        loop="uvloop",
        http=GuardedHttpToolsProtocol,  # head deadline and size (server/protocol.py)
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
