"""A key given to `init --key` or the environment appears in no file of the
data folder, in no log line and in no command output."""

from __future__ import annotations

import asyncio
import logging
from pathlib import Path

import pytest
from typer.testing import CliRunner

from benchwarmers.cli.main import app
from benchwarmers.config.keys import endpoint_key, keys_path
from benchwarmers.runtime import Runtime
from benchwarmers.store.models import list_models
from benchwarmers.store.views import ModelView

PROMPTED = "sk-prompted-4f1c9e0b7d2a"
FROM_ENV = "sk-environment-93ab5c1e77"


def test_keys_stay_out_of_the_data_folder_and_logs(
    home: Path, caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    caplog.set_level(logging.DEBUG)  # every logger, SQLAlchemy's statements and parameters included
    monkeypatch.setenv("BENCHWARMERS_KEY_ENV_HUB", FROM_ENV)
    runner = CliRunner()
    commands = [
        (["init", "--endpoint", "prompted", "https://a.example/v1", "--key"], f"{PROMPTED}\n"),
        (["endpoint", "add", "env-hub", "https://b.example/v1", "--api", "gemini", "--no-check"], None),
        (["model", "add", "alpha", "--endpoint", "prompted", "--served", "a-1"], None),
        (["model", "add", "beta", "--endpoint", "env-hub", "--served", "b-1"], None),
        (["collection", "add", "duo", "--member", "alpha", "--member", "beta"], None),
        (["endpoint", "list"], None),
        (["model", "list"], None),
        (["collection", "show", "duo"], None),
    ]
    outputs = []
    for args, typed in commands:
        result = runner.invoke(app, args, input=typed)
        assert result.exit_code == 0, result.output
        outputs.append(result.output)

    # The keys are where they belong, and reachable.
    assert endpoint_key("prompted") == PROMPTED
    assert endpoint_key("env-hub") == FROM_ENV
    assert PROMPTED in keys_path().read_text()
    assert "sk-" not in repr(asyncio.run(_bench_views(home)))  # the views know nothing of keys

    files = [path for path in home.rglob("*") if path.is_file()]
    assert any(path.name == "benchwarmers.db" for path in files)
    assert b"https://a.example/v1" in b"".join(path.read_bytes() for path in files)  # the scan sees the store
    for path in files:
        content = path.read_bytes()
        for secret in (PROMPTED, FROM_ENV):
            assert secret.encode() not in content, f"{secret} found in {path}"
    logged = "\n".join(record.getMessage() for record in caplog.records)
    assert "INSERT INTO endpoints" in logged  # the capture did see the store's statements
    for secret in (PROMPTED, FROM_ENV):
        assert secret not in logged
        assert all(secret not in output for output in outputs)


async def _bench_views(home: Path) -> list[ModelView]:
    async with Runtime.open(home=home) as rt:
        return await list_models(rt.store)
