"""Real-bug tasks: the code before the fix, the model's patch, the tests after.

A `patch_tests` task carries, in its checker:

- ``files``: path -> text of the code before the fix (everything the tests
  need to import); ``show`` (optional, default all of ``files``): the paths
  the prompt shows the model, the files the real fix touched;
- ``tests``: path -> text of the test files after the fix, never shown;
- ``fail_to_pass`` and ``pass_to_pass``: test ids (SWE-rebench's names,
  pytest-style `path.py::Class::test`) that must pass after the patch: the
  first failed before the fix, the second passed and must keep passing;
- ``timeout`` (20 s), ``memory_mb`` (256).

The answer is a unified diff (`--- a/path`, `+++ b/path`, `@@` hunks).
Models get line numbers and hunk counts wrong, so a hunk is placed by its
context and removed lines, nearest to the line it names; a hunk that
matches nowhere fails the answer with the reason. A whole file in a fenced
block whose first line is ``# file: <path>`` replaces that file instead
(for models that rewrite rather than diff). An answer that only names the
files, or whose patch touches none, fails before any test runs.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

PATH_HEADER = re.compile(r"^(---|\+\+\+) (?:[ab]/)?(\S+)")
HUNK_HEADER = re.compile(r"^@@ -(\d+)(?:,\d+)? \+\d+(?:,\d+)? @@")
WHOLE_FILE = re.compile(r"```[^\n]*\n#\s*file:\s*(\S+)[ \t]*\n(.*?)```", re.DOTALL)
DEV_NULL = "/dev/null"


class PatchError(ValueError):
    """The answer's patch cannot be applied; the message says where."""


@dataclass(frozen=True, slots=True)
class Hunk:
    start: int  # 1-based line the diff says it begins at (a hint only)
    lines: tuple[tuple[str, str], ...]  # (" " context | "-" removed | "+" added, text)

    @property
    def old(self) -> tuple[str, ...]:
        return tuple(text for tag, text in self.lines if tag != "+")


def prompt_for(task_prompt: str, checker: Mapping[str, Any]) -> str:
    """The issue, then the files the fix touches, then how to answer."""
    files: Mapping[str, str] = checker.get("files") or {}
    shown = checker.get("show") or list(files)
    parts = [task_prompt.strip(), "", "The code (before the fix):"]
    for path in shown:
        parts += ["", f"--- {path}", "```python", files.get(path, "").rstrip("\n"), "```"]
    parts += [
        "",
        "Fix the bug. Answer with a unified diff against these files "
        "(`--- a/<path>`, `+++ b/<path>`, `@@` hunks with a few lines of context). "
        "Hidden tests run against your patched code.",
    ]
    return "\n".join(parts)


def apply_answer(files: Mapping[str, str], answer: str) -> dict[str, str]:
    """The files after the answer's patch (or whole-file rewrites); raises
    PatchError when there is nothing to apply or a hunk does not fit."""
    changed = dict(files)
    diffs = parse_diff(answer)
    for path, hunks in diffs.items():
        _inside(path)
        if path not in changed and any(h.old for h in hunks):
            raise PatchError(f"the patch changes {path}, which is not one of the task's files")
        changed[path] = apply_hunks(changed.get(path, ""), hunks, path)
    if not diffs:
        for path, text in WHOLE_FILE.findall(answer):
            _inside(path)
            if path not in files:
                raise PatchError(f"the answer rewrites {path}, which is not one of the task's files")
            changed[path] = text
    if changed == dict(files):
        raise PatchError("the answer has no patch that changes the code (a unified diff is expected)")
    return changed


def parse_diff(text: str) -> dict[str, list[Hunk]]:
    """Hunks per file from a unified diff, possibly inside fenced blocks and prose."""
    out: dict[str, list[Hunk]] = {}
    lines = text.replace("\r\n", "\n").split("\n")
    path: str | None = None
    i = 0
    while i < len(lines):
        line = lines[i]
        header = PATH_HEADER.match(line)
        if header and header.group(1) == "+++":
            target = header.group(2)
            if target == DEV_NULL:
                previous = PATH_HEADER.match(lines[i - 1]) if i else None
                target = previous.group(2) if previous else target
            path = target
            out.setdefault(path, [])
            i += 1
            continue
        hunk = HUNK_HEADER.match(line)
        if hunk and path is not None:
            body: list[tuple[str, str]] = []
            i += 1
            while i < len(lines) and not _ends_hunk(lines[i]):
                text = lines[i]
                if not text.startswith("\\"):  # "\ No newline at end of file"
                    tag = text[:1] if text[:1] in ("-", "+") else " "
                    body.append((tag, text[1:] if text[:1] in ("-", "+", " ") else text))
                i += 1
            while body and body[-1] == (" ", ""):  # blank lines a fence or prose left
                body.pop()
            out[path].append(Hunk(int(hunk.group(1)), tuple(body)))
            continue
        i += 1
    return {p: h for p, h in out.items() if h}


def _ends_hunk(line: str) -> bool:
    return (
        line.startswith(("@@", "```", "diff --git", "--- ", "+++ ", "Index: "))
        or PATH_HEADER.match(line) is not None
    )


def apply_hunks(text: str, hunks: list[Hunk], path: str) -> str:
    lines = text.split("\n")
    trailing = text.endswith("\n")
    if trailing:
        lines.pop()
    offset = 0
    for number, hunk in enumerate(hunks, 1):
        old = hunk.old
        at = _find(lines, old, hunk.start - 1 + offset)
        if at is None:
            raise PatchError(f"hunk {number} of {path} does not match the code")
        cursor, made = at, []
        for tag, text in hunk.lines:
            if tag == "+":
                made.append(text)
            else:
                if tag == " ":
                    made.append(lines[cursor])  # the file's own line, whitespace and all
                cursor += 1
        lines[at : at + len(old)] = made
        offset += len(made) - len(old)
    return "\n".join(lines) + ("\n" if trailing or not text else "")


def _exactly(a: str, b: str) -> bool:
    return a == b


def _loosely(a: str, b: str) -> bool:
    return a.rstrip() == b.rstrip()


def _find(lines: list[str], old: tuple[str, ...], hint: int) -> int | None:
    """Where `old` occurs, the nearest to `hint`; exact first, then ignoring
    trailing whitespace (models drop it)."""
    if not old:
        return min(max(hint, 0), len(lines))
    for same in (_exactly, _loosely):
        starts = [
            s
            for s in range(len(lines) - len(old) + 1)
            if all(same(lines[s + k], old[k]) for k in range(len(old)))
        ]
        if starts:
            return min(starts, key=lambda s: abs(s - hint))
    return None


def _inside(path: str) -> None:
    if path.startswith("/") or ".." in path.split("/"):
        raise PatchError(f"the patch names a path outside the task's folder: {path}")
