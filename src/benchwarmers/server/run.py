"""Running the server: the listening socket and uvicorn around the app.

Shared by `benchwarmers serve` and `serve --demo` (`demo.py`), so neither
imports the other; it is all a launcher needs of the server (imported
only by the command that serves); the app
itself comes from the composition root (`benchwarmers/assembly.py`).
The port is bound here, before uvicorn starts, so a taken port is one
clear line ("port 8122 is in use") instead of an errno; uvicorn's access
log is off: Gemini clients put their key in the query string (`?key=`),
and keys never reach a log. `--workers N` is at the end.
"""

from __future__ import annotations

import errno
import logging
import os
import shutil
import signal
import socket
import tempfile
from pathlib import Path
from types import FrameType
from typing import TYPE_CHECKING, Any

from benchwarmers.config import environment, tunables
from benchwarmers.config.home import HOME_ENV
from benchwarmers.errors import UserError
from benchwarmers.hosts import is_loopback
from benchwarmers.limits.shared import SOCKET_ENV as COUNTERS_SOCKET_ENV
from benchwarmers.limits.shared import CounterService
from benchwarmers.metrics import MULTIPROC_ENV
from benchwarmers.server import BIND_HOST_ENV

if TYPE_CHECKING:
    from fastapi import FastAPI

DATABASE_URL_ENV = environment.DATABASE_URL.name
REDIS_URL_ENV = environment.REDIS_URL.name

__all__ = [
    "base_url",
    "bind_socket",
    "bind_sockets",
    "hold_data_folder",
    "listening_on",
    "run_server",
    "run_workers",
    "shared_by_workers",
]

GRACEFUL_SHUTDOWN_SECONDS = tunables.GRACEFUL_SHUTDOWN_SECONDS.value
WORKER_HEALTHCHECK_SECONDS = tunables.WORKER_HEALTHCHECK_SECONDS.value


def bind_socket(host: str, port: int, *, reuse_port: bool = False) -> socket.socket:
    """A listening socket on host:port, or one clear `UserError` why not;
    with `reuse_port`, one of a group on the same port (`bind_sockets`)."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    if reuse_port:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1)
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


def bind_sockets(host: str, port: int, count: int) -> list[socket.socket]:
    """`count` listening sockets on host:port, one per worker (`--workers N`),
    sharing the port through SO_REUSEPORT, so the kernel spreads new
    connections over the workers. On one socket shared by all, the worker
    that wakes first accepts every connection waiting: ten keep-alive
    clients that connect at once all landed on one worker, and the other
    idled (docs/benchmarks.md, "Issue 15: workers"). The port is first bound
    alone, so a port in use, even by another such group, is refused as
    `bind_socket` refuses it, never silently shared."""
    if count == 1:
        return [bind_socket(host, port)]
    probe = bind_socket(host, port)
    port = probe.getsockname()[1]  # the one picked, for port 0
    probe.close()
    sockets: list[socket.socket] = []
    try:
        for _ in range(count):
            sockets.append(bind_socket(host, port, reuse_port=True))
    except UserError:
        for sock in sockets:
            sock.close()
        raise
    return sockets


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
    """uvicorn's settings, for one process or many (uvloop and httptools)."""
    from benchwarmers.server.protocol import GuardedHttpToolsProtocol

    return {
        "loop": "uvloop",
        "http": GuardedHttpToolsProtocol,  # head deadline and size (server/protocol.py)
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

    from benchwarmers.server.heap import settle_for_serving

    quiet_loggers()
    config = uvicorn.Config(app, **server_options())
    server = uvicorn.Server(config)
    settle_for_serving()
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


# ------------------------------------------------------------- --workers N
#
# uvicorn's own supervisor (`uvicorn.supervisors.Multiprocess`) starts the
# workers, replaces one that dies, and stops them all on Ctrl-C or SIGTERM,
# each worker on a socket of its own that `serve` bound (`bind_sockets`; a
# replacement takes over its predecessor's socket and the connections
# waiting there: `_Supervisor`); each worker builds its app with
# `assembly.app_from_env` (the data folder and the address it listens on
# come through the environment, which spawned workers inherit).
#
# The processes share what one process would keep to itself:
#
# - **The store.** On PostgreSQL every process writes. On SQLite (the
#   default) every worker writes too: each worker's writes go through its
#   one writer (`store/db.py`), and between workers SQLite's own lock, in
#   WAL mode with a busy timeout, takes turns; the call log's batches are
#   short transactions (`BEGIN IMMEDIATE`), a call is in the worker's
#   journal before its reply ends, and a killed worker's journal is
#   replayed by its replacement as it opens the store (`store/journal.py`).
#   The scheduler and the onboarding queue run in one worker at a time
#   (their leases: an advisory lock on PostgreSQL, a `flock` on SQLite,
#   `bench/leases.py`).
# - **The limit counters** (provider limits, key rates, budgets): in Redis
#   when `BENCHWARMERS_REDIS_URL` is set, else in this supervisor, which
#   serves them to its workers over a Unix socket (`limits/shared.py`), so
#   N workers spend one limit once, not N times, and a killed worker's
#   counts stay counted.
#
# Cached reads (collections, keys, settings) are per worker and see another
# worker's change within their few seconds' TTL, as replicas do. `/metrics`
# sums every worker's figures (prometheus-client's multiprocess mode, in a
# fresh folder per `serve`, `benchwarmers.metrics`).


# ------------------------------------------------------- one serve a folder
#
# Two `serve` processes on one data folder would each count provider limits
# and key rates alone without Redis (`--workers N` shares one count: above),
# and on SQLite two such servers are what `--workers 2` does better. So
# `serve` holds the folder (an exclusive `flock` on `serve.lock` in it,
# which the kernel lets go when the process ends, however it ends) and a
# second one on a folder a live `serve` holds is refused in one line on
# SQLite; on PostgreSQL (replicas) it is told why it is safe, and whether
# Redis counts limits for both.

FOLDER_LOCK = "serve.lock"


def hold_data_folder(home: Path) -> tuple[int, str]:
    """Hold `home` for this `serve`: the lock's file descriptor (kept open as
    long as we serve) and a line to say when another live `serve` holds it
    too and that is safe (else ""). Refused (UserError) when it is not."""
    import fcntl

    fd = os.open(home / FOLDER_LOCK, os.O_RDWR | os.O_CREAT, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        holder = os.pread(fd, 32, 0).decode(errors="replace").strip() or "unknown"
        if not os.environ.get(DATABASE_URL_ENV, "").strip().startswith("postgresql"):
            os.close(fd)
            raise UserError(
                f"another `benchwarmers serve` (pid {holder}) is serving the data folder {home}: stop it "
                "first, or serve another folder (BENCHWARMERS_HOME); for more processes on one folder, "
                f"serve once with --workers N (replicas share PostgreSQL: {DATABASE_URL_ENV})"
            ) from None
        counted = (
            "and Redis counts limits for both"
            if os.environ.get(REDIS_URL_ENV, "").strip()
            else f"but each counts provider limits alone until {REDIS_URL_ENV} is set"
        )
        return fd, (
            f"Another `benchwarmers serve` (pid {holder}) serves this data folder too: safe, as replicas "
            f"share PostgreSQL, {counted}."
        )
    os.ftruncate(fd, 0)
    os.pwrite(fd, str(os.getpid()).encode(), 0)
    return fd, ""


def shared_by_workers() -> str:
    """What the workers share, for the banner: the store, and where the limits are counted."""
    on_postgres = os.environ.get(DATABASE_URL_ENV, "").strip().startswith("postgresql")
    store = "PostgreSQL" if on_postgres else "SQLite"
    counters = "Redis" if os.environ.get(REDIS_URL_ENV, "").strip() else "the supervisor's limit counters"
    return f"{store} and {counters}"


def run_workers(home: Path, host: str, sockets: list[socket.socket], factory: str) -> None:
    """Serve with one process on each of `sockets` (`bind_sockets`) until Ctrl-C
    or SIGTERM, each building its app with `factory` ("module:function")."""
    import uvicorn

    quiet_loggers()
    os.environ[HOME_ENV] = str(home)
    os.environ[BIND_HOST_ENV] = host
    metrics_dir = tempfile.mkdtemp(prefix="benchwarmers-metrics-")
    os.environ[MULTIPROC_ENV] = metrics_dir
    counters: CounterService | None = None
    try:
        if not os.environ.get(REDIS_URL_ENV, "").strip():
            # A short path of its own (a Unix socket's is limited to ~100 bytes), only ours to open.
            counters = CounterService(os.path.join(tempfile.mkdtemp(prefix="benchwarmers-"), "counters"))
            counters.start()
            os.environ[COUNTERS_SOCKET_ENV] = counters.path
        config = uvicorn.Config(
            factory,
            factory=True,
            workers=len(sockets),
            timeout_worker_healthcheck=WORKER_HEALTHCHECK_SECONDS,
            **server_options(),
        )
        _supervisor(config, sockets).run()
    finally:
        for sock in sockets:
            sock.close()
        shutil.rmtree(metrics_dir, ignore_errors=True)
        if counters is not None:
            counters.stop()
            shutil.rmtree(os.path.dirname(counters.path), ignore_errors=True)


def _supervisor(config: Any, sockets: list[socket.socket]) -> Any:
    """uvicorn's supervisor with worker i on `sockets[i]` alone, where uvicorn
    gives every worker all of them. Its loops that start, check and replace
    workers run here once per worker, on that worker's socket, so a
    replacement always serves the socket its predecessor left."""
    from uvicorn.supervisors.multiprocess import Multiprocess, Process

    class _Supervisor(Multiprocess):
        def init_processes(self) -> None:
            for sock in sockets:
                process = Process(self.config, [sock])
                process.start()
                self.processes.append(process)

        def keep_subprocess_alive(self) -> None:
            self._each_worker(super().keep_subprocess_alive)

        def restart_all(self) -> None:
            self._each_worker(super().restart_all)

        def _each_worker(self, step: Any) -> None:
            every = self.processes
            try:
                for index, sock in enumerate(sockets):
                    self.processes, self.sockets = [every[index]], [sock]
                    step()
                    every[index] = self.processes[0]
            finally:
                self.processes, self.sockets = every, sockets

    return _Supervisor(config, sockets=sockets)
