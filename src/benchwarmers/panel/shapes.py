"""The shape of a request: the kind of question it is, derived from the
request alone.

Records are kept per collection and shape because a model that is the best
seat for a quick factual question is often not the one for a long document
or a code review; a shape is the coarse bucket that lets verdicts say so
without asking the client to label anything. Precedence is fixed, most
specific first: an image makes it `vision`, code makes it `code`, a long
prompt makes it `long`, anything else is `short`.
"""

from __future__ import annotations

import re
from typing import Literal, TypeAlias

from benchwarmers.calls.tokens import prompt_tokens
from benchwarmers.types import Request

Shape: TypeAlias = Literal["short", "long", "code", "vision"]
SHAPES: tuple[Shape, ...] = ("short", "long", "code", "vision")

# Prompts above this many tokens read as documents, not questions.
LONG_PROMPT_TOKENS = 2000

_FENCE = "```"
# Lines that look like source: definitions, imports, braces ending a line,
# statements ending in semicolons, shell prompts. Two of them make a request
# code. Read as `^\s*(def |class |...)|[{};]\s*$` over the whole text, one
# regex (tests/panel/test_shapes.py keeps it as the reference), sre tried
# both at every character, 50 instructions a character; apart, a line's
# start is found from the newline before it (the text is read with one put
# before it), which sre skips through to, and a line's end from its brace
# or semicolon, which `str.find` does (`memchr`).
_LINE_START = re.compile(
    r"\n\s*(?:def |class |import |from \S+ import |function |const |let |var |#include|package |fn |"
    r"pub fn |public |private |SELECT |\$ |>>> )"
)
_LINE_END_MARKS = "{};"
# Only blanks from here to the line's end (or the text's): `[{};]\s*$`'s tail.
_BLANK_TO_LINE_END = re.compile(r"\s*$", re.MULTILINE)
_CODE_WORDS = re.compile(
    r"\b(stack ?trace|traceback|segfault|compile error|refactor|unit test|regex|function|bug in)\b", re.I
)
# What any match of `_CODE_WORDS` holds, lower-cased: in ASCII text, where
# ignoring case is lower-casing, a text holding none of them has no match.
_CODE_WORD_PARTS = (
    "trace",
    "segfault",
    "compile error",
    "refactor",
    "unit test",
    "regex",
    "function",
    "bug in",
)


def shape_of(request: Request) -> Shape:
    if request.has_images:
        return "vision"
    text = "\n".join(m.text for m in request.messages)
    if _looks_like_code(text):
        return "code"
    if prompt_tokens(request) > LONG_PROMPT_TOKENS:
        return "long"
    return "short"


def _looks_like_code(text: str) -> bool:
    """A fence, two lines that look like source, or words about code. Every
    ask reads it over its whole conversation, which an agent resends each
    turn (77 KB at 60 turns): as three regexes over the text that was 62M
    instructions a turn (4 ms; the rest of a route turn is 1.5M), read as
    below 2.8M, with the same answer on every text (the regexes are the
    test's reference; docs/benchmarks.md)."""
    if _FENCE in text:
        return True
    return _code_lines(text) >= 2 or _code_words(text)


def _code_lines(text: str) -> int:
    """How many code lines, counted up to two: those ending in a brace or a
    semicolon (each such mark followed by nothing but blanks to its line's
    end is one), then those beginning (after blanks) with a definition, an
    import or a prompt. No match of one kind holds one of the other (a
    start holds a brace only inside `from X import`, never at a line's
    end), so counted apart they add up to the one regex's count."""
    found = 0
    for mark in _LINE_END_MARKS:
        at = text.find(mark)
        while at >= 0:
            if _BLANK_TO_LINE_END.match(text, at + 1):
                found += 1
                if found >= 2:
                    return found
            at = text.find(mark, at + 1)
    for _match in _LINE_START.finditer("\n" + text):
        found += 1
        if found >= 2:
            return found
    return found


def _code_words(text: str) -> bool:
    """`_CODE_WORDS` found in `text`; in ASCII text none is looked for
    unless one of its words is there as a substring (`in`, in C)."""
    if text.isascii():
        lower = text.lower()
        if not any(part in lower for part in _CODE_WORD_PARTS):
            return False
    return _CODE_WORDS.search(text) is not None
