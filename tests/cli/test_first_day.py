"""What a new user still trips over on the first day (issue 40, the command
line items), each through the installed `benchwarmers` command in a
subprocess: its exit code and the line it says."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from pathlib import Path

from benchwarmers.testing import FakeModel, FakeProvider
from benchwarmers.testing.live_server import live_server

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


def test_endpoint_add_checks_the_server_and_says_what_is_wrong(fake_provider: FakeProvider) -> None:
    """Item 2: a dead URL, a URL missing /v1 and a wrong key are refused in
    one line and nothing is kept; `--no-check` keeps it unchecked."""
    fake_provider.key = "sk-right"
    fake_provider.add(FakeModel("alpha", answer="ready"))
    dead = dead_url() + "/v1"
    line = one_line(bw("endpoint", "add", "hub", dead, "--keyless"))
    assert (
        line.startswith(f"error: hub at {dead} did not list its models (")
        and "is the server running?" in line
    )
    line = one_line(bw("endpoint", "add", "hub", fake_provider.url, "--key", input="sk-right\n"))
    assert f"end in /v1 ({fake_provider.url}/v1?)" in line
    line = one_line(bw("endpoint", "add", "hub", fake_provider.openai_base, "--key", input="sk-wrong\n"))
    assert "HTTP 401" in line and "the key was refused" in line and "sk-wrong" not in line
    assert json.loads(given("endpoint", "list", "--json")) == []

    done = bw("endpoint", "add", "hub", fake_provider.openai_base, "--key", input="sk-right\n")
    assert done.returncode == 0, done.stderr
    assert f"{fake_provider.openai_base} answers: 1 models listed." in done.stdout
    unchecked = bw("endpoint", "add", "later", dead, "--keyless", "--no-check")
    assert unchecked.returncode == 0 and "answers" not in unchecked.stdout
    no_key = bw("endpoint", "add", "keyed", fake_provider.openai_base)
    assert no_key.returncode == 0 and "Not checked yet: keyed needs a key" in no_key.stdout
    assert [e["name"] for e in json.loads(given("endpoint", "list", "--json"))] == ["hub", "keyed", "later"]


def one_line(done: subprocess.CompletedProcess[str]) -> str:
    """The command failed with exit 1 and said why in one `error:` line."""
    assert done.returncode == 1, (done.stdout, done.stderr)
    (line,) = done.stderr.strip().splitlines()
    return line


def test_onboard_goes_on_to_the_probe_when_the_list_is_empty(fake_provider: FakeProvider) -> None:
    """Item 8: a server whose /v1/models lists nothing still serves models."""
    fake_provider.add(FakeModel("unlisted", answer="ready", listed=set()))
    given("endpoint", "add", "hub", fake_provider.openai_base, "--keyless")
    done = bw("onboard", "unlisted", "-e", "hub", "--quick")
    assert done.returncode == 0, done.stderr
    assert "unlisted is available" in done.stdout


def test_fake_provider_on_a_busy_port_says_so_in_one_line(tmp_path: Path) -> None:
    """Item 9: as `serve` says it, before any banner."""
    models = tmp_path / "models.json"
    models.write_text('{"models": [{"served": "alpha", "answer": "hi"}]}')
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        done = bw("fake-provider", "--models", str(models), "--port", str(port))
    assert one_line(done) == (
        f"error: port {port} on 127.0.0.1 is already in use (another benchwarmers?); pick another with --port"
    )
    assert done.stdout == ""


def test_doctor_tells_a_server_on_another_data_folder(home: Path, tmp_path: Path) -> None:
    """Item 3: another Benchwarmers answering on the port is not this one."""
    other = tmp_path / "other"
    other.mkdir()
    with live_server(other) as server:
        done = bw("doctor", BENCHWARMERS_URL=server.url)
        assert done.returncode == 1
        assert (
            f"✗ server: answers at {server.url}, but uses another store than the data folder {home} "
            "→ stop it and run benchwarmers serve here, or set BENCHWARMERS_URL to this folder's server"
        ) in done.stdout.splitlines()
    with live_server(home) as server:
        same = bw("doctor", BENCHWARMERS_URL=server.url)
        assert f"✓ server: answers at {server.url}, on the data folder {home}" in same.stdout.splitlines()


def test_a_command_says_which_data_folder_it_follows(tmp_path: Path, home: Path) -> None:
    """Item 4: a `.benchwarmers-home` in the working directory is said on
    stderr; with `--verbose` any folder is; stdout stays the command's own."""
    project = tmp_path / "project"
    project.mkdir()
    (project / ".benchwarmers-home").write_text(str(tmp_path / "theirs") + "\n")
    env = {k: v for k, v in os.environ.items() if k != "BENCHWARMERS_HOME"}
    followed = subprocess.run(
        [COMMAND, "endpoint", "list", "--json"],
        cwd=project,
        env=env,
        capture_output=True,
        text=True,
        timeout=90,
    )
    assert followed.returncode == 0, followed.stderr
    assert followed.stderr.splitlines() == [
        f"data folder {tmp_path / 'theirs'} (from {project / '.benchwarmers-home'})"
    ]
    assert json.loads(followed.stdout) == []
    quiet = bw("endpoint", "list", "--json")
    assert quiet.returncode == 0 and quiet.stderr == ""
    verbose = bw("--verbose", "endpoint", "list", "--json")
    assert verbose.stderr.splitlines() == [f"data folder {home} (from BENCHWARMERS_HOME)"]


def test_quick_onboarding_says_how_its_suite_will_run(fake_provider: FakeProvider) -> None:
    """Item 7: a fresh install's scheduler is off, so "by scheduled passes"
    comes with how to switch it on (or run the suite now)."""
    for served in ("first", "second"):
        fake_provider.add(FakeModel(served, answer="ready"))
    given("endpoint", "add", "hub", fake_provider.openai_base, "--keyless")
    off = bw("onboard", "first", "-e", "hub", "--quick")
    assert off.returncode == 0, off.stderr
    assert (
        "its suite runs by scheduled passes, and the scheduler is off: "
        "`benchwarmers settings set scheduler true` (or `benchwarmers suite run MODEL` now)"
    ) in off.stdout
    given("settings", "set", "scheduler", "true")
    on = bw("onboard", "second", "-e", "hub", "--quick")
    assert on.returncode == 0 and "suite by scheduled passes" in on.stdout and "is off" not in on.stdout


def test_full_onboarding_off_a_terminal_says_each_stage(fake_provider: FakeProvider) -> None:
    """Item 6: piped, a line per stage as it starts (no bar to draw); a
    server on this machine with no limit is not paced by a fixed gap."""
    fake_provider.add(FakeModel("instant", answer="ready"))
    given("endpoint", "add", "hub", fake_provider.openai_base, "--keyless")
    done = bw("onboard", "instant", "-e", "hub")
    assert done.returncode == 0, done.stderr
    stages = [line for line in done.stdout.splitlines() if line.startswith("instant: ")]
    assert stages[0] == "instant: registering (2%)", stages
    assert any("running the suite" in line for line in stages), stages
    assert any(line.startswith("instant: suite: ") for line in stages), stages
    assert "instant is available" in done.stdout
