"""A reasoning model's leading think block, told apart from its answer.

Local models such as DeepSeek-R1 and QwQ (through Ollama), and several
OpenAI-compatible free tiers, write their reasoning into the answer's text
as a leading `<think>…</think>` block (some `<thinking>…</thinking>`; some
leave the opening tag to the chat template and start straight into the
reasoning, ending it with `</think>`). Reasoning sent in its own field
(`reasoning_content`, Mistral's thinking parts, Gemini's thought parts,
Anthropic's thinking blocks) never reaches the text: the adapters drop it.

What a person reads (the dashboard, `benchwarmers ask`) and what the merger
and a judge model read is the answer after the block; the panel's API
replies carry the text as the model wrote it (docs/formats.md, "A think
block in the answer"). The rules, the same as the dashboard's (`static/markdown.js`,
`bw.reasoning`), on purpose one reading:

- The block leads: only whitespace before `<think>` or `<thinking>` (any
  case). It ends at the first closing tag of its name; the answer is what
  follows, its leading whitespace dropped. Never closed (a reply cut while
  it reasoned), all of it is reasoning and the answer is empty.
- With no opening tag, a `</think>` (or `</thinking>`) with no opening tag
  anywhere before it and no backtick just before it (an answer that
  *quotes* the tag, `` `</think>` ``, is text) ends a reasoning that began
  with the text.
- A `<think>` anywhere else is the answer's own text.
"""

from __future__ import annotations

import re
from typing import NamedTuple

# The opening tag, leading the text (after whitespace, a BOM among it).
_OPENING = re.compile(r"[\s\ufeff]*<(think|thinking)>", re.IGNORECASE)
# A closing tag with no opening one before it: the first of either name.
_CLOSING = re.compile(r"</(think|thinking)>", re.IGNORECASE)
_ANY_OPENING = re.compile(r"<(?:think|thinking)>", re.IGNORECASE)


class Split(NamedTuple):
    """A text read as reasoning and answer. `reasoning` is None when the
    text has no think block (then `answer` is the text as it is); `closed`
    says whether the block ended (False: the text stopped inside it)."""

    reasoning: str | None
    answer: str
    closed: bool = True


def split(text: str) -> Split:
    """`text` as its leading think block's reasoning and the answer after it."""
    opening = _OPENING.match(text)
    if opening is not None:
        closing = re.compile(f"</{opening.group(1)}>", re.IGNORECASE).search(text, opening.end())
        if closing is None:
            return Split(text[opening.end() :].strip(), "", closed=False)
        return Split(text[opening.end() : closing.start()].strip(), text[closing.end() :].lstrip())
    closing = _CLOSING.search(text)
    if closing is None:
        return Split(None, text)
    before = text[: closing.start()]
    if before.endswith("`") or _ANY_OPENING.search(before):
        return Split(None, text)
    return Split(before.strip(), text[closing.end() :].lstrip())


def answer_of(text: str) -> str:
    """The answer without its leading think block (the text itself when it has none)."""
    return split(text).answer
