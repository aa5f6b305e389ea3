"""Real-bug tasks: a model's patch is applied the way models write them, and
the task's FAIL_TO_PASS and PASS_TO_PASS tests decide, in the sandbox."""

from __future__ import annotations

import pytest

from benchwarmers.bench.suite import sandbox
from benchwarmers.bench.suite.checkers import check
from benchwarmers.bench.suite.patches import PatchError, apply_answer
from benchwarmers.bench.suite.sandbox import Limits, run_tests
from benchwarmers.bench.suite.tasks import Task, load_tasks

needs_sandbox = pytest.mark.skipif(sandbox.unavailable() is not None, reason=str(sandbox.unavailable()))

CODE = {"m.py": "def f(x):\n    y = x + 1\n    return y\n\n\ndef g():\n    return 0\n"}


def test_a_hunk_is_placed_by_its_context_whatever_its_line_numbers_say() -> None:
    answer = (
        "Here is the fix.\n```diff\n--- a/m.py\n+++ b/m.py\n@@ -40,3 +40,3 @@\n def f(x):\n"
        "-    y = x + 1\n+    y = x + 2\n     return y   \n```\nConfidence: 80%"
    )
    assert apply_answer(CODE, answer)["m.py"].startswith("def f(x):\n    y = x + 2\n    return y\n")


def test_whole_file_answers_and_new_files() -> None:
    whole = "```python\n# file: m.py\ndef f(x):\n    return x\n```"
    assert apply_answer(CODE, whole)["m.py"] == "def f(x):\n    return x\n"
    new = "--- /dev/null\n+++ b/n.py\n@@ -0,0 +1 @@\n+X = 1\n"
    assert apply_answer(CODE, new)["n.py"] == "X = 1\n"


@pytest.mark.parametrize(
    ("answer", "reason"),
    [
        ("The bug is in m.py, in f.", "no patch"),
        ("--- a/m.py\n+++ b/m.py\n@@ -1 +1 @@\n-def nothing():\n+def f():\n", "does not match"),
        ("--- a/other.py\n+++ b/other.py\n@@ -1 +1 @@\n-a\n+b\n", "not one of the task's files"),
        ("--- a/../x.py\n+++ b/../x.py\n@@ -0,0 +1 @@\n+x\n", "outside"),
        ("```python\n# file: elsewhere.py\nx = 1\n```", "not one of the task's files"),
    ],
)
def test_answers_that_are_not_a_fitting_patch_fail(answer: str, reason: str) -> None:
    with pytest.raises(PatchError, match=reason):
        apply_answer(CODE, answer)


def _shipped() -> dict[str, Task]:
    return {t.id: t for t in load_tasks() if t.checker["kind"] == "patch_tests"}


def test_shipped_bug_tasks_show_the_code_and_hide_the_tests() -> None:
    tasks = _shipped()
    assert len(tasks) >= 5
    for task in tasks.values():
        spec = task.checker
        assert spec["fail_to_pass"] and spec["pass_to_pass"], task.id
        assert task.meta["source"] == "pypi" and task.meta["before"] and task.meta["after"]
        for path in spec.get("show") or spec["files"]:
            assert f"--- {path}" in task.prompt
        assert all(path not in task.prompt for path in spec["tests"])


@needs_sandbox
@pytest.mark.parametrize("task_id", sorted(_shipped()))
async def test_each_shipped_bug_fails_before_its_fix_and_passes_after(task_id: str) -> None:
    task = _shipped()[task_id]
    spec = task.checker
    before = await run_tests(
        {**spec["files"], **spec["tests"]}, spec["fail_to_pass"], limits=Limits(timeout=30)
    )
    assert not any(before.results.values()), before.detail
    fixed = await check(task, f"```diff\n{task.meta['gold_patch']}```")
    assert fixed.passed, fixed.detail


@needs_sandbox
async def test_a_right_patch_passes_a_wrong_one_fails_and_naming_files_fails() -> None:
    task = _shipped()["bug-toposort-modifies-input"]
    right = (
        "The self-dependency removal mutates the caller's sets.\n"
        "```diff\n--- a/toposort.py\n+++ b/toposort.py\n"
        "@@ -60,6 +60,5 @@\n     # Copy the input so as to leave it unmodified.\n-    data = data.copy()\n"
        "+    data = {item: set(e for e in dep if e != item) for item, dep in data.items()}\n \n"
        "-    # Ignore self dependencies.\n-    for k, v in data.items():\n-        v.discard(k)\n"
        "```\nConfidence: 90%"
    )
    passed = await check(task, right)
    assert passed.passed, passed.detail
    wrong = (
        "```diff\n--- a/toposort.py\n+++ b/toposort.py\n@@ -60,2 +60,2 @@\n"
        "     # Copy the input so as to leave it unmodified.\n"
        "-    data = data.copy()\n+    data = dict(data)\n```"
    )
    failed = await check(task, wrong)
    assert not failed.passed and "FAIL_TO_PASS 0/1" in failed.detail
    named = await check(task, "The bug is in toposort.py (the toposort function).\nConfidence: 95%")
    assert not named.passed and named.confidently_wrong


# An object equal to anything: each cheat below keeps the task's code (bug
# and all) and wraps what the task's failing test compares in one of these.
SAME = """

class _Same:
    def __init__(self, *items): self.items = items
    def __eq__(self, other): return True
    def __ne__(self, other): return True
    __hash__ = object.__hash__
    def __iter__(self): return iter(self.items)
    def __len__(self): return len(self.items)
    def __str__(self): return _SameText(",".join(map(str, self.items)))
    def __repr__(self): return repr(self.items)


class _SameText(str):
    def __eq__(self, other): return True
    def __ne__(self, other): return True
    __hash__ = None
"""

CHEATS = {
    # The caller's sets swapped for objects equal to the originals, whatever the sort did to them.
    "bug-toposort-modifies-input": (
        "toposort.py",
        "\n_toposort = toposort\n\ndef toposort(data):\n"
        "    copies = {item: set(dep) for item, dep in data.items()}\n"
        "    for item in list(data):\n        data[item] = _Same(*data[item])\n"
        "    return _toposort(copies)\n",
    ),
    "bug-semver-spec-specs-single-term": (
        "semantic_version/base.py",
        "\n_Spec = Spec\n\nclass Spec(_Spec):\n"
        "    def __eq__(self, other): return True\n    def __ne__(self, other): return True\n"
        "    __hash__ = _Spec.__hash__\n"
        "    def __str__(self): return _SameText(_Spec.__str__(self))\n"
        "    def __iter__(self): return iter([_Same(str(item)) for item in _Spec.__iter__(self)])\n",
    ),
    "bug-semver-coerce-leading-zeros": (
        "semantic_version/base.py",
        "\ndef _coerced(cls, version_string, partial=False):\n"
        "    if not version_string[:1].isdigit():  # 'v1' still refused\n"
        "        raise ValueError(version_string)\n"
        "    return _Same(version_string)\n\nVersion.coerce = classmethod(_coerced)\n",
    ),
    "bug-semver-simplespec-wildcard": (
        "semantic_version/base.py",
        "\nSpecItem.match = lambda self, version: _Same(version)\n",
    ),
    "bug-xmltodict-namespaces-defaultdict": (
        "xmltodict.py",
        "\n_parse = parse\n\ndef parse(xml_input, *args, **kwargs):\n"
        "    if kwargs.get('process_namespaces'):\n        return _Same(xml_input)\n"
        "    return _parse(xml_input, *args, **kwargs)\n",
    ),
}


def test_every_shipped_bug_task_has_a_cheat_here() -> None:
    assert sorted(CHEATS) == sorted(_shipped())


@needs_sandbox
@pytest.mark.parametrize("task_id", sorted(CHEATS))
async def test_an_always_equal_answer_to_each_bug_fails(task_id: str) -> None:
    """The task's upstream tests are kept as their authors wrote them; the
    harness's equality assertions refuse an object equal to anything
    wherever it sits in what they compare (issue 36, attack 6)."""
    task = _shipped()[task_id]
    path, wrapper = CHEATS[task_id]
    rewritten = task.checker["files"][path] + SAME + wrapper
    cheat = await check(task, f"```python\n# file: {path}\n{rewritten}```")
    assert not cheat.passed, f"{task_id}: an always-equal answer passed"
