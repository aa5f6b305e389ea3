"""The merger's structured report: asked against its schema, checked in
one place, letters mapped back to seats."""

from __future__ import annotations

import json
import random

import pytest

from benchwarmers.panel.merge import anonymise
from benchwarmers.panel.report import (
    REPORT_OUTPUT,
    REPORT_SCHEMA,
    agreement_of,
    read_report,
    relabel,
    report_request,
)
from benchwarmers.types import Message, Request, Seat, Text

pytestmark = pytest.mark.unit

GOOD = {
    "consensus": ["Paris is the capital"],
    "contradictions": [
        {
            "point": "population",
            "sides": [{"position": "2 million", "seats": ["A"]}, {"position": "11 million", "seats": ["B"]}],
        }
    ],
    "unique": [
        {"point": "the Seine", "seat": "B", "right": True},
        {"point": "x", "seat": "Z", "right": None},
    ],
    "gaps": ["history"],
    "confidence": 0.8,
}


def test_a_valid_report_is_read_and_relabelled() -> None:
    report = read_report(json.dumps(GOOD))
    assert report is not None and report.confidence == 0.8
    labelled = relabel(report, {"A": "Seat 2", "B": "Seat 1"})
    assert labelled.contradictions[0].sides[0].seats == ("Seat 2",)
    assert [u.seat for u in labelled.unique] == ["Seat 1"]  # the letter that names no seat is dropped
    assert labelled.unique[0].right is True
    points = agreement_of(labelled, ("Seat 1", "Seat 2"))
    assert points[0].held_by == ("Seat 1", "Seat 2")
    assert points[1].point == "population: 2 million" and points[1].contradicted_by == ("Seat 1",)


@pytest.mark.parametrize(
    "text",
    [
        "not json",
        "[]",
        json.dumps({**GOOD, "confidence": 1.5}),
        json.dumps({k: v for k, v in GOOD.items() if k != "gaps"}),
        json.dumps({**GOOD, "extra": 1}),
        json.dumps({**GOOD, "unique": [{"point": "p", "seat": "A", "right": "yes"}]}),
        "Here is the report: " + json.dumps(GOOD),
        "[" * 100_000,  # a merger stuck on one character: not a report, not a crash
    ],
)
def test_an_invalid_report_is_none(text: str) -> None:
    assert read_report(text) is None


def test_a_fenced_report_is_read() -> None:
    assert read_report("```json\n" + json.dumps(GOOD) + "\n```") is not None


def test_the_report_is_asked_for_against_its_schema() -> None:
    seats = [
        Seat("c1", "Seat 1", "gpt", "ok", 1.0, content="Paris"),
        Seat("c2", "Seat 2", "cl", "ok", 1.0, content="Lyon"),
    ]
    anonymised = anonymise(seats, random.Random(3))
    request = report_request(Request((Message("user", (Text("capital of France?"),)),)), anonymised)
    assert request.output == REPORT_OUTPUT and request.output.schema == REPORT_SCHEMA
    prompt = request.messages[0].text
    assert "capital of France?" in prompt and "Seat A" in prompt and "Seat B" in prompt
    assert "gpt" not in prompt + request.system  # the merger never sees the names
    assert (
        '"confidence"' in request.system
    )  # the prompt asks for the same JSON, for providers without schemas
