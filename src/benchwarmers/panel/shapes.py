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

_FENCE = re.compile(r"```")
# Lines that look like source: definitions, imports, braces ending a line,
# statements ending in semicolons, shell prompts.
_CODE_LINE = re.compile(
    r"^\s*(def |class |import |from \S+ import |function |const |let |var |#include|package |fn |pub fn |"
    r"public |private |SELECT |\$ |>>> )|[{};]\s*$",
    re.MULTILINE,
)
_CODE_WORDS = re.compile(
    r"\b(stack ?trace|traceback|segfault|compile error|refactor|unit test|regex|function|bug in)\b", re.I
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
    if _FENCE.search(text):
        return True
    if len(_CODE_LINE.findall(text)) >= 2:
        return True
    return bool(_CODE_WORDS.search(text))
