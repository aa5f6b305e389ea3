"""SWE-rebench rows become code tasks checked by the files the real fix touched."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from benchwarmers.bench.suite.checkers import check
from benchwarmers.bench.suite.rebench import import_jsonl
from benchwarmers.bench.suite.tasks import load_tasks
from benchwarmers.errors import UserError

pytestmark = pytest.mark.unit

PATCH = (
    "diff --git a/pkg/core.py b/pkg/core.py\n--- a/pkg/core.py\n+++ b/pkg/core.py\n@@ -1 +1 @@\n-a\n+b\n"
    "diff --git a/pkg/util.py b/pkg/util.py\n--- a/pkg/util.py\n+++ b/pkg/util.py\n@@ -1 +1 @@\n-c\n+d\n"
)
ROW = {
    "instance_id": "acme__pkg-123",
    "repo": "acme/pkg",
    "base_commit": "0123456789abcdef",
    "problem_statement": "Calling pkg.core.run() with an empty list crashes.",
    "hints_text": "Look at util.normalise.",
    "patch": PATCH,
    "test_patch": "diff --git a/tests/test_core.py b/tests/test_core.py\n",
    "FAIL_TO_PASS": json.dumps(["tests/test_core.py::test_empty"]),
    "PASS_TO_PASS": ["tests/test_core.py::test_one"],
    "version": "1.2",
}


async def test_import_maps_rows_and_the_task_checks(tmp_path: Path, home: Path) -> None:
    source = tmp_path / "bugs.jsonl"
    broken = {"instance_id": "no-patch", "problem_statement": "x", "patch": ""}
    source.write_text(json.dumps(ROW) + "\n\n" + json.dumps(broken) + "\n")
    imported = import_jsonl(source, home)
    assert (imported.tasks, imported.skipped) == (1, 1)
    assert imported.path == home / "tasks" / "rebench-bugs.json"

    task = {t.id: t for t in load_tasks(home)}["rebench-acme__pkg-123"]
    assert (task.role, task.shape, task.source) == ("code", "code", "user")
    assert (
        "acme/pkg" in task.prompt and "empty list crashes" in task.prompt and "util.normalise" in task.prompt
    )
    assert "test_core" not in task.prompt  # the tests are never shown
    assert task.checker == {"kind": "patch_files", "files": ["pkg/core.py", "pkg/util.py"]}
    assert task.meta["fail_to_pass"] == ["tests/test_core.py::test_empty"]
    assert task.meta["test_files"] == ["tests/test_core.py"]

    assert (await check(task, "```diff\n" + PATCH + "```")).passed
    assert not (await check(task, PATCH.split("diff --git a/pkg/util.py")[0])).passed


def test_import_again_replaces_and_rejects_junk(tmp_path: Path, home: Path) -> None:
    source = tmp_path / "bugs.jsonl"
    source.write_text(json.dumps(ROW) + "\n" + json.dumps(ROW) + "\n")
    assert import_jsonl(source, home).tasks == 1
    assert import_jsonl(source, home).tasks == 1
    assert sum(t.id.startswith("rebench-") for t in load_tasks(home)) == 1
    source.write_text("not json\n")
    with pytest.raises(UserError, match=r"bugs\.jsonl:1"):
        import_jsonl(source, home)
    source.write_text(json.dumps({"instance_id": "x"}) + "\n")
    with pytest.raises(UserError, match="no usable rows"):
        import_jsonl(source, home)
