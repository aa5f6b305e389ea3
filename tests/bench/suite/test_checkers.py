"""Each checker passes right answers and fails wrong ones, the way a model
actually writes them (prose, markdown, a confidence line)."""

from __future__ import annotations

from pathlib import Path

import pytest

from benchwarmers.bench.suite import sandbox
from benchwarmers.bench.suite.checkers import check, extract_code, split_confidence
from benchwarmers.bench.suite.tasks import Task

pytestmark = pytest.mark.unit
# Unit-test tasks run the model's code in the sandbox, which needs bubblewrap.
needs_sandbox = pytest.mark.skipif(sandbox.unavailable() is not None, reason=str(sandbox.unavailable()))


def task(kind: str, **spec: object) -> Task:
    return Task("t", "general", "short", "prompt", {"kind": kind, **spec}, image=None)


async def test_exact_reads_the_final_answer_through_markdown_and_confidence() -> None:
    t = task("exact", expected="Canberra")
    assert (await check(t, "The capital is not Sydney.\n\n**Canberra.**\nConfidence: 90%")).passed
    assert (await check(t, "Answer: canberra")).passed
    wrong = await check(t, "Sydney\nConfidence: 95%")
    assert not wrong.passed and wrong.confidently_wrong
    assert "expected 'Canberra'" in wrong.detail


async def test_exact_case_sensitive_and_alternatives() -> None:
    assert not (await check(task("exact", expected="OK", case_sensitive=True), "ok")).passed
    assert (await check(task("exact", expected="OK", case_sensitive=True), "OK")).passed
    assert (await check(task("exact", expected=["cold", "cool"]), "Cool.")).passed


async def test_regex_and_forbidden_pattern() -> None:
    t = task("regex", pattern=r"apple,\s*fig,\s*pear", flags="i", must_not="banana")
    assert (await check(t, "Sorted: Apple, fig, pear")).passed
    assert not (await check(t, "pear, fig, apple")).passed
    assert not (await check(t, "apple, fig, pear, banana")).passed


async def test_json_schema_finds_json_in_a_fence_and_validates() -> None:
    schema = {"type": "object", "required": ["age"], "properties": {"age": {"type": "integer"}}}
    t = task("json_schema", schema=schema)
    assert (await check(t, 'Here you go:\n```json\n{"age": 30}\n```')).passed
    assert (await check(t, 'The object is {"age": 7} as asked.')).passed
    bad = await check(t, '{"age": "thirty"}')
    assert not bad.passed and "schema" in bad.detail
    assert not (await check(t, "I cannot do that.")).passed


async def test_numeric_tolerance_absolute_and_relative() -> None:
    assert (await check(task("numeric", expected=80, tolerance=0.01), "So 120/1.5 = 80.\nAnswer: 80")).passed
    assert (await check(task("numeric", expected=1250), "Answer: 1,250")).passed
    assert not (await check(task("numeric", expected=80), "Answer: 81")).passed
    assert (await check(task("numeric", expected=8.04672, relative=0.01), "about 8.05 km")).passed
    assert not (await check(task("numeric", expected=8.04672, relative=0.001), "about 8.1 km")).passed
    assert not (await check(task("numeric", expected=3), "three")).passed


async def test_confidence_and_certainty_phrases() -> None:
    assert split_confidence("42\nConfidence: 85%") == ("42", pytest.approx(0.85))
    assert split_confidence("42\n**Confidence:** 7/10")[1] == pytest.approx(0.7)
    t = task("exact", expected="4")
    assert (await check(t, "I am absolutely certain it is 5")).confidently_wrong
    assert not (await check(t, "Maybe 5?\nConfidence: 40%")).confidently_wrong
    assert not (await check(t, "4\nConfidence: 100%")).confidently_wrong  # right, so not confidently wrong


TESTS = (
    "from solution import add\n\n"
    "def test_add():\n    assert add(2, 3) == 5\n\n"
    "def test_neg():\n    assert add(-1, 1) == 0\n"
)


@needs_sandbox
async def test_unit_tests_pass_and_fail() -> None:
    t = task("unit_tests", tests=TESTS)
    right = await check(t, "Here:\n```python\ndef add(a, b):\n    return a + b\n```\nConfidence: 99%")
    assert right.passed, right.detail
    wrong = await check(t, "```python\ndef add(a, b):\n    return a - b\n```\nConfidence: 99%")
    assert not wrong.passed and wrong.confidently_wrong
    assert "2 tests failed" in wrong.detail or "of 2 tests failed" in wrong.detail
    broken = await check(t, "```python\ndef add(a, b) return\n```")
    assert not broken.passed and "SyntaxError" in broken.detail


@needs_sandbox
async def test_unit_tests_time_out() -> None:
    t = task("unit_tests", tests=TESTS, timeout=1)
    looping = await check(t, "```python\ndef add(a, b):\n    while True:\n        pass\n```")
    assert not looping.passed and "timed out" in looping.detail


@needs_sandbox
async def test_unit_tests_over_memory() -> None:
    t = task("unit_tests", tests=TESTS, memory_mb=128)
    hog = await check(
        t, "```python\ndef add(a, b):\n    block = bytearray(600 * 1024 * 1024)\n    return a + b\n```"
    )
    assert not hog.passed and "memory limit" in hog.detail


@needs_sandbox
async def test_unit_tests_see_no_keys_and_run_in_their_folder(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("BENCHWARMERS_KEY_SECRET", "sk-should-not-leak")
    probe = (
        "import os, pathlib\n\ndef add(a, b):\n"
        "    assert not any(k.startswith('BENCHWARMERS') for k in os.environ)\n"
        "    assert str(pathlib.Path.cwd()) == '/work'\n"
        "    return a + b\n"
    )
    outcome = await check(task("unit_tests", tests=TESTS), f"```python\n{probe}```")
    assert outcome.passed, outcome.detail


def test_extract_code_prefers_the_last_python_block() -> None:
    answer = "First try:\n```python\nx = 1\n```\nBetter:\n```python\nx = 2\n```\n```text\nnot code\n```"
    assert extract_code(answer).strip() == "x = 2"
    assert extract_code("def f(): pass").strip() == "def f(): pass"
