"""Suite tasks: files, not code, so a user adds one by dropping a file.

Shipped tasks live in `bench/suite/tasks/*.json` inside the package; the
user's own live in `<home>/tasks/*.json` (the rebench importer writes there
too) and may replace a shipped task by using its id. A file holds one task
object or a list of them:

    {"id": "short-capital",          unique across the suite
     "role": "general",              which kind of model it tests (general, code, light, vision)
     "shape": "short",               the request shape its result counts for (short, long, code, vision)
     "prompt": "...",
     "system": "",                   optional
     "image": "cat.png",             optional, relative to the task file: the task is sent with it
     "max_tokens": 1024,             optional
     "checker": {"kind": "exact" | "regex" | "json_schema" | "numeric" | "unit_tests" | "patch_tests", ...}}

Checker fields are described in `checkers.py` (and `patches.py` for
`patch_tests`, whose prompt is the issue followed by the files it shows).
A `patch_files` task (what earlier imports of SWE-rebench rows wrote: file
names only) loads as a `patch_tests` task without code, which the suite
skips with the reason.
"""

from __future__ import annotations

import base64
import json
import mimetypes
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from benchwarmers.bench.suite.patches import prompt_for
from benchwarmers.errors import UserError

SHIPPED = Path(__file__).parent / "tasks"
USER_FOLDER = "tasks"
ROLES = ("general", "code", "light", "vision")
SHAPES = ("short", "long", "code", "vision")
CHECKERS = ("exact", "regex", "json_schema", "numeric", "unit_tests", "patch_tests")


@dataclass(frozen=True, slots=True)
class Task:
    id: str
    role: str
    shape: str
    prompt: str
    checker: dict[str, Any]
    system: str = ""
    image: Path | None = None
    max_tokens: int = 1024
    source: str = "shipped"
    meta: dict[str, Any] = field(default_factory=dict)

    def image_base64(self) -> tuple[str, str]:
        """(media type, base64 data) of the task's image."""
        assert self.image is not None
        media = mimetypes.guess_type(self.image.name)[0] or "image/png"
        return media, base64.b64encode(self.image.read_bytes()).decode()


def parse_task(raw: object, *, where: Path, source: str) -> Task:
    """One task from its JSON; a clear error naming the file and field."""
    if not isinstance(raw, dict):
        raise UserError(f"{where}: a task must be a JSON object")

    def text(key: str, default: str | None = None) -> str:
        value = raw.get(key, default)
        if not isinstance(value, str) or (default is None and not value.strip()):
            raise UserError(f"{where}: task field {key!r} must be a non-empty string")
        return value

    task_id = text("id")
    role, shape = text("role", "general"), text("shape", "short")
    if role not in ROLES:
        raise UserError(f"{where}: task {task_id}: role must be one of {', '.join(ROLES)}")
    if shape not in SHAPES:
        raise UserError(f"{where}: task {task_id}: shape must be one of {', '.join(SHAPES)}")
    checker = raw.get("checker")
    meta = raw.get("meta", {})
    meta = meta if isinstance(meta, dict) else {}
    if isinstance(checker, dict) and checker.get("kind") == "patch_files":
        checker = {"kind": "patch_tests", "files": {}, "tests": {}, **_rebench_ids(meta)}
    if not isinstance(checker, dict) or checker.get("kind") not in CHECKERS:
        raise UserError(f"{where}: task {task_id}: checker.kind must be one of {', '.join(CHECKERS)}")
    image = None
    if raw.get("image"):
        image = where.parent / text("image")
        if not image.is_file():
            raise UserError(f"{where}: task {task_id}: image {image.name} not found beside the file")
    max_tokens = raw.get("max_tokens", 1024)
    if not isinstance(max_tokens, int) or max_tokens <= 0:
        raise UserError(f"{where}: task {task_id}: max_tokens must be a positive integer")
    prompt = text("prompt")
    if checker["kind"] == "patch_tests":
        for key in ("files", "tests"):
            value = checker.get(key, {})
            if not isinstance(value, dict) or not all(isinstance(v, str) for v in value.values()):
                raise UserError(f"{where}: task {task_id}: checker.{key} must map paths to file texts")
        prompt = prompt_for(prompt, checker) if checker.get("files") else prompt
    return Task(
        task_id,
        role,
        shape,
        prompt,
        checker,
        system=text("system", ""),
        image=image,
        max_tokens=max_tokens,
        source=source,
        meta=meta,
    )


def _rebench_ids(meta: dict[str, Any]) -> dict[str, list[str]]:
    return {
        "fail_to_pass": [str(t) for t in meta.get("fail_to_pass") or []],
        "pass_to_pass": [str(t) for t in meta.get("pass_to_pass") or []],
    }


def load_file(path: Path, source: str) -> list[Task]:
    try:
        raw = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError) as exc:
        raise UserError(f"{path}: not a readable JSON task file: {exc}") from exc
    items = raw if isinstance(raw, list) else [raw]
    return [parse_task(item, where=path, source=source) for item in items]


def load_tasks(home: Path | None = None) -> list[Task]:
    """Shipped tasks, then the user's (a user task with a shipped id wins),
    in id order within each."""
    tasks: dict[str, Task] = {}
    for path in sorted(SHIPPED.glob("*.json")):
        for task in load_file(path, "shipped"):
            tasks[task.id] = task
    if home is not None and (home / USER_FOLDER).is_dir():
        for path in sorted((home / USER_FOLDER).glob("*.json")):
            for task in load_file(path, "user"):
                tasks[task.id] = task
    return list(tasks.values())
