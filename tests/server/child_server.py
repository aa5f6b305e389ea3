"""The real server as a child process (`benchwarmers serve`), for tests that
kill it (SIGKILL) or run two of it side by side."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import httpx

from benchwarmers.runtime import DATABASE_URL_ENV

BENCHWARMERS = str(Path(sys.executable).parent / "benchwarmers")


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


class Child:
    """`benchwarmers serve` on a port of its own, killed with SIGKILL."""

    def __init__(self, home: Path, url: str | None = None, **env: str) -> None:
        self.port = _free_port()
        self.env = {**os.environ, "BENCHWARMERS_HOME": str(home), **env}
        if url:
            self.env[DATABASE_URL_ENV] = url
        self.process: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self) -> None:
        command = [BENCHWARMERS, "serve", "--port", str(self.port)]
        self.process = subprocess.Popen(
            command, env=self.env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
        )
        for _ in range(600):
            try:
                if httpx.get(self.url + "/healthz", timeout=1).status_code == 200:
                    return
            except httpx.HTTPError:
                pass
            if self.process.poll() is not None:
                raise RuntimeError("the server exited on start")
            time.sleep(0.05)
        raise RuntimeError("the server did not start")

    def kill(self) -> None:
        assert self.process is not None
        self.process.send_signal(signal.SIGKILL)
        self.process.wait(30)

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.kill()
