"""What a new user still trips over on the first day (issue 40, the command
line items), each through the installed `benchwarmers` command in a
subprocess: its exit code and the line it says."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from benchwarmers.testing import FakeModel, FakeProvider

from .test_first_hour import dead_url, given

COMMAND = str(Path(sys.executable).parent / "benchwarmers")  # the script pip installed


def bw(*args: str, input: str = "", **env: str) -> subprocess.CompletedProcess[str]:
    """The real `benchwarmers` command on this test's data folder."""
    return subprocess.run(
        [COMMAND, *args],
        env={**os.environ, **env},
        input=input,
        capture_output=True,
        text=True,
        timeout=90,
    )


def test_quickstart_offers_what_a_local_openai_compatible_server_lists(fake_provider: FakeProvider) -> None:
    """Item 1: a server on 127.0.0.1 (any port but LM Studio's) is not LM Studio."""
    for served in ("alpha", "beta"):
        fake_provider.add(FakeModel(served, answer="ready"))
    answers = f"local\n{fake_provider.openai_base}\nopenai\nsk-anything\n\nfirst\n"
    done = bw("quickstart", "--ollama", dead_url(), input=answers)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "Free models on local:" in done.stdout
    assert "Collection bench/first seats alpha, beta." in done.stdout
    assert {m["served"] for m in json.loads(given("model", "list", "--json"))} == {"alpha", "beta"}
