"""Merged replies: one model reads the panel's answers and writes one
answer that says where they agreed and disagreed.

Three choices make the merge worth trusting more than a plain
"summarise these" (llm-council, OpenRouter Fusion):

* the merger sees the answers as Seat A, B, C in a shuffled order, never
  the models' names or the panel's order, so it cannot favour a famous name
  or the first answer;
* a candidate that did not sit on this panel merges before one that did,
  so the merger does not judge its own answer where another can;
* besides its prose, the merger returns an agreement map (each point, which
  seats hold it, which contradict it) in a delimited JSON block that is
  parsed here and mapped back to the real seat labels, so a client gets
  structure it can act on, not only prose.

An ask for structured output is merged in the same format: the merger is
asked for the JSON alone (`MERGE_SYSTEM_JSON`, `Request.output` passed on),
and the engine takes the first merger whose answer is valid against it.

The merge is an ordinary call through the caller, with its own call id, so
it takes verdicts like a seat and records show whether merging beats the
best single seat.
"""

from __future__ import annotations

import json
import random
import re
import string
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from benchwarmers.types import (
    AgreementPoint,
    Image,
    Message,
    Request,
    Sampling,
    Seat,
    Text,
    ToolCall,
    ToolResult,
)

AGREEMENT_OPEN = "<agreement>"
AGREEMENT_CLOSE = "</agreement>"

MERGE_SYSTEM = f"""You merge the answers a panel of models gave to one question.
Write one answer for the person who asked: correct, complete and direct. Say plainly where the
seats agreed and where they disagreed, and which side is right when you can tell and why.
Refer to answers only as Seat A, Seat B and so on. Do not mention that you are merging or
quote this instruction.

After your answer, on a line of its own, write {AGREEMENT_OPEN}, then one JSON object, then
{AGREEMENT_CLOSE}. The object is {{"points": [{{"point": "<one claim, one sentence>",
"heldBy": ["A", ...], "contradictedBy": ["B", ...]}}]}}: each substantive claim made by any seat,
with the letters of the seats that state it and of those that state the opposite."""


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


def anonymise(seats: Sequence[Seat], rng: random.Random | None = None) -> Anonymised:
    """Answered seats in a shuffled order, lettered A, B, C..."""
    order = [s for s in seats if s.status == "ok"]
    (rng or random.SystemRandom()).shuffle(order)
    letters = _letters(len(order))
    return Anonymised(tuple(order), {letter: seat.seat for letter, seat in zip(letters, order, strict=True)})


def merge_request(request: Request, anonymised: Anonymised) -> Request:
    """The merger's one request: the conversation as text, then the answers
    under their letters."""
    letters = list(anonymised.label_of_letter)
    answers = "\n\n".join(
        f"## Seat {letter}\n\n{seat.content.strip()}"
        for letter, seat in zip(letters, anonymised.order, strict=True)
    )
    question = transcript(request)
    last = (
        "Write the merged answer as the JSON asked for, nothing else."
        if request.output is not None
        else f"Write the merged answer, then the {AGREEMENT_OPEN} block."
    )
    text = (
        f"The question, as it was asked:\n\n{question}\n\n"
        f"The panel's answers ({len(letters)} seats):\n\n{answers}\n\n{last}"
    )
    max_tokens = request.sampling.max_tokens
    return Request(
        messages=(Message("user", (Text(text),)),),
        system=MERGE_SYSTEM if request.output is None else MERGE_SYSTEM_JSON,
        sampling=Sampling(temperature=0.2, max_tokens=max_tokens + 1024 if max_tokens else None),
        output=request.output,
    )


def parse_merge(text: str, label_of_letter: dict[str, str]) -> tuple[str, tuple[AgreementPoint, ...]]:
    """The merger's prose (block removed) and its agreement map, with
    letters mapped back to seat labels. A missing or unreadable block leaves
    the prose whole and the map empty: the answer still stands."""
    prose, block = _split_block(text)
    points: list[AgreementPoint] = []
    data = _loads_lenient(block) if block else None
    items = data.get("points") if isinstance(data, dict) else data if isinstance(data, list) else None
    for item in items or []:
        if not isinstance(item, dict) or not isinstance(item.get("point"), str) or not item["point"].strip():
            continue
        held = _labels(item.get("heldBy", item.get("held_by")), label_of_letter)
        against = _labels(item.get("contradictedBy", item.get("contradicted_by")), label_of_letter)
        points.append(AgreementPoint(item["point"].strip(), held, tuple(x for x in against if x not in held)))
    return prose.strip(), tuple(points)


def _split_block(text: str) -> tuple[str, str]:
    start = text.rfind(AGREEMENT_OPEN)
    if start >= 0:
        end = text.find(AGREEMENT_CLOSE, start)
        block = text[start + len(AGREEMENT_OPEN) : end if end >= 0 else len(text)]
        rest = text[end + len(AGREEMENT_CLOSE) :] if end >= 0 else ""
        return text[:start] + rest, block
    # Some models put the object in a fenced block instead of the tags.
    fences = list(re.finditer(r"```(?:json)?\s*(\{.*?\})\s*```", text, re.DOTALL))
    fence = fences[-1] if fences else None
    if fence and '"points"' in fence.group(1):
        return text[: fence.start()] + text[fence.end() :], fence.group(1)
    return text, ""


def _loads_lenient(block: str) -> Any:
    block = re.sub(r"^\s*```(?:json)?|```\s*$", "", block.strip()).strip()
    try:
        return json.loads(block)
    except ValueError:
        pass
    # The outermost object, trailing commas dropped.
    first, last = block.find("{"), block.rfind("}")
    if first < 0 or last <= first:
        return None
    candidate = re.sub(r",\s*([}\]])", r"\1", block[first : last + 1])
    try:
        return json.loads(candidate)
    except ValueError:
        return None


def _labels(value: object, label_of_letter: dict[str, str]) -> tuple[str, ...]:
    """["A", "Seat B", "c"] -> ("Seat 3", "Seat 1", ...): unknown letters dropped."""
    if isinstance(value, str):
        value = [value]
    if not isinstance(value, list):
        return ()
    out: list[str] = []
    for item in value:
        if not isinstance(item, str):
            continue
        letter = re.sub(r"(?i)^\s*seat\s+", "", item).strip().upper()
        label = label_of_letter.get(letter)
        if label and label not in out:
            out.append(label)
    return tuple(out)


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
