"""`benchwarmers key ...` and `benchwarmers serve`."""

from __future__ import annotations

import json
import os
import re
import socket
from pathlib import Path

import httpx
import pytest
from typer.testing import CliRunner

from benchwarmers.cli.main import app
from benchwarmers.errors import UserError
from benchwarmers.server.run import bind_socket, hold_data_folder
from tests.serving import STOP_WAIT, served, start

runner = CliRunner()


def test_key_add_list_revoke(home: Path) -> None:
    added = runner.invoke(app, ["key", "add", "laptop", "-c", "trio", "-c", "bench/duo", "--rate", "5"])
    assert added.exit_code == 0, added.output
    secret = re.search(r"bw-[\w-]{40,}", added.output).group(0)
    assert "bench/trio, bench/duo" in added.output and "5/min" in added.output
    listed = runner.invoke(app, ["key", "list"])
    assert "laptop" in listed.output and secret not in listed.output and secret[:10] in listed.output
    assert "active" in listed.output
    revoked = runner.invoke(app, ["key", "revoke", "laptop"])
    assert revoked.exit_code == 0 and "Revoked" in revoked.output
    assert "revoked" in runner.invoke(app, ["key", "list"]).output


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["key", "revoke", "nobody"], "no gateway key named 'nobody'"),
        (["key", "add", "bad name"], "key name 'bad name'"),
        (["key", "add", "x", "--rate", "0"], "--rate"),
    ],
)
def test_key_mistakes_are_one_line(home: Path, args: list[str], message: str) -> None:
    result = runner.invoke(app, args)
    assert result.exit_code != 0
    assert message in result.output
    assert "Traceback" not in result.output


def test_a_taken_port_is_one_clear_line(home: Path) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        with pytest.raises(UserError, match=f"port {port} on 127.0.0.1 is already in use"):
            bind_socket("127.0.0.1", port)
        result = runner.invoke(app, ["serve", "--port", str(port)])
    assert result.exit_code == 1
    assert "already in use" in result.output and "Traceback" not in result.output


def test_serve_runs_the_server(home: Path, tmp_path: Path) -> None:
    env = {**os.environ, "BENCHWARMERS_HOME": str(home)}
    with served(log=tmp_path / "serve.log", env=env) as child:
        reply = httpx.get(f"{child.url}/healthz", timeout=30)
        assert reply.json()["ok"] is True
        assert "server" not in reply.headers  # no uvicorn banner header
    assert f"Benchwarmers on {child.url}" in child.output()


def test_a_second_serve_on_a_folder_a_live_serve_holds_is_one_clear_line(home: Path, tmp_path: Path) -> None:
    """Issue 36, lesser: on 3fd40b0 two `serve` processes on one SQLite folder started silently."""
    env = {**os.environ, "BENCHWARMERS_HOME": str(home)}
    env.pop("BENCHWARMERS_DATABASE_URL", None)
    with served(log=tmp_path / "first.log", env=env) as first:
        second = start([], tmp_path / "second.log", env)
        assert second.process.wait(STOP_WAIT) == 1
        said = second.output().strip()
        assert f"(pid {first.process.pid}) is serving the data folder" in said, said
        assert "Traceback" not in said and len(said.splitlines()) == 1
        assert httpx.get(f"{first.url}/healthz", timeout=30).status_code == 200
    # Once the first is gone, the folder is free again.
    with served(log=tmp_path / "third.log", env=env) as third:
        assert httpx.get(f"{third.url}/healthz", timeout=30).status_code == 200


def test_replicas_on_postgresql_may_share_a_folder_and_are_told_why(
    home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    fd, first = hold_data_folder(home)
    try:
        monkeypatch.setenv("BENCHWARMERS_DATABASE_URL", "postgresql+asyncpg://u@127.0.0.1/db")
        monkeypatch.delenv("BENCHWARMERS_REDIS_URL", raising=False)
        alone, without_redis = hold_data_folder(home)
        monkeypatch.setenv("BENCHWARMERS_REDIS_URL", "redis://127.0.0.1:6379/0")
        shared, with_redis = hold_data_folder(home)
        os.close(alone)
        os.close(shared)
        assert first == "" and f"(pid {os.getpid()})" in with_redis
        assert "safe, as replicas share PostgreSQL, and Redis counts limits for both" in with_redis
        assert "each counts provider limits alone until BENCHWARMERS_REDIS_URL is set" in without_redis
    finally:
        os.close(fd)


def test_key_expiry_and_rotation_on_the_command_line(home: Path) -> None:
    added = runner.invoke(app, ["key", "add", "ci", "--expires", "30d"])
    assert added.exit_code == 0, added.output
    old = re.search(r"bw-[\w-]{40,}", added.output).group(0)
    assert "expires " in added.output
    assert runner.invoke(app, ["key", "set", "ci", "--expires", "2099-01-31"]).exit_code == 0
    listed = runner.invoke(app, ["key", "list", "--json"])
    (key,) = [k for k in json.loads(listed.output) if k["name"] == "ci"]
    assert key["expires_at"].startswith("2099-01-31T00:00:00") and key["works"] is True
    rotated = runner.invoke(app, ["key", "rotate", "ci", "--grace", "1h"])
    assert rotated.exit_code == 0, rotated.output
    new = re.search(r"bw-[\w-]{40,}", rotated.output).group(0)
    assert new != old and "works until" in rotated.output and old not in rotated.output
    table = runner.invoke(app, ["key", "list"]).output
    states = [k["state"] for k in json.loads(runner.invoke(app, ["key", "list", "--json"]).output)]
    assert states == ["active, expires 2099-01-31 00:00 UTC", states[1]]
    assert states[1].startswith("rotated out, works until")
    assert new not in table and old not in table and "rotated out" in table
    now = runner.invoke(app, ["key", "rotate", "ci", "--grace", "0"])
    assert now.exit_code == 0 and "stopped working now" in now.output


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["key", "add", "x", "--expires", "2020-01-01"], "expiry '2020-01-01' is in the past"),
        (["key", "add", "x", "--expires", "2027-02-30"], "expiry '2027-02-30' is not a date"),
        (["key", "add", "x", "--expires", "soon"], "is not a date"),
        (["key", "set", "keep", "--expires", "yesterday"], "is not a date"),
        (["key", "set", "keep", "--expires", "2001-01-01"], "is in the past"),
        (["key", "rotate", "keep", "--grace", "-1h"], "grace '-1h' is negative"),
        (["key", "rotate", "keep", "--grace", "later"], "grace 'later' is not a time"),
        (["key", "rotate", "nobody", "--grace", "1h"], "no gateway key named 'nobody'"),
    ],
)
def test_key_expiry_and_rotation_mistakes_are_one_line_and_save_nothing(
    home: Path, args: list[str], message: str
) -> None:
    assert runner.invoke(app, ["key", "add", "keep"]).exit_code == 0
    before = runner.invoke(app, ["key", "list", "--json"]).output
    result = runner.invoke(app, args)
    assert result.exit_code != 0
    assert message in result.output and "Traceback" not in result.output
    assert len(result.output.strip().splitlines()) == 1
    assert runner.invoke(app, ["key", "list", "--json"]).output == before
