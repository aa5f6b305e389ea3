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
import threading
from typing import Literal, NamedTuple, TypeAlias

from benchwarmers.calls.tokens import prompt_tokens
from benchwarmers.config import tunables
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
    if _reads_as_code([m.text for m in request.messages]):
        return "code"
    if prompt_tokens(request) > LONG_PROMPT_TOKENS:
        return "long"
    return "short"


def _reads_as_code(texts: list[str]) -> bool:
    """Whether the messages, joined by newlines, hold a fence, two lines
    that look like source, or words about code. Every ask reads its whole
    conversation, which an agent resends each turn (77 KB at 60 turns): as
    three regexes over the joined text that was 62M instructions a turn
    (4 ms; the rest of a route turn is 1.5M); read as below, 4.4M the first
    time and 0.25M a turn that resends it, with the same answer on every
    text (the regexes are the test's reference; docs/benchmarks.md).

    Read a message at a time: a fence, a code line and a word about code
    each lie within one line, and a newline ends a message's last line as
    the text's end does, so the joined text's answer is any message's
    fence or words, or two code lines among them all. A long message's
    reading is kept (`_Read`), so a turn reads only what is new."""
    lines = 0
    for text in texts:
        found = _read(text) if len(text) < KEEP_FROM else _kept.read(text)
        if found.fence or found.words:
            return True
        lines += found.lines
        if lines >= 2:
            return True
    return False


class _Reading(NamedTuple):
    """What one message holds of the three signs of code."""

    fence: bool
    lines: int  # up to two
    words: bool


def _read(text: str) -> _Reading:
    """One message read, as far as its own answer needs."""
    if _FENCE in text:
        return _Reading(True, 0, False)
    lines = _code_lines(text)
    if lines >= 2:
        return _Reading(False, lines, False)
    return _Reading(False, lines, _code_words(text))


# Messages shorter than this are read again (a one-line ask's): finding one costs about as much.
KEEP_FROM = 256
READ_CHARACTERS = tunables.SHAPE_READ_CHARACTERS.value


class _Read:
    """Long messages' readings, kept by their text up to `READ_CHARACTERS`
    characters of it, the oldest let go first. Looking one up hashes and
    compares the text (in C), a tenth of reading it."""

    def __init__(self, characters: int) -> None:
        self.characters = characters
        self._kept: dict[str, _Reading] = {}
        self._held = 0
        self._lock = threading.Lock()  # a shape is read on the server's loop, and in the CLI's threads

    def read(self, text: str) -> _Reading:
        found = self._kept.get(text)
        if found is not None:
            return found
        found = _read(text)
        with self._lock:
            if text not in self._kept:
                self._kept[text] = found
                self._held += len(text)
                while self._held > self.characters and self._kept:
                    oldest = next(iter(self._kept))
                    self._held -= len(oldest)
                    del self._kept[oldest]
        return found


_kept = _Read(READ_CHARACTERS)


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
        # `_CODE_WORD_PARTS` written out: a generator over them was 68 bytecodes an ask.
        if not (
            "trace" in lower
            or "segfault" in lower
            or "compile error" in lower
            or "refactor" in lower
            or "unit test" in lower
            or "regex" in lower
            or "function" in lower
            or "bug in" in lower
        ):
            return False
    return _CODE_WORDS.search(text) is not None
