"""What the real-agent tests share (fixtures over it live in conftest.py):
where the pinned agents are, and a served checkout with a fresh HOME."""

from __future__ import annotations

import os
import subprocess
from dataclasses import dataclass
from pathlib import Path

import pytest

from benchwarmers.testing.fake_provider import FakeProvider
from benchwarmers.testing.live_server import LiveServer

REPO = Path(__file__).resolve().parents[2]
AGENTS_BIN = Path(
    os.environ.get("BENCHWARMERS_AGENTS_BIN", REPO / ".ci" / "agents" / "node_modules" / ".bin")
)
# A loaded 2-core machine starts a Node or Rust agent slowly: generous, and
# never asserted as a time.
AGENT_TIMEOUT = 240.0


def agent_binary(name: str) -> Path:
    found = AGENTS_BIN / name
    if not found.exists():
        pytest.skip(f"{name} is not installed in {AGENTS_BIN} (.ci/run installs the pinned agents from npm)")
    return found


@dataclass
class Bench:
    """A served checkout over the fake provider, and a fresh HOME."""

    server: LiveServer
    fake: FakeProvider
    home: Path
    work: Path

    def run(self, argv: list[str], env: dict[str, str]) -> subprocess.CompletedProcess[str]:
        """Run an agent in the work folder with only the environment given
        (plus PATH), so nothing of the machine's own config leaks in."""
        base = {"PATH": os.environ.get("PATH", ""), "HOME": str(self.home), "LANG": "C.UTF-8"}
        return subprocess.run(
            argv,
            cwd=self.work,
            env={**base, **env},
            capture_output=True,
            text=True,
            timeout=AGENT_TIMEOUT,
            stdin=subprocess.DEVNULL,
        )
