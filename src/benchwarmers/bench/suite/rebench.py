"""Import real-bug tasks from a local SWE-rebench-style JSONL file.

A SWE-rebench row describes a real GitHub issue, the patch that fixed it
and the tests that prove it (`FAIL_TO_PASS`, `PASS_TO_PASS`, and the
`test_patch` that adds them). Each row becomes a `patch_tests` task (see
`patches.py`): the model's patch is applied to the code at `base_commit`
and those tests run in the sandbox. The code comes from a clone of the
repository given as `checkout`:

| row field            | task                                                        |
|----------------------|-------------------------------------------------------------|
| `instance_id`        | id `rebench-<instance_id>`                                  |
| `repo`, `base_commit`| named in the prompt; the commit the code is read at         |
| `problem_statement`  | the prompt's issue text (cut to 12,000 characters)          |
| `hints_text`         | appended as hints when present                              |
| `patch`              | the files it changes are shown; every `.py` file under their top folders is carried |
| `test_patch`         | applied to the files it names: the hidden tests             |
| `FAIL_TO_PASS`, `PASS_TO_PASS` | the tests that must pass after the model's patch  |
| `created_at`, `version` | kept in `meta`                                           |

With a checkout, a row is kept only if its own fix passes its tests in the
sandbox (the sandbox's Python has the standard library only, so rows whose
tests need other packages are skipped, counted, not kept as tasks no model
could pass). Without one, the task carries the test names but no code, and
the suite skips it with that reason. Rows without an `instance_id`, a
`problem_statement` or a `patch` that changes a file are skipped and
counted. Tasks are written to `<home>/tasks/rebench-<file>.json`;
importing the same file again replaces that file's tasks. Online,
`rebench_fetch.py` reads the same rows from the Hugging Face datasets
server and maps them with `task_from_row`.
"""

from __future__ import annotations

import json
import re
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from benchwarmers.bench.suite import sandbox
from benchwarmers.bench.suite.patches import PatchError, apply_answer, apply_hunks, parse_diff
from benchwarmers.bench.suite.sandbox import Limits, run_tests
from benchwarmers.bench.suite.tasks import USER_FOLDER
from benchwarmers.config import tunables
from benchwarmers.errors import UserError

PROBLEM_KEPT = 12_000
PATCH_FILE = re.compile(r"^diff --git a/(\S+) b/(\S+)", re.MULTILINE)
CODE_CARRIED = 2 * 1024 * 1024  # a task's code, at most; bigger repositories are skipped
VALIDATE_TIMEOUT = tunables.REBENCH_VALIDATE_TIMEOUT.value


class RowSkipped(Exception):
    """This row cannot become a runnable task; the message says why."""


@dataclass(frozen=True, slots=True)
class Imported:
    path: Path
    tasks: int
    skipped: int
    reasons: tuple[str, ...] = ()  # why rows were skipped, where a reason is known


def patch_files(patch: str) -> list[str]:
    """The files a unified diff changes, in order, each once."""
    return list(dict.fromkeys(b for _a, b in PATCH_FILE.findall(patch)))


def task_from_row(row: dict[str, Any], checkout: Path | None = None) -> dict[str, Any] | None:
    """The task for one row (None for a row that makes none); with a
    checkout, its code and tests are read at the row's commit."""
    instance = row.get("instance_id")
    problem = row.get("problem_statement")
    patch = str(row["patch"]) if isinstance(row.get("patch"), str) else ""
    files = patch_files(patch)
    if not isinstance(instance, str) or not instance or not isinstance(problem, str) or not files:
        return None
    repo, commit = str(row.get("repo", "")), str(row.get("base_commit", ""))
    where = (
        f"the repository {repo}" + (f" at commit {commit[:12]}" if commit else "") if repo else "a repository"
    )
    prompt = f"You are fixing a real bug in {where}. The issue:\n\n{problem[:PROBLEM_KEPT]}" + (
        f"\n\nHints from the discussion:\n{row['hints_text'][:4000]}" if row.get("hints_text") else ""
    )
    test_patch = str(row.get("test_patch") or "")
    code, tests = _code_at(checkout, commit, files, test_patch) if checkout is not None else ({}, {})
    return {
        "id": f"rebench-{instance}",
        "role": "code",
        "shape": "code",
        "prompt": prompt,
        "max_tokens": 4096,
        "checker": {
            "kind": "patch_tests",
            "files": code,
            "show": [f for f in files if f in code],
            "tests": tests,
            "fail_to_pass": _names(row.get("FAIL_TO_PASS")),
            "pass_to_pass": _names(row.get("PASS_TO_PASS")),
            "timeout": VALIDATE_TIMEOUT,
        },
        "meta": {
            "source": "swe-rebench",
            "repo": repo,
            "base_commit": commit,
            "fail_to_pass": _names(row.get("FAIL_TO_PASS")),
            "pass_to_pass": _names(row.get("PASS_TO_PASS")),
            "test_files": patch_files(test_patch),
            "gold_patch": patch,
            "created_at": str(row.get("created_at", "")),
            "version": str(row.get("version", "")),
        },
    }


def _code_at(
    checkout: Path, commit: str, files: list[str], test_patch: str
) -> tuple[dict[str, str], dict[str, str]]:
    """(code, tests) at `commit`: every `.py` file under the top folders of
    the files the fix touches, and the test patch's files with it applied."""
    tests_touched = patch_files(test_patch)
    roots = {path.split("/")[0] for path in files + tests_touched}
    names = _git(checkout, "ls-tree", "-r", "--name-only", commit).splitlines()
    wanted = [
        n
        for n in names
        if n.split("/")[0] in roots and (n.endswith(".py") or n in files or n in tests_touched)
    ]
    code: dict[str, str] = {}
    for name in wanted:
        code[name] = _git(checkout, "show", f"{commit}:{name}")
        if sum(map(len, code.values())) > CODE_CARRIED:
            raise RowSkipped(f"more than {CODE_CARRIED // 1024} KB of code under {', '.join(sorted(roots))}")
    tests: dict[str, str] = {}
    try:
        for path, hunks in parse_diff(test_patch).items():
            tests[path] = apply_hunks(code.pop(path, ""), hunks, path)
    except PatchError as exc:
        raise RowSkipped(f"its test patch does not apply: {exc}") from exc
    return code, tests


def _git(checkout: Path, *args: str) -> str:
    try:
        done = subprocess.run(
            ["git", "-C", str(checkout), *args], capture_output=True, text=True, check=False, timeout=60
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise RowSkipped(f"git could not read {checkout}: {exc}") from exc
    if done.returncode != 0:
        raise RowSkipped(
            f"{checkout}: {done.stderr.strip().splitlines()[-1] if done.stderr.strip() else 'git failed'}"
        )
    return done.stdout


async def fixed_by_its_patch(task: dict[str, Any]) -> str | None:
    """None when the row's own fix passes its tests in the sandbox, else why not."""
    checker = task["checker"]
    try:
        patched = apply_answer(checker["files"], task["meta"]["gold_patch"])
    except PatchError as exc:
        return f"its fix does not apply: {exc}"
    ids = checker["fail_to_pass"] + checker["pass_to_pass"]
    if not ids:
        return "it names no tests"
    outcome = await run_tests({**patched, **checker["tests"]}, ids, limits=Limits(timeout=VALIDATE_TIMEOUT))
    return None if outcome.passed else f"its own fix does not pass its tests here: {outcome.detail}"


async def import_jsonl(source: Path, home: Path, checkout: Path | None = None) -> Imported:
    try:
        lines = source.read_text(encoding="utf-8").splitlines()
    except OSError as exc:
        raise UserError(f"cannot read {source}: {exc.strerror or exc}") from exc
    if checkout is not None and sandbox.unavailable() is not None:
        raise UserError(f"cannot check the rows' tests: {sandbox.unavailable()}")
    tasks: dict[str, dict[str, Any]] = {}
    skipped = 0
    reasons: list[str] = []
    for number, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
        except json.JSONDecodeError as exc:
            raise UserError(f"{source}:{number}: not JSON: {exc.msg}") from exc
        try:
            task = task_from_row(row, checkout) if isinstance(row, dict) else None
            reason = await fixed_by_its_patch(task) if task is not None and checkout is not None else None
        except RowSkipped as exc:
            task, reason = None, str(exc)
        if task is None or reason is not None:
            skipped += 1
            reasons += [f"{source.name}:{number}: {reason}"] if reason else []
        else:
            tasks[task["id"]] = task
    if not tasks:
        detail = f"; {reasons[0]}" if reasons else ""
        raise UserError(
            f"{source}: no usable rows (each needs instance_id, problem_statement and a patch){detail}"
        )
    folder = home / USER_FOLDER
    folder.mkdir(parents=True, exist_ok=True)
    target = folder / f"rebench-{re.sub(r'[^A-Za-z0-9_.-]+', '-', source.stem)}.json"
    target.write_text(json.dumps(list(tasks.values()), indent=1), encoding="utf-8")
    return Imported(target, len(tasks), skipped, tuple(reasons))


def _names(value: Any) -> list[str]:
    """FAIL_TO_PASS comes as a list or as a JSON-encoded list, depending on the export."""
    if isinstance(value, str):
        try:
            value = json.loads(value)
        except json.JSONDecodeError:
            return [value]
    return [str(v) for v in value] if isinstance(value, list) else []
