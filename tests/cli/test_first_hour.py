"""What a new user trips over in the first hour, each through the real CLI in
a subprocess: its exit code and the one line it says (issue 17, items 1-7)."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from typer.testing import CliRunner

from benchwarmers.cli.main import app
from benchwarmers.formats.panel_text import seat_text
from benchwarmers.testing import FakeModel, FakeProvider, RateLimit
from benchwarmers.testing.live_server import live_server
from benchwarmers.types import Seat
from tests.serving import free_port, served

RUN = "from benchwarmers.cli.main import run; run()"


def bw(*args: str, input: str = "", url: str = "", **env: str) -> subprocess.CompletedProcess[str]:
    """The CLI in a subprocess on this test's data folder (the environment
    the root conftest set), with `BENCHWARMERS_URL` when given."""
    extra = {"BENCHWARMERS_URL": url} if url else {}
    return subprocess.run(
        [sys.executable, "-c", RUN, *args],
        env={**os.environ, **extra, **env},
        input=input,
        capture_output=True,
        text=True,
        timeout=60,
    )


def ok(*args: str, **kw: str) -> str:
    done = bw(*args, **kw)
    assert done.returncode == 0, done.stderr
    return done.stdout


def given(*args: str, **env: str) -> str:
    """A setting-up step or a look at the result, in this process (a
    subprocess costs about a second of CPU): the behaviour under test runs in `bw`."""
    result = CliRunner().invoke(app, list(args), env=env or None)
    assert result.exit_code == 0, result.output
    return result.stdout


def one_error(done: subprocess.CompletedProcess[str], *parts: str) -> str:
    """The command failed with exit 1 and exactly one `error:` line holding `parts`."""
    assert done.returncode == 1, (done.stdout, done.stderr)
    (line,) = done.stderr.strip().splitlines()
    assert line.startswith("error: "), line
    for part in parts:
        assert part in line, line
    return line


def dead_url() -> str:
    return f"http://127.0.0.1:{free_port()}"


@contextmanager
def serving(*args: str) -> Iterator[tuple[int, list[str]]]:
    """`benchwarmers serve ARGS --port P` until it answers /healthz; then
    stopped, and its output (not a terminal) is in the list yielded."""
    output: list[str] = []
    env = {k: v for k, v in os.environ.items() if k != "COLUMNS"}
    with tempfile.TemporaryDirectory() as folder:
        try:
            with served(*args, log=Path(folder) / "serve.log", env=env) as child:
                yield child.port, output
        finally:
            output.extend((Path(folder) / "serve.log").read_text().splitlines())


def hub(fake: FakeProvider, *models: FakeModel, base: str = "") -> None:
    """Endpoint `hub` (keyless) on the fake provider, with these models on it."""
    given("endpoint", "add", "hub", base or fake.openai_base, "--keyless")
    for model in models:
        fake.add(model)


# ------------------------------------------------------------------ 1


def test_ask_says_no_server_answered_and_the_demo_banner_says_where(fake_provider: FakeProvider) -> None:
    url = dead_url()
    line = one_error(bw("ask", "demo", "hi", url=url), f"no server at {url};", "benchwarmers serve")
    assert "BENCHWARMERS_URL" in line and "no collection 'bench/demo'" in line

    with serving("--demo") as (port, output):
        done = bw("ask", "demo", "hi", "--json", url=f"http://127.0.0.1:{port}")
        assert done.returncode == 0 and done.stderr == ""
        assert [s["alias"] for s in json.loads(done.stdout)["seats"]] == [
            "sim-fast",
            "sim-steady",
            "sim-slow",
        ]
    banner = "\n".join(output)
    assert f"BENCHWARMERS_URL=http://127.0.0.1:{port} benchwarmers ask demo" in banner
    # Not a terminal: the folder's line is not wrapped mid-path.
    (folder_line,) = [row for row in output if "benchwarmers-demo-" in row]
    assert "deleted when you stop it" in folder_line


# ------------------------------------------------------------------ 2


def test_endpoint_key_set_and_a_missing_key_refused_before_sending(
    fake_provider: FakeProvider, tmp_path: Path
) -> None:
    added = ok("endpoint", "add", "hub", fake_provider.openai_base)
    assert "No key yet for hub" in added and "benchwarmers endpoint key set hub" in added
    again = ok("endpoint", "add", "hub", fake_provider.openai_base, "--key", input="sk-first\n")
    assert "already there" in again and "Key for hub written" in again
    ok("endpoint", "key", "set", "hub", input="sk-second\n")
    assert json.loads((tmp_path / "llm" / "keys.json").read_text())["hub"] == "sk-second"
    one_error(bw("endpoint", "key", "set", "nope", input="sk\n"), "no endpoint named 'nope'")
    one_error(
        bw("endpoint", "add", "hub", "http://elsewhere.example/v1"),
        "endpoint 'hub' already exists with openai at",
        "endpoint remove hub",
    )

    fake_provider.add(FakeModel("m1", answer="should not be asked"))
    given("endpoint", "add", "bare", fake_provider.openai_base)
    given("model", "add", "m1", "--endpoint", "bare", "--served", "m1")
    given("collection", "add", "solo", "--member", "m1")
    done = bw("ask", "solo", "hi", "--json", url=dead_url())
    assert done.returncode == 0, done.stderr
    (seat,) = json.loads(done.stdout)["seats"]
    assert seat["status"] == "error"
    assert seat["error"].startswith("no key for endpoint 'bare': set BENCHWARMERS_KEY_BARE")
    assert "benchwarmers endpoint key set bare" in seat["error"]
    assert fake_provider.calls.get("m1", 0) == 0  # it never went out


# ------------------------------------------------------------------ 3


def test_onboard_alias_and_ad_hoc_on_a_model_already_there(fake_provider: FakeProvider) -> None:
    hub(fake_provider, FakeModel("vendor/m1", answer="ready"))
    assert "m1 is available" in ok("onboard", "vendor/m1", "-e", "hub", "--quick")
    one_error(
        bw("onboard", "vendor/m1", "-e", "hub", "--quick", "--alias", "other"),
        "vendor/m1 on hub is already on the bench as 'm1'",
        "without --alias",
    )
    one_error(bw("onboard", "vendor/m1", "-e", "hub", "--ad-hoc"), "--ad-hoc would stop that")
    listed = given("model", "list")
    assert "other" not in listed and "ad hoc" not in listed


# ------------------------------------------------------------------ 4


def test_onboard_registers_no_typo_and_no_url_missing_v1(fake_provider: FakeProvider) -> None:
    hub(fake_provider, FakeModel("vendor/model-one", answer="ready"))
    one_error(
        bw("onboard", "vendor/model-on", "-e", "hub", "--quick"),
        "hub does not serve 'vendor/model-on'",
        "vendor/model-one",
        "--keep",
    )
    assert "No models yet" in given("model", "list")

    given("endpoint", "add", "short", fake_provider.url, "--keyless", "--no-check")  # no /v1
    one_error(
        bw("onboard", "vendor/model-one", "-e", "short", "--quick"),
        "did not answer",
        f"end in /v1 ({fake_provider.url}/v1?)",
        "--keep",
    )
    assert "No models yet" in given("model", "list")

    kept = ok("onboard", "vendor/model-on", "-e", "hub", "--quick", "--keep")
    assert "is unavailable" in kept


# ------------------------------------------------------------------ 5


def test_ask_into_a_closed_pipe_and_a_url_that_is_not_one(fake_provider: FakeProvider, home: Path) -> None:
    hub(
        fake_provider,
        FakeModel("fast", answer="first line\n\n" + "more words " * 200, ttfb=0.01),
        FakeModel("slow", answer="the second seat " * 200, ttfb=0.6),
    )
    given("model", "add", "fast", "-e", "hub", "-s", "fast")
    given("model", "add", "slow", "-e", "hub", "-s", "slow")
    given("collection", "add", "duo", "-m", "fast", "-m", "slow")
    with live_server(home) as server:
        ask = subprocess.Popen(
            [sys.executable, "-c", RUN, "ask", "duo", "hi"],
            env={**os.environ, "BENCHWARMERS_URL": server.url},
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        assert ask.stdout is not None and ask.stderr is not None
        assert "fast" in ask.stdout.readline()  # `| head -1`: one line read, then the pipe is closed
        ask.stdout.close()
        assert ask.wait(timeout=60) == 0
        assert ask.stderr.read() == ""  # no BrokenPipe traceback, no aclose() RuntimeError

    one_error(
        bw("ask", "duo", "hi", BENCHWARMERS_URL="notaurl"),
        "BENCHWARMERS_URL must be the server's URL, such as http://127.0.0.1:8122, not 'notaurl'",
    )


# ------------------------------------------------------------------ 6


def test_an_upstream_429_and_our_own_refusal_are_told_apart(fake_provider: FakeProvider, home: Path) -> None:
    hub(
        fake_provider,
        FakeModel("busy", rate_limit=RateLimit("retry-after", retry=30)),
        FakeModel("capped", answer="fine"),
    )
    given("model", "add", "busy", "-e", "hub", "-s", "busy")
    given("model", "add", "capped", "-e", "hub", "-s", "capped")
    # 20 s a seat: time enough on a busy machine, and far short of the minute rpm 1 makes the second ask wait.
    given("collection", "add", "pair", "-m", "busy", "-m", "capped", "--timeout", "20")
    given("limit", "set", "hub", "--model", "capped", "--rpm", "1")
    with live_server(home) as server:  # one process keeps the minute's count
        first = json.loads(ok("ask", "pair", "one", "--json", url=server.url))
        assert {s["alias"]: s["status"] for s in first["seats"]} == {"busy": "rate_limited", "capped": "ok"}
        # No seat answered: the server's error (docs/api.md), each seat's and member's reason in it.
        one_error(
            bw("ask", "pair", "two", "--json", url=server.url),
            "the server said 429: no seat of bench/pair answered",
            "Seat 1 (capped): the limit of 1 requests a minute on hub/capped (set) is used up",
            "left off busy: resting until",  # after its 429
        )
    assert fake_provider.calls["capped"] == 1  # our refusal never went out

    seat = Seat(
        call="c_x", seat="Seat 1", alias="busy", status="rate_limited", seconds=0.1, error="slow down"
    )
    assert "the provider refused it: rate limited, HTTP 429" in seat_text(seat)
    ours = Seat(call="c_y", seat="Seat 2", alias="capped", status="limited", seconds=0.0)
    assert "not asked: a rate limit here" in seat_text(ours)


# ------------------------------------------------------------------ 7


def test_serve_banner_and_help(tmp_path: Path) -> None:
    with serving("--host", "0.0.0.0") as (port, output):
        pass
    home = os.environ["BENCHWARMERS_HOME"]
    (first,) = [row for row in output if row.startswith("Benchwarmers on ")]
    assert f"every address of this machine (0.0.0.0:{port})" in first
    assert f"http://127.0.0.1:{port} here" in first and f"(data folder {home})" in first
    assert any("every gateway call now needs a gateway key" in row for row in output)
    assert any("no gateway key exists yet" in row and "key add" in row for row in output)
    (next_step,) = [row for row in output if row.startswith("No endpoint yet")]
    assert "benchwarmers endpoint add NAME BASE_URL --key" in next_step and "serve --demo" in next_step

    shown = ok("serve", "--help", COLUMNS="200")
    # The column widths follow the longest option (`--workers`), so match across them.
    assert re.search(r"--port +N \[0<=x<=65535\]", shown) and "--demo   " in shown
    assert re.search(r"--workers +N \[x>=1\]", shown)
    for command in (["serve"], ["ask"], ["onboard"], ["endpoint", "add"]):
        shown = given(*command, "--help", COLUMNS="200")
        assert "<bool>" not in shown and "<str>" not in shown and "<int" not in shown, shown
