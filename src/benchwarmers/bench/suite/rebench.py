"""Import real-bug tasks from a local SWE-rebench-style JSONL file.

A SWE-rebench row describes a real GitHub issue and the patch that fixed
it. Running its tests needs the repository at `base_commit` and its whole
environment, which an offline gateway does not have; what can be checked
here, honestly, is whether a model finds *where* the bug is: the files the
real fix changed. The mapping:

| row field            | task                                                        |
|----------------------|-------------------------------------------------------------|
| `instance_id`        | id `rebench-<instance_id>`                                  |
| `repo`, `base_commit`| named in the prompt (the repository and commit to fix)      |
| `problem_statement`  | the prompt's issue text (cut to 12,000 characters)          |
| `hints_text`         | appended as hints when present                              |
| `patch`              | its changed files become the `patch_files` checker          |
| `FAIL_TO_PASS`, `PASS_TO_PASS` | kept in `meta` (names of the tests the fix turns green) |
| `test_patch`         | its files kept in `meta.test_files`; never shown to the model |
| `created_at`, `version` | kept in `meta`                                           |

Every task has role `code` and shape `code`. Rows without an
`instance_id`, a `problem_statement` or a `patch` that changes a file are
skipped and counted. Tasks are written to `<home>/tasks/rebench-<file>.json`;
importing the same file again replaces that file's tasks. Online,
`rebench_fetch.py` reads the same rows from the Hugging Face datasets
server and maps them with `task_from_row`.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from benchwarmers.bench.suite.tasks import USER_FOLDER
from benchwarmers.errors import UserError

PROBLEM_KEPT = 12_000
PATCH_FILE = re.compile(r"^diff --git a/(\S+) b/(\S+)", re.MULTILINE)


@dataclass(frozen=True, slots=True)
class Imported:
    path: Path
    tasks: int
    skipped: int


def patch_files(patch: str) -> list[str]:
    """The files a unified diff changes, in order, each once."""
    return list(dict.fromkeys(b for _a, b in PATCH_FILE.findall(patch)))


def task_from_row(row: dict[str, Any]) -> dict[str, Any] | None:
    instance = row.get("instance_id")
    problem = row.get("problem_statement")
    files = patch_files(row.get("patch") or "") if isinstance(row.get("patch"), str) else []
    if not isinstance(instance, str) or not instance or not isinstance(problem, str) or not files:
        return None
    repo, commit = str(row.get("repo", "")), str(row.get("base_commit", ""))
    where = (
        f"the repository {repo}" + (f" at commit {commit[:12]}" if commit else "") if repo else "a repository"
    )
    prompt = (
        f"You are fixing a real bug in {where}. The issue:\n\n{problem[:PROBLEM_KEPT]}\n\n"
        + (f"Hints from the discussion:\n{row['hints_text'][:4000]}\n\n" if row.get("hints_text") else "")
        + "Write the fix as a unified diff (with `diff --git a/<path> b/<path>` headers) "
        "touching every file that must change."
    )
    return {
        "id": f"rebench-{instance}",
        "role": "code",
        "shape": "code",
        "prompt": prompt,
        "max_tokens": 4096,
        "checker": {"kind": "patch_files", "files": files},
        "meta": {
            "source": "swe-rebench",
            "repo": repo,
            "base_commit": commit,
            "fail_to_pass": _names(row.get("FAIL_TO_PASS")),
            "pass_to_pass": _names(row.get("PASS_TO_PASS")),
            "test_files": patch_files(row.get("test_patch") or ""),
            "created_at": str(row.get("created_at", "")),
            "version": str(row.get("version", "")),
        },
    }


def import_jsonl(source: Path, home: Path) -> Imported:
    try:
        lines = source.read_text(encoding="utf-8").splitlines()
    except OSError as exc:
        raise UserError(f"cannot read {source}: {exc.strerror or exc}") from exc
    tasks: dict[str, dict[str, Any]] = {}
    skipped = 0
    for number, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
        except json.JSONDecodeError as exc:
            raise UserError(f"{source}:{number}: not JSON: {exc.msg}") from exc
        task = task_from_row(row) if isinstance(row, dict) else None
        if task is None:
            skipped += 1
        else:
            tasks[task["id"]] = task
    if not tasks:
        raise UserError(f"{source}: no usable rows (each needs instance_id, problem_statement and a patch)")
    folder = home / USER_FOLDER
    folder.mkdir(parents=True, exist_ok=True)
    target = folder / f"rebench-{re.sub(r'[^A-Za-z0-9_.-]+', '-', source.stem)}.json"
    target.write_text(json.dumps(list(tasks.values()), indent=1), encoding="utf-8")
    return Imported(target, len(tasks), skipped)


def _names(value: Any) -> list[str]:
    """FAIL_TO_PASS comes as a list or as a JSON-encoded list, depending on the export."""
    if isinstance(value, str):
        try:
            value = json.loads(value)
        except json.JSONDecodeError:
            return [value]
    return [str(v) for v in value] if isinstance(value, list) else []
