"""A request's shape: whether it reads as code is the same answer as the
three regexes it was read with over its messages joined, now read a message
at a time and faster (`shapes._reads_as_code`), with long messages' readings
kept, on texts made to catch where they could part."""

from __future__ import annotations

import random
import re

import pytest

from benchwarmers.panel import shapes
from benchwarmers.types import Request, user

pytestmark = pytest.mark.unit

# The reference: how a request was read as code before (main at 411d843).
FENCE = re.compile(r"```")
CODE_LINE = re.compile(
    r"^\s*(def |class |import |from \S+ import |function |const |let |var |#include|package |fn |pub fn |"
    r"public |private |SELECT |\$ |>>> )|[{};]\s*$",
    re.MULTILINE,
)
CODE_WORDS = re.compile(
    r"\b(stack ?trace|traceback|segfault|compile error|refactor|unit test|regex|function|bug in)\b", re.I
)

# Pieces that sit at the edges of the rules: every line start and word the
# rules name (in several cases, and inside longer words), braces and
# semicolons with trailing blanks, blanks of every kind (Unicode's too, and
# a CR that is not a line break), `from X import` with a brace in X, and
# letters that match ASCII only when case is ignored (the long s, the
# Kelvin sign, dotted and dotless i).
PIECES = [
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
    "pub  fn ",
    "from\ta import ",
    "from a import ",
    "from a;b import ",
    "from  a import ",
    "from a{ import",
    "stack trace",
    "stacktrace",
    "StackTrace",
    "traceback",
    "segfault",
    "compile error",
    "COMPILE ERROR",
    "refactor",
    "unit test",
    "regex",
    "Function",
    "functions",
    "_function",
    "function_",
    "bug in",
    "bug inside",
    "ſegfault",
    "\u212aegex",
    "unİt test",
    "unıt test",
    "{",
    "}",
    ";",
    "x",
    "word",
    "the",
    "def",
    ">>>",
    "$",
    "#",
    " ",
    "  ",
    "\t",
    "\n",
    "\n\n",
    "\r",
    "\r\n",
    "\x0b",
    "\x1c",
    "\u00a0",
    "\u2003",
    "é",
    "-",
    "_",
    "1",
]


def reference(text: str) -> bool:
    return bool(FENCE.search(text)) or len(CODE_LINE.findall(text)) >= 2 or bool(CODE_WORDS.search(text))


def test_the_answer_is_the_regexes_answer_on_random_texts() -> None:
    rng = random.Random(37)
    codes = 0
    for _ in range(20_000):
        text = "".join(rng.choice(PIECES) for _ in range(rng.randint(0, 12)))
        expected = reference(text)
        codes += expected
        assert shapes._reads_as_code([text]) == expected, repr(text)
        assert min(shapes._code_lines(text), 2) == min(len(CODE_LINE.findall(text)), 2), repr(text)
        assert shapes._code_words(text) == bool(CODE_WORDS.search(text)), repr(text)
    assert 2_000 < codes < 18_000  # both answers were asked often


@pytest.mark.parametrize(
    "words",
    [
        "stack trace",
        "stacktrace",
        "traceback",
        "segfault",
        "compile error",
        "refactor",
        "unit test",
        "regex",
        "function",
        "bug in",
    ],
)
def test_every_word_about_code_is_looked_for(words: str) -> None:
    """Each of `_CODE_WORD_PARTS`, as `_code_words` writes them out, finds its words."""
    for text in (f"a {words} here", f"A {words.upper()} HERE"):
        assert shapes._code_words(text) and bool(CODE_WORDS.search(text)), text
    assert any(part in words for part in shapes._CODE_WORD_PARTS)


@pytest.mark.parametrize(
    ("text", "code"),
    [
        ("what is the capital of France?", False),
        ("fix this:\n```py\nprint(1\n```", True),
        ("x = 1;\ny = 2;", True),  # two line ends
        ("int main() {", False),  # one
        ("function f() {", True),  # a line's start and its end: two
        ("from a;b import c", False),  # one start; its semicolon does not end the line
        ("a;\n  \n  def f", True),  # a line end whose blanks run into the next start
        ("tell me a story about a Function", True),
        ("the functions of the liver", False),
        ("a ſegfault", True),  # the long s is an s when case is ignored, in any text
        ("a \u212aegex", False),
    ],
)
def test_the_cases_at_the_edges(text: str, code: bool) -> None:
    assert reference(text) == code
    assert shapes._reads_as_code([text]) == code


def test_messages_read_one_at_a_time_answer_as_their_joined_text() -> None:
    rng = random.Random(38)
    for _ in range(10_000):
        count = rng.randint(1, 4)
        texts = ["".join(rng.choice(PIECES) for _ in range(rng.randint(0, 6))) for _ in range(count)]
        assert shapes._reads_as_code(texts) == reference("\n".join(texts)), repr(texts)


def test_a_long_message_read_again_is_found_and_the_kept_stay_within_their_bound(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    kept = shapes._Read(4 * shapes.KEEP_FROM)
    monkeypatch.setattr(shapes, "_kept", kept)
    prose = "words and words\n" * (shapes.KEEP_FROM // 8)
    code = "x = 1;\n" * (shapes.KEEP_FROM // 4)
    assert not shapes._reads_as_code([prose])
    assert shapes._reads_as_code([prose, code])
    assert set(kept._kept) == {prose, code}
    read: list[str] = []
    monkeypatch.setattr(shapes, "_read", lambda text: read.append(text) or shapes._Reading(False, 0, False))
    assert shapes._reads_as_code([prose, code])  # both found, neither read again
    assert read == []
    other = "more words\n" * (shapes.KEEP_FROM // 5)
    shapes._reads_as_code([other])
    assert read == [other]
    assert prose not in kept._kept  # the oldest let go
    assert kept._held == sum(map(len, kept._kept)) <= 4 * shapes.KEEP_FROM


def test_a_long_prose_conversation_is_short_work_and_not_code() -> None:
    rng = random.Random(1)
    words = [
        "the",
        "quick",
        "brown",
        "fox",
        "jumps",
        "over",
        "a",
        "lazy",
        "dog",
        "and",
        "writes",
        "prose",
        "about",
        "nothing",
        "much",
    ]
    text = "\n".join(" ".join(rng.choice(words) for _ in range(15)) for _ in range(900))
    assert not reference(text)
    assert shapes.shape_of(Request((user(text),))) == "long"
