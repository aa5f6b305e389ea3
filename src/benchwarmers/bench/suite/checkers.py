"""Checkers: does an answer pass its task, and did it claim certainty?

Models wrap answers in prose, markdown and hedges; a checker that demanded
the bare answer would grade formatting, not knowledge. So each checker
first finds the answer (`final_answer`: the text after the last "Answer:",
else the last non-empty line; code from the last fenced block; JSON from a
fenced block or the first parseable object), then compares.

Checker specs (the task file's `checker` object):

- ``exact``: ``expected`` (a string or a list of accepted strings),
  ``case_sensitive`` (false). Whitespace, markdown emphasis, quotes and a
  trailing full stop are ignored; a **bold** span counts as the answer too
  (models highlight their answer inside a sentence).
- ``regex``: ``pattern`` (searched in the whole answer), ``flags`` (any of
  "ims"), optional ``must_not`` (a pattern that fails the answer).
- ``json_schema``: ``schema`` (JSON Schema, validated with `jsonschema`).
- ``numeric``: ``expected`` (a number), ``tolerance`` (absolute, default
  1e-6) or ``relative`` (a share of the expected value).
- ``unit_tests``: ``tests`` (Python with `test_*` functions that import the
  answer's code as ``module``, default "solution"), ``timeout`` seconds
  (10), ``memory_mb`` (256); run by `sandbox.py`.
- ``patch_tests``: a real bug (see `patches.py`): the answer's patch is
  applied to the code before the fix and the task's FAIL_TO_PASS and
  PASS_TO_PASS tests run in the sandbox; it passes when all of them pass.

Confidence: the suite asks every answer to end with "Confidence: N%"; a
stated confidence of 80% or more, or a phrase like "definitely" or "I am
certain", is a claim of certainty. Wrong with it is "confidently wrong".
"""

from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass
from typing import Any

import jsonschema

from benchwarmers.bench.suite import sandbox
from benchwarmers.bench.suite.patches import PatchError, apply_answer
from benchwarmers.bench.suite.sandbox import Limits, run_tests, run_unit_tests
from benchwarmers.bench.suite.tasks import Task

CERTAIN_AT = 0.8
CONFIDENCE_LINE = re.compile(
    r"^\W*confidence\W*[:=]?\s*(\d+(?:\.\d+)?)\s*(%|/\s*10\b|/\s*100\b|percent)?\W*$", re.IGNORECASE
)
CERTAINTY_PHRASES = re.compile(
    r"\b(definitely|certainly|undoubtedly|without (?:a|any) doubt|guaranteed|"
    r"i am (?:absolutely |completely |totally |100% )?(?:sure|certain|confident)|"
    r"i'm (?:absolutely |completely |totally |100% )?(?:sure|certain|confident)|100% (?:sure|certain))\b",
    re.IGNORECASE,
)
ANSWER_MARKER = re.compile(r"(?:final answer|answer)\s*[:=]\s*(.+)", re.IGNORECASE)
FENCE = re.compile(r"```[ \t]*([\w+-]*)[^\n]*\n(.*?)```", re.DOTALL)
NUMBER = re.compile(r"-?\d[\d,]*(?:\.\d+)?(?:[eE][-+]?\d+)?|-?\.\d+")
BOLD = re.compile(r"\*\*([^*\n]+)\*\*")


@dataclass(frozen=True, slots=True)
class CheckResult:
    passed: bool
    detail: str = ""
    certain: bool = False

    @property
    def confidently_wrong(self) -> bool:
        return not self.passed and self.certain


RUNS_CODE = frozenset({"unit_tests", "patch_tests"})
NO_CODE = "it carries no code to patch (import its rows with --checkout and a clone of the repository)"


def cannot_run(task: Task) -> str | None:
    """Why this task cannot be checked here (code tasks need the sandbox,
    real-bug tasks their code), or None."""
    if task.checker["kind"] not in RUNS_CODE:
        return None
    if task.checker["kind"] == "patch_tests" and not task.checker.get("files"):
        return NO_CODE
    return sandbox.unavailable()


async def check(task: Task, answer: str) -> CheckResult:
    body, stated = split_confidence(answer)
    certain = (stated is not None and stated >= CERTAIN_AT) or bool(CERTAINTY_PHRASES.search(body))
    spec = task.checker
    kind = spec["kind"]
    if not body.strip():
        return CheckResult(False, "empty answer", certain)
    if kind == "unit_tests":
        passed, detail = await _unit_tests(spec, body)
    elif kind == "patch_tests":
        passed, detail = await _patch_tests(spec, body)
    else:
        passed, detail = CHECKS[kind](spec, body)
    return CheckResult(passed, detail, certain)


def split_confidence(answer: str) -> tuple[str, float | None]:
    """The answer without its "Confidence: N%" line, and that confidence (0..1)."""
    stated: float | None = None
    kept = []
    for line in answer.splitlines():
        match = CONFIDENCE_LINE.match(line.strip())
        if match:
            value = float(match.group(1))
            unit = (match.group(2) or "").replace(" ", "").lower()
            stated = value / 10 if unit == "/10" else value / 100 if unit or value > 1 else value
            continue
        kept.append(line)
    return "\n".join(kept).strip(), stated


def final_answer(body: str) -> str:
    markers = ANSWER_MARKER.findall(body)
    if markers:
        return _clean(markers[-1])
    lines = [line for line in body.splitlines() if line.strip()]
    return _clean(lines[-1]) if lines else ""


def _clean(text: str) -> str:
    text = re.sub(r"[*_`]+", "", text).strip()
    text = text.strip("\"'“”‘’ ")
    return text.rstrip(".").strip()


def _exact(spec: dict[str, Any], body: str) -> tuple[bool, str]:
    expected = spec.get("expected")
    accepted = [expected] if isinstance(expected, str) else list(expected or [])
    fold = (lambda s: s) if spec.get("case_sensitive") else str.casefold
    said = {fold(_clean(body)), fold(final_answer(body))} | {fold(_clean(b)) for b in BOLD.findall(body)}
    for option in accepted:
        if fold(_clean(str(option))) in said:
            return True, f"matched {option!r}"
    return False, f"expected {' or '.join(map(repr, accepted))}, got {final_answer(body)[:80]!r}"


def _regex(spec: dict[str, Any], body: str) -> tuple[bool, str]:
    flags = 0
    for letter in spec.get("flags", ""):
        flags |= {"i": re.IGNORECASE, "m": re.MULTILINE, "s": re.DOTALL}[letter]
    if spec.get("must_not") and re.search(spec["must_not"], body, flags):
        return False, f"matched the forbidden pattern {spec['must_not']!r}"
    if re.search(spec["pattern"], body, flags):
        return True, "pattern found"
    return False, f"pattern {spec['pattern']!r} not found"


def _json_schema(spec: dict[str, Any], body: str) -> tuple[bool, str]:
    value = extract_json(body)
    if value is None:
        return False, "no JSON found in the answer"
    try:
        jsonschema.validate(value, spec["schema"])
    except jsonschema.ValidationError as exc:
        return False, f"JSON does not fit the schema: {exc.message}"
    return True, "JSON fits the schema"


def extract_json(body: str) -> Any | None:
    """The first JSON value in a fenced block, else the first `{` or `[`
    from which a whole value parses."""
    candidates = [block for _lang, block in FENCE.findall(body)] + [body]
    decoder = json.JSONDecoder()
    for text in candidates:
        for i, char in enumerate(text):
            if char in "{[":
                try:
                    return decoder.raw_decode(text[i:])[0]
                except json.JSONDecodeError:
                    continue
    return None


def _numeric(spec: dict[str, Any], body: str) -> tuple[bool, str]:
    expected = float(spec["expected"])
    numbers = NUMBER.findall(final_answer(body)) or NUMBER.findall(body)
    if not numbers:
        return False, "no number in the answer"
    got = float(numbers[-1].replace(",", ""))
    allowed = (
        abs(expected) * float(spec["relative"]) if "relative" in spec else float(spec.get("tolerance", 1e-6))
    )
    if math.isclose(got, expected, abs_tol=allowed):
        return True, f"{got:g} within {allowed:g} of {expected:g}"
    return False, f"{got:g} is not within {allowed:g} of {expected:g}"


def extract_code(body: str) -> str:
    """The last fenced Python block (or any fenced block), else the whole answer."""
    blocks = FENCE.findall(body)
    python = [code for lang, code in blocks if lang.lower() in ("python", "py", "python3")]
    if python:
        return str(python[-1])
    if blocks:
        return str(blocks[-1][1])
    return body


async def _unit_tests(spec: dict[str, Any], body: str) -> tuple[bool, str]:
    outcome = await run_unit_tests(
        extract_code(body),
        spec["tests"],
        module=spec.get("module", "solution"),
        timeout=float(spec.get("timeout", 10)),
        memory_mb=int(spec.get("memory_mb", 256)),
    )
    return outcome.passed, outcome.detail


async def _patch_tests(spec: dict[str, Any], body: str) -> tuple[bool, str]:
    try:
        patched = apply_answer(spec["files"], body)
    except PatchError as exc:
        return False, str(exc)
    fail_to_pass, pass_to_pass = list(spec.get("fail_to_pass", [])), list(spec.get("pass_to_pass", []))
    limits = Limits(timeout=float(spec.get("timeout", 20)), memory_mb=int(spec.get("memory_mb", 256)))
    outcome = await run_tests({**patched, **spec["tests"]}, fail_to_pass + pass_to_pass, limits=limits)
    fixed = sum(outcome.results.get(t, False) for t in fail_to_pass)
    kept = sum(outcome.results.get(t, False) for t in pass_to_pass)
    counts = f"FAIL_TO_PASS {fixed}/{len(fail_to_pass)}, PASS_TO_PASS {kept}/{len(pass_to_pass)}"
    return outcome.passed, counts + ("" if outcome.passed else f": {outcome.detail}")


CHECKS = {
    "exact": _exact,
    "regex": _regex,
    "json_schema": _json_schema,
    "numeric": _numeric,
}
