"""The merger's structured report: what the seats agreed on, where they
contradicted each other (and who sat on each side), the points only one
seat made (and whether the merger thinks each is right), what nobody
covered, and how sure the merger is.

It is its own call beside the merger's answer (`panel/merger.py`), not a
block at the end of the answer: the answer streams as it is written, and
the report is JSON asked for against `REPORT_SCHEMA` (`Request.output`, so
a provider that can hold a model to a schema does; the prompt asks for the
same JSON for one that cannot), then checked here, in one function
(`read_report`), before anything of it reaches a client. Seats are named by
the letters the merger saw (`merge.anonymise`); `relabel` maps them back
to the seats' labels, dropping letters that name no seat.
"""

from __future__ import annotations

import json
from dataclasses import replace
from typing import Any

from benchwarmers.panel.merge import Anonymised, transcript
from benchwarmers.panel.output_check import check_output, unwrapped
from benchwarmers.types import (
    AgreementPoint,
    Contradiction,
    MergeReport,
    Message,
    OutputFormat,
    Request,
    Sampling,
    Side,
    Text,
    Unique,
)

_POINTS = {"type": "array", "items": {"type": "string"}}
_LETTERS = {"type": "array", "items": {"type": "string"}}

# The one schema the report is asked for and checked against (strict-mode
# friendly: every object closed, every property required).
REPORT_SCHEMA: dict[str, Any] = {
    "type": "object",
    "additionalProperties": False,
    "required": ["consensus", "contradictions", "unique", "gaps", "confidence"],
    "properties": {
        "consensus": _POINTS,
        "contradictions": {
            "type": "array",
            "items": {
                "type": "object",
                "additionalProperties": False,
                "required": ["point", "sides"],
                "properties": {
                    "point": {"type": "string"},
                    "sides": {
                        "type": "array",
                        "items": {
                            "type": "object",
                            "additionalProperties": False,
                            "required": ["position", "seats"],
                            "properties": {"position": {"type": "string"}, "seats": _LETTERS},
                        },
                    },
                },
            },
        },
        "unique": {
            "type": "array",
            "items": {
                "type": "object",
                "additionalProperties": False,
                "required": ["point", "seat", "right"],
                "properties": {
                    "point": {"type": "string"},
                    "seat": {"type": "string"},
                    "right": {"type": ["boolean", "null"]},
                },
            },
        },
        "gaps": _POINTS,
        # 0 to 1, checked in `read_report`: not every provider's schema mode takes bounds.
        "confidence": {"type": "number"},
    },
}
REPORT_OUTPUT = OutputFormat("json_schema", REPORT_SCHEMA, name="merge_report", strict=True)

REPORT_SYSTEM = f"""You review the answers a panel of models gave to one question, for a merge report.
Reply with one JSON object and nothing else, valid against this JSON Schema:
{json.dumps(REPORT_SCHEMA, separators=(",", ":"))}
consensus: claims every seat that spoke to them agrees on, one sentence each.
contradictions: each point the seats disagree on, with each position and the letters of the seats
holding it ("A", "B"). unique: a point only one seat made, that seat's letter, and whether you
judge it right (true, false, or null when you cannot tell). gaps: what the question needs that no
seat covered. confidence: how sure you are of the merged conclusion, a number from 0 to 1."""


def report_request(request: Request, anonymised: Anonymised) -> Request:
    """The report's one request: the question and the lettered answers,
    asked for JSON against `REPORT_SCHEMA`."""
    answers = anonymised.answers()
    text = (
        f"The question, as it was asked:\n\n{transcript(request)}\n\n"
        f"The panel's answers ({len(anonymised.order)} seats):\n\n{answers}\n\n"
        "Write the report as one JSON object."
    )
    return Request(
        messages=(Message("user", (Text(text),)),),
        system=REPORT_SYSTEM,
        sampling=Sampling(temperature=0.0),
        output=REPORT_OUTPUT,
    )


def read_report(text: str) -> MergeReport | None:
    """The report in a merger's reply, or None when it is not one JSON
    object valid against `REPORT_SCHEMA` (a fence around it is allowed:
    some models add one even when told not to). Seats stay letters."""
    valid, _error = check_output(text, REPORT_OUTPUT)
    if not valid:
        return None
    data = json.loads(unwrapped(text))
    if not 0 <= data["confidence"] <= 1:
        return None
    return MergeReport(
        consensus=tuple(data["consensus"]),
        contradictions=tuple(
            Contradiction(c["point"], tuple(Side(s["position"], tuple(s["seats"])) for s in c["sides"]))
            for c in data["contradictions"]
        ),
        unique=tuple(Unique(u["point"], u["seat"], u["right"]) for u in data["unique"]),
        gaps=tuple(data["gaps"]),
        confidence=float(data["confidence"]),
    )


def relabel(report: MergeReport, label_of_letter: dict[str, str]) -> MergeReport:
    """The report with the merger's letters ("A", "Seat B") turned into the
    seats' labels; a letter that names no seat is dropped (a unique point
    whose seat is unknown with it)."""

    def label(letter: str) -> str:
        word = letter.strip()
        if word.lower().startswith("seat "):
            word = word[5:].strip()
        return label_of_letter.get(word.upper(), "")

    def labels(letters: tuple[str, ...]) -> tuple[str, ...]:
        return tuple(dict.fromkeys(x for x in map(label, letters) if x))

    return replace(
        report,
        contradictions=tuple(
            Contradiction(c.point, tuple(Side(s.position, labels(s.seats)) for s in c.sides))
            for c in report.contradictions
        ),
        unique=tuple(Unique(u.point, label(u.seat), u.right) for u in report.unique if label(u.seat)),
    )


def agreement_of(report: MergeReport, seats: tuple[str, ...]) -> tuple[AgreementPoint, ...]:
    """The older agreement map (`Merged.agreement`) read off the report:
    a consensus point held by every merged seat, each side of a
    contradiction held by its seats and contradicted by the other sides',
    a unique point held by its one seat."""
    points = [AgreementPoint(point, seats) for point in report.consensus]
    for contradiction in report.contradictions:
        for side in contradiction.sides:
            against = [s for other in contradiction.sides if other is not side for s in other.seats]
            others = tuple(dict.fromkeys(s for s in against if s not in side.seats))
            points.append(AgreementPoint(f"{contradiction.point}: {side.position}", side.seats, others))
    points.extend(AgreementPoint(u.point, (u.seat,)) for u in report.unique)
    return tuple(points)
