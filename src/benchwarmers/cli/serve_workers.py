"""`benchwarmers serve --workers N`: N server processes on one port.

uvicorn's own supervisor (`uvicorn.supervisors.Multiprocess`) starts the
workers on the socket `serve` bound, replaces one that dies, and stops them
all on Ctrl-C or SIGTERM; each worker builds its app with
`server.app.app_from_env` (the data folder and the address it listens on
come through the environment, which spawned workers inherit).

Safe only where the processes share what one process would keep to itself,
so N > 1 needs both:

- **PostgreSQL** (`BENCHWARMERS_DATABASE_URL`): SQLite's writes go through
  one writer *per process*, so two processes would fight over the database
  lock; PostgreSQL takes writers from every process. The scheduler and the
  onboarding queue still run in one worker at a time (their leases are
  PostgreSQL advisory locks, `bench/leases.py`).
- **Redis** (`BENCHWARMERS_REDIS_URL`): provider limits and gateway-key
  rates are counted there, so N workers spend one provider's limit once,
  not N times.

On SQLite, or without Redis, `serve` refuses `--workers` above 1 and says
what to set. Cached reads (collections, keys, settings) are per worker and
see another worker's change within their few seconds' TTL, as replicas do.
`/metrics` sums every worker's figures (prometheus-client's multiprocess
mode, in a fresh folder per `serve`, `benchwarmers.metrics`).
"""

from __future__ import annotations

import os
import shutil
import socket
import tempfile
from typing import Any

from benchwarmers.config.home import HOME_ENV
from benchwarmers.errors import UserError
from benchwarmers.metrics import MULTIPROC_ENV
from benchwarmers.runtime import DATABASE_URL_ENV, REDIS_URL_ENV, Runtime
from benchwarmers.server import BIND_HOST_ENV


def check_workers(runtime: Runtime, workers: int) -> None:
    """Refuse N > 1 workers where they would not be safe (see the module's docstring)."""
    if workers <= 1:
        return
    if runtime.store.engine.url.get_backend_name() != "postgresql":
        raise UserError(
            f"--workers {workers} needs PostgreSQL: SQLite has one writer per process, so several "
            f"processes would fight over it; set {DATABASE_URL_ENV}=postgresql://... "
            "(or serve with one worker)"
        )
    if not os.environ.get(REDIS_URL_ENV, "").strip():
        raise UserError(
            f"--workers {workers} needs Redis, so the workers count provider limits and key rates "
            f"together: set {REDIS_URL_ENV}=redis://host:6379/0 (or serve with one worker)"
        )


def run_workers(home: str, host: str, sock: socket.socket, workers: int, options: dict[str, Any]) -> None:
    """Serve on `sock` with `workers` processes (uvicorn `options`) until Ctrl-C or SIGTERM."""
    import uvicorn
    from uvicorn.supervisors import Multiprocess

    os.environ[HOME_ENV] = home
    os.environ[BIND_HOST_ENV] = host
    metrics_dir = tempfile.mkdtemp(prefix="benchwarmers-metrics-")
    os.environ[MULTIPROC_ENV] = metrics_dir
    try:
        config = uvicorn.Config(
            "benchwarmers.server.app:app_from_env", factory=True, workers=workers, **options
        )
        Multiprocess(config, sockets=[sock]).run()
    finally:
        sock.close()
        shutil.rmtree(metrics_dir, ignore_errors=True)
