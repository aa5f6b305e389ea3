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
# regex, once (tests/panel/test_shapes.py keeps it as the reference): the
# line starts are read a line at a time here, and the line ends by a regex
# of their own, which sre skips through to each brace or semicolon.
_LINE_STARTS = (
    "def ",
    "class ",
    "import ",
    "function ",
    "const ",
    "let ",
    "var ",
    "#include",
    "package ",
    "fn ",
    "pub fn ",
    "public ",
    "private ",
    "SELECT ",
    "$ ",
    ">>> ",
)
_FROM_IMPORT = re.compile(r"from \S+ import ")
_LINE_END = re.compile(r"[{};]\s*$", re.MULTILINE)
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
    turn (77 KB at 60 turns): as three regexes over the text it cost 6 ms a
    turn at that size, twenty times the rest of a route turn's CPU
    (docs/benchmarks.md); read as below it costs a tenth of that, with the
    same answer on every text (the regexes are kept as the test's reference)."""
    if _FENCE in text:
        return True
    return _code_lines(text) >= 2 or _code_words(text)


def _code_lines(text: str) -> int:
    """How many code lines, counted up to two: those ending in a brace or a
    semicolon, then those beginning (after blanks) with a definition, an
    import or a prompt. No match of one kind holds one of the other (the
    starts hold a brace only inside `from X import`, never at a line's end),
    so counted apart they add up to the one regex's count."""
    found = 0
    for _end in _LINE_END.finditer(text):
        found += 1
        if found >= 2:
            return found
    for line in text.split("\n"):
        start = line.lstrip()
        if start.startswith(_LINE_STARTS) or (start.startswith("from ") and _FROM_IMPORT.match(start)):
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
