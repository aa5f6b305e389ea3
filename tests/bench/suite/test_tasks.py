"""The shipped suite loads, covers every shape and checker it promises, and
user tasks sit beside (and may replace) shipped ones."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pytest

from benchwarmers.bench.suite.tasks import load_tasks
from benchwarmers.errors import UserError

pytestmark = pytest.mark.unit


def test_shipped_suite_is_broad() -> None:
    tasks = load_tasks()
    assert len(tasks) >= 20
    assert len({t.id for t in tasks}) == len(tasks)
    shapes = Counter(t.shape for t in tasks)
    roles = Counter(t.role for t in tasks)
    checkers = Counter(t.checker["kind"] for t in tasks)
    assert set(shapes) == {"short", "long", "code", "vision"}
    assert set(roles) == {"general", "code", "light", "vision"}
    assert {"exact", "regex", "json_schema", "numeric", "unit_tests"} <= set(checkers)
    assert checkers["unit_tests"] >= 5
    assert checkers["patch_tests"] >= 5
    assert all(t.image is not None and t.image.is_file() for t in tasks if t.shape == "vision")


def test_user_tasks_join_and_override(home: Path) -> None:
    folder = home / "tasks"
    folder.mkdir()
    mine = {
        "id": "mine-1",
        "shape": "short",
        "prompt": "Say hi",
        "checker": {"kind": "regex", "pattern": "hi"},
    }
    override = {
        "id": "general-capital-australia",
        "prompt": "Capital?",
        "checker": {"kind": "exact", "expected": "X"},
    }
    (folder / "mine.json").write_text(json.dumps([mine, override]))
    tasks = {t.id: t for t in load_tasks(home)}
    assert tasks["mine-1"].source == "user" and tasks["mine-1"].role == "general"
    assert tasks["general-capital-australia"].checker["expected"] == "X"


@pytest.mark.parametrize(
    ("raw", "message"),
    [
        ({"id": "x", "prompt": "p", "checker": {"kind": "vibes"}}, "checker.kind"),
        ({"id": "x", "prompt": "p", "shape": "huge", "checker": {"kind": "exact"}}, "shape"),
        ({"prompt": "p", "checker": {"kind": "exact"}}, "'id'"),
        ({"id": "x", "prompt": "p", "image": "missing.png", "checker": {"kind": "exact"}}, "not found"),
    ],
)
def test_bad_task_files_say_what_is_wrong(home: Path, raw: dict[str, object], message: str) -> None:
    (home / "tasks").mkdir()
    (home / "tasks" / "bad.json").write_text(json.dumps(raw))
    with pytest.raises(UserError, match=message):
        load_tasks(home)
