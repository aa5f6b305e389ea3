"""`benchwarmers suite run|list|import` from a terminal."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

from typer.testing import CliRunner

from benchwarmers.cli.main import app
from benchwarmers.runtime import Runtime
from benchwarmers.store.endpoints import add_endpoint
from benchwarmers.store.models import add_model
from benchwarmers.testing import FakeModel, FakeProvider


def prepare(home: Path, fake: FakeProvider) -> None:
    async def work() -> None:
        async with Runtime.open(home=home) as rt:
            await add_endpoint(rt.store, "fake", fake.openai_base, "openai", needs_key=False)
            await add_model(rt.store, "yes-man", "fake", "yes-1")
            await add_model(rt.store, "loner", "fake", "loner-1", ad_hoc=True)

    asyncio.run(work())


def test_suite_run_one_shape_with_progress(home: Path, fake_provider: FakeProvider) -> None:
    fake_provider.add(FakeModel("yes-1", answer="yes\nConfidence: 99%"))
    fake_provider.add(FakeModel("loner-1", answer="yes"))
    prepare(home, fake_provider)
    runner = CliRunner()
    result = runner.invoke(app, ["suite", "run", "--shape", "short", "--limit", "3", "--gap", "0"])
    assert result.exit_code == 0, result.output
    # Only the model the bench may call on its own; three tasks, at most.
    assert fake_provider.calls["yes-1"] == 3 and fake_provider.calls["loner-1"] == 0
    assert "yes-man" in result.output and "3/3" in result.output  # the progress bar, done
    assert "│ yes-man │ 0      │ 3     │ 3 " in result.output  # wrong thrice, at 99% each
    # Named, an ad hoc model runs: the user asked for it.
    result = runner.invoke(app, ["suite", "run", "loner", "--limit", "1", "--gap", "0"])
    assert result.exit_code == 0, result.output
    assert fake_provider.calls["loner-1"] == 1

    bad = runner.invoke(app, ["suite", "run", "--shape", "huge"])
    assert bad.exit_code != 0 and "shape" in bad.output


def test_suite_list_and_import(home: Path, tmp_path: Path) -> None:
    runner = CliRunner()
    listed = runner.invoke(app, ["suite", "list"])
    assert listed.exit_code == 0 and "code-fizzbuzz" in listed.output and "shipped" in listed.output
    source = tmp_path / "rows.jsonl"
    row = {
        "instance_id": "o__r-1",
        "problem_statement": "It breaks.",
        "patch": "diff --git a/x.py b/x.py\n",
    }
    source.write_text(json.dumps(row) + "\n")
    imported = runner.invoke(app, ["suite", "import", str(source)])
    assert imported.exit_code == 0, imported.output
    assert "Imported 1 tasks" in imported.output
    listed = runner.invoke(app, ["suite", "list", "--shape", "code"])
    assert "rebench-o__r-1" in listed.output and "user" in listed.output
