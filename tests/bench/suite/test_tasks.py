"""The shipped suite loads, covers every shape and checker it promises, and
user tasks sit beside (and may replace) shipped ones."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pytest

from benchwarmers.bench.suite import sandbox
from benchwarmers.bench.suite.checkers import check
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


# ------------------------------------- issue 36, attack 6: an always-equal answer

# An answer that claims to equal anything: on 3fd40b0 it passed 4 of the 9 code
# tasks (their tests compared with `==` and never looked at a type).
ALWAYS_EQUAL = """
class Anything:
    def __eq__(self, other): return True
    def __ne__(self, other): return False
    __lt__ = __le__ = __gt__ = __ge__ = __eq__
    def __hash__(self): return 0
    def __bool__(self): return True
    def __len__(self): return 1
    def __iter__(self): return iter([self])
    def __getitem__(self, key): return self
    def __getattr__(self, name): return self
    def __call__(self, *args, **kwargs): return self
    def __repr__(self): return "[]"
    __class__ = property(lambda self: list)

def __getattr__(name):
    return Anything()
"""

# A right answer to each shipped unit-test task: the tests still pass it.
RIGHT = {
    "code-fizzbuzz": (
        "def fizzbuzz(n):\n"
        "    said = {15: 'FizzBuzz', 3: 'Fizz', 5: 'Buzz'}\n"
        "    return [next((w for d, w in said.items() if i % d == 0), str(i)) for i in range(1, n + 1)]\n"
    ),
    "code-palindrome": (
        "def is_palindrome(text):\n"
        "    kept = [c.lower() for c in text if c.isalnum()]\n"
        "    return kept == kept[::-1]\n"
    ),
    "code-merge-intervals": (
        "def merge_intervals(intervals):\n"
        "    merged = []\n"
        "    for start, end in sorted(intervals):\n"
        "        if merged and start <= merged[-1][1]:\n"
        "            merged[-1][1] = max(merged[-1][1], end)\n"
        "        else:\n"
        "            merged.append([start, end])\n"
        "    return merged\n"
    ),
    "code-roman": (
        "def roman_to_int(s):\n"
        "    values = {'I': 1, 'V': 5, 'X': 10, 'L': 50, 'C': 100, 'D': 500, 'M': 1000}\n"
        "    total = 0\n"
        "    for here, after in zip(s, s[1:] + ' '):\n"
        "        total += -values[here] if values.get(after, 0) > values[here] else values[here]\n"
        "    return total\n"
    ),
    "code-flatten": (
        "def flatten(items):\n"
        "    flat, stack = [], [iter(items)]\n"
        "    while stack:\n"
        "        for item in stack[-1]:\n"
        "            if isinstance(item, list):\n"
        "                stack.append(iter(item))\n"
        "                break\n"
        "            flat.append(item)\n"
        "        else:\n"
        "            stack.pop()\n"
        "    return flat\n"
    ),
    "code-word-count": (
        "import re\nfrom collections import Counter\n\n"
        "def word_count(text):\n"
        '    return Counter(re.findall(r"[a-z\']+", text.lower()))\n'
    ),
    "code-lru-cache": (
        "from collections import OrderedDict\n\n"
        "class LRUCache:\n"
        "    def __init__(self, capacity):\n"
        "        self.capacity, self.items = capacity, OrderedDict()\n"
        "    def get(self, key):\n"
        "        if key not in self.items:\n"
        "            return -1\n"
        "        self.items.move_to_end(key)\n"
        "        return self.items[key]\n"
        "    def put(self, key, value):\n"
        "        self.items[key] = value\n"
        "        self.items.move_to_end(key)\n"
        "        if len(self.items) > self.capacity:\n"
        "            self.items.popitem(last=False)\n"
    ),
}

UNIT_TEST_TASKS = sorted(t.id for t in load_tasks() if t.checker["kind"] == "unit_tests")


def test_every_unit_test_task_has_a_right_answer_here() -> None:
    assert sorted(RIGHT) == UNIT_TEST_TASKS


@pytest.mark.integration
@pytest.mark.skipif(sandbox.unavailable() is not None, reason=str(sandbox.unavailable()))
@pytest.mark.parametrize("task_id", UNIT_TEST_TASKS)
async def test_an_always_equal_answer_fails_and_a_right_one_passes(task_id: str) -> None:
    task = next(t for t in load_tasks() if t.id == task_id)
    cheat = await check(task, f"```python\n{ALWAYS_EQUAL}\n```")
    assert not cheat.passed, f"{task_id}: an always-equal object passed its tests"
    right = await check(task, f"```python\n{RIGHT[task_id]}\n```")
    assert right.passed, f"{task_id}: {right.detail}"
