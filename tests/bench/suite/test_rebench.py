"""SWE-rebench rows become real-bug tasks whose tests run: with a clone of
the repository, the code and tests are read at the row's commit and the
row is kept only if its own fix passes; without one, the suite skips it."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from benchwarmers.bench.suite import sandbox
from benchwarmers.bench.suite.checkers import NO_CODE, cannot_run, check
from benchwarmers.bench.suite.rebench import import_jsonl
from benchwarmers.bench.suite.tasks import load_tasks
from benchwarmers.errors import UserError

needs_sandbox = pytest.mark.skipif(sandbox.unavailable() is not None, reason=str(sandbox.unavailable()))

CORE = "def run(items):\n    return items[0] * 2\n"
PATCH = (
    "diff --git a/pkg/core.py b/pkg/core.py\n--- a/pkg/core.py\n+++ b/pkg/core.py\n"
    "@@ -1,2 +1,4 @@\n def run(items):\n+    if not items:\n+        return None\n     return items[0] * 2\n"
)
TEST_PATCH = (
    "diff --git a/tests/test_core.py b/tests/test_core.py\nnew file mode 100644\n"
    "--- /dev/null\n+++ b/tests/test_core.py\n@@ -0,0 +1,7 @@\n+from pkg.core import run\n+\n"
    "+def test_one():\n+    assert run([2]) == 4\n+\n+def test_empty():\n+    assert run([]) is None\n"
)
ROW = {
    "instance_id": "acme__pkg-123",
    "repo": "acme/pkg",
    "base_commit": "",
    "problem_statement": "Calling pkg.core.run() with an empty list crashes.",
    "hints_text": "Look at the first line of run.",
    "patch": PATCH,
    "test_patch": TEST_PATCH,
    "FAIL_TO_PASS": json.dumps(["tests/test_core.py::test_empty"]),
    "PASS_TO_PASS": ["tests/test_core.py::test_one"],
    "version": "1.2",
}


def _repo(folder: Path) -> str:
    (folder / "pkg").mkdir(parents=True)
    (folder / "pkg" / "__init__.py").write_text("")
    (folder / "pkg" / "core.py").write_text(CORE)
    (folder / "README").write_text("not code")
    git = ["git", "-C", str(folder), "-c", "user.name=t", "-c", "user.email=t@t"]
    subprocess.run([*git, "init", "-q"], check=True)
    subprocess.run([*git, "add", "."], check=True)
    subprocess.run([*git, "commit", "-qm", "base"], check=True)
    return subprocess.run(
        [*git, "rev-parse", "HEAD"], check=True, capture_output=True, text=True
    ).stdout.strip()


async def test_rows_without_a_checkout_carry_their_tests_but_are_skipped(tmp_path: Path, home: Path) -> None:
    source = tmp_path / "bugs.jsonl"
    broken = {"instance_id": "no-patch", "problem_statement": "x", "patch": ""}
    source.write_text(json.dumps(ROW) + "\n\n" + json.dumps(broken) + "\n")
    imported = await import_jsonl(source, home)
    assert (imported.tasks, imported.skipped) == (1, 1)
    assert imported.path == home / "tasks" / "rebench-bugs.json"

    task = {t.id: t for t in load_tasks(home)}["rebench-acme__pkg-123"]
    assert (task.role, task.shape, task.source) == ("code", "code", "user")
    assert "acme/pkg" in task.prompt and "empty list crashes" in task.prompt and "first line" in task.prompt
    assert "test_core" not in task.prompt  # the tests are never shown
    assert task.checker["kind"] == "patch_tests"
    assert task.checker["fail_to_pass"] == ["tests/test_core.py::test_empty"]
    assert task.checker["pass_to_pass"] == ["tests/test_core.py::test_one"]
    assert cannot_run(task) == NO_CODE


def test_tasks_an_earlier_import_wrote_still_load_and_are_skipped(home: Path) -> None:
    (home / "tasks").mkdir()
    old = {
        "id": "rebench-old",
        "role": "code",
        "shape": "code",
        "prompt": "fix it",
        "checker": {"kind": "patch_files", "files": ["pkg/core.py"]},
        "meta": {"fail_to_pass": ["tests/test_core.py::test_empty"], "pass_to_pass": []},
    }
    (home / "tasks" / "rebench-old.json").write_text(json.dumps([old]))
    task = {t.id: t for t in load_tasks(home)}["rebench-old"]
    assert task.checker["kind"] == "patch_tests" and task.checker["fail_to_pass"]
    assert cannot_run(task) == NO_CODE


@needs_sandbox
async def test_with_a_checkout_the_tests_run_and_only_fixable_rows_stay(tmp_path: Path, home: Path) -> None:
    commit = _repo(tmp_path / "clone")
    unfixable = {**ROW, "instance_id": "acme__pkg-9", "PASS_TO_PASS": ["tests/test_core.py::test_missing"]}
    source = tmp_path / "bugs.jsonl"
    source.write_text(
        json.dumps({**ROW, "base_commit": commit})
        + "\n"
        + json.dumps({**unfixable, "base_commit": commit})
        + "\n"
    )
    imported = await import_jsonl(source, home, tmp_path / "clone")
    assert (imported.tasks, imported.skipped) == (1, 1)
    assert "own fix does not pass its tests" in imported.reasons[0]

    task = {t.id: t for t in load_tasks(home)}["rebench-acme__pkg-123"]
    assert set(task.checker["files"]) == {"pkg/__init__.py", "pkg/core.py"}
    assert set(task.checker["tests"]) == {"tests/test_core.py"}
    assert "return items[0] * 2" in task.prompt and "test_empty" not in task.prompt
    assert cannot_run(task) is None

    right = await check(task, "The fix:\n```diff\n" + PATCH + "```\nConfidence: 90%")
    assert right.passed, right.detail
    assert "FAIL_TO_PASS 1/1, PASS_TO_PASS 1/1" in right.detail
    names_only = await check(task, "The bug is in pkg/core.py; change pkg/core.py.")
    assert not names_only.passed and "no patch" in names_only.detail


async def test_junk_is_refused(tmp_path: Path, home: Path) -> None:
    source = tmp_path / "bugs.jsonl"
    source.write_text(json.dumps(ROW) + "\n" + json.dumps(ROW) + "\n")
    assert (await import_jsonl(source, home)).tasks == 1
    assert (await import_jsonl(source, home)).tasks == 1
    assert sum(t.id.startswith("rebench-") for t in load_tasks(home)) == 1
    source.write_text("not json\n")
    with pytest.raises(UserError, match=r"bugs\.jsonl:1"):
        await import_jsonl(source, home)
    source.write_text(json.dumps({"instance_id": "x"}) + "\n")
    with pytest.raises(UserError, match="no usable rows"):
        await import_jsonl(source, home)
