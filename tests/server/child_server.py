"""The real server as a child process (`benchwarmers serve`), for tests that
kill it (SIGKILL) or run two of it side by side; started and waited for as
tests/serving.py does (ready when /healthz answers, output in a file)."""

from __future__ import annotations

import os
import signal
from itertools import count
from pathlib import Path

from benchwarmers.runtime import DATABASE_URL_ENV
from benchwarmers.store.db import sqlite_url
from tests.serving import Served, start, stop, until_serving

_logs = count(1)
_folders = count(1)


class Child:
    """`benchwarmers serve` on a port of its own, killed with SIGKILL."""

    def __init__(self, home: Path, url: str | None = None, **env: str) -> None:
        self.home = home
        self.env = {**os.environ, "BENCHWARMERS_HOME": str(home), **env}
        if url:
            self.env[DATABASE_URL_ENV] = url
        elif not self.env.get(DATABASE_URL_ENV):
            # On SQLite a live `serve` holds its data folder (`run.hold_data_folder`): children
            # side by side each get a folder of their own, on the one database file in `home`.
            folder = home.parent / f"child-home-{next(_folders)}"
            folder.mkdir()
            self.env.update({"BENCHWARMERS_HOME": str(folder), DATABASE_URL_ENV: sqlite_url(home)})
        self.served: Served | None = None
        self.port = 0  # the first start binds a port itself (none to race for); later ones reuse it

    @property
    def url(self) -> str:
        assert self.port, "not started yet: its port is the one its first start bound"
        return f"http://127.0.0.1:{self.port}"

    def start(self) -> None:
        """Started, and answering (on the same port each time)."""
        self.launch()
        self.until_serving()

    def launch(self) -> None:
        """Started, not yet waited for: several children start side by side."""
        self.served = start([], self.home.parent / f"child-{next(_logs)}.log", self.env, self.port)

    def until_serving(self) -> None:
        assert self.served is not None
        until_serving(self.served)
        self.port = self.served.port

    def kill(self) -> None:
        assert self.served is not None
        stop(self.served, signal.SIGKILL)

    def stop(self) -> None:
        if self.served is not None:
            stop(self.served, signal.SIGKILL)
