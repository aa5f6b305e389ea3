"""Merged replies: one model reads the panel's answers and writes one
answer that says where they agreed and disagreed.

Three choices make the merge worth trusting more than a plain
"summarise these" (llm-council, OpenRouter Fusion):

* the merger sees the answers as Seat A, B, C in a shuffled order, never
  the models' names or the panel's order, so it cannot favour a famous name
  or the first answer;
* a candidate that did not sit on this panel merges before one that did,
  so the merger does not judge its own answer where another can;
* its answer is plain text that streams as it is written; the structured
  report on the answers (consensus, contradictions with the seats on each
  side, points only one seat made, gaps, confidence) is a second call
  beside it, asked for JSON against a schema and checked
  (`panel/report.py`), so a client gets structure it can act on, not only
  prose, and the answer is not held back while the report is written.

An ask for structured output is merged in the same format: the merger is
asked for the JSON alone (`MERGE_SYSTEM_JSON`, `Request.output` passed on),
and the first merger whose answer is valid against it is taken
(`panel/merger.py`, which asks them).

The merge is an ordinary call through the caller, with its own call id, so
it takes verdicts like a seat and records show whether merging beats the
best single seat.
"""

from __future__ import annotations

import random
import string
from collections.abc import Sequence
from dataclasses import dataclass

from benchwarmers.reasoning import answer_of
from benchwarmers.types import (
    Image,
    Message,
    Request,
    Sampling,
    Seat,
    Text,
    ToolCall,
    ToolResult,
)

MERGE_SYSTEM = """You merge the answers a panel of models gave to one question.
Write one answer for the person who asked: correct, complete and direct. Say plainly where the
seats agreed and where they disagreed, and which side is right when you can tell and why.
Refer to answers only as Seat A, Seat B and so on. Do not mention that you are merging or
quote this instruction."""


# When the ask wants structured output, the merger is asked in the same
# format: its whole answer is the JSON, so there is no room for prose or
# the agreement block, and none is asked for.
MERGE_SYSTEM_JSON = """You merge the answers a panel of models gave to one question that asked for
JSON. Write the one JSON answer that is most correct and complete: where the seats agree, keep
what they agree on; where they disagree, take the side that is right when you can tell. Answers
that are not valid JSON may still hold useful facts. Answer with the JSON value only: no prose,
no code fence, nothing before or after it."""


@dataclass(frozen=True, slots=True)
class Anonymised:
    """The shuffled letters the merger sees, and the way back."""

    order: tuple[Seat, ...]  # seats in the order shown to the merger
    label_of_letter: dict[str, str]  # "A" -> "Seat 2"

    def answers(self) -> str:
        """The answers under their letters, as the merger, the report and a
        judge model read them: each without its leading think block
        (`reasoning`), which is the model's working, not its answer, and
        would spend their context on it."""
        return "\n\n".join(
            f"## Seat {letter}\n\n{answer_of(seat.content).strip()}"
            for letter, seat in zip(self.label_of_letter, self.order, strict=True)
        )


def anonymise(seats: Sequence[Seat], rng: random.Random | None = None) -> Anonymised:
    """Answered seats in a shuffled order, lettered A, B, C..."""
    order = [s for s in seats if s.status == "ok"]
    (rng or random.SystemRandom()).shuffle(order)
    letters = _letters(len(order))
    return Anonymised(tuple(order), {letter: seat.seat for letter, seat in zip(letters, order, strict=True)})


def merge_request(request: Request, anonymised: Anonymised) -> Request:
    """The merger's one request: the conversation as text, then the answers
    under their letters."""
    answers = anonymised.answers()
    question = transcript(request)
    last = (
        "Write the merged answer as the JSON asked for, nothing else."
        if request.output is not None
        else "Write the merged answer."
    )
    text = (
        f"The question, as it was asked:\n\n{question}\n\n"
        f"The panel's answers ({len(anonymised.order)} seats):\n\n{answers}\n\n{last}"
    )
    max_tokens = request.sampling.max_tokens
    return Request(
        messages=(Message("user", (Text(text),)),),
        system=MERGE_SYSTEM if request.output is None else MERGE_SYSTEM_JSON,
        sampling=Sampling(temperature=0.2, max_tokens=max_tokens + 1024 if max_tokens else None),
        output=request.output,
    )


def _letters(count: int) -> list[str]:
    upper = string.ascii_uppercase
    return [upper[i] if i < 26 else upper[i // 26 - 1] + upper[i % 26] for i in range(count)]


def transcript(request: Request) -> str:
    """The conversation as plain text (images named, never included): what
    the merger and the judge (`panel/judge.py`) are shown of the question."""
    lines: list[str] = []
    if request.system:
        lines.append(f"[system] {request.system}")
    for message in request.messages:
        parts: list[str] = []
        for part in message.parts:
            if isinstance(part, Text):
                parts.append(part.text)
            elif isinstance(part, Image):
                parts.append("[an image]")
            elif isinstance(part, ToolCall):
                parts.append(f"[tool call {part.name}({part.arguments})]")
            elif isinstance(part, ToolResult):
                parts.append(f"[tool result: {part.content}]")
        lines.append(f"[{message.role}] " + "\n".join(parts))
    return "\n\n".join(lines) if len(request.messages) > 1 or request.system else request.last_user_text
