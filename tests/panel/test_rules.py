"""The pure rules: model names, shapes, seating, the merger's anonymising."""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from benchwarmers.bench.decider import Decision
from benchwarmers.errors import NotFound, UserError
from benchwarmers.formats.base import parse_model_name
from benchwarmers.panel.merge import anonymise, merge_request
from benchwarmers.panel.seating import fitted_note, seat_panel
from benchwarmers.panel.shapes import shape_of
from benchwarmers.types import Image, Message, Request, Sampling, Seat, Text, user

pytestmark = pytest.mark.unit


@dataclass
class M:
    alias: str
    role: str = "general"
    status: str = "available"
    ad_hoc: bool = False
    context_window: int | None = None
    output_limit: int | None = None
    vision: bool = False
    resting_until: datetime | None = None
    status_reason: str = ""
    endpoint: Any = None
    served: str = ""


@dataclass
class C:
    name: str
    members: tuple[str, ...]
    seats: int = 0
    explorer_seats: int = 0
    extra: dict[str, Any] = field(default_factory=dict)


def ask(text: str = "hello") -> Request:
    return Request((user(text),))


def test_model_names() -> None:
    assert parse_model_name("bench/trio") == ("trio", "panel")
    assert parse_model_name("bench/trio:merged") == ("trio", "merged")
    assert parse_model_name("bench/trio:route") == ("trio", "route")
    for bad in ("gpt-4o", "bench/", "bench/trio:fast", "bench/a/b", 3, None):
        with pytest.raises(UserError) as error:
            parse_model_name(bad)
        assert "bench/<collection>" in str(error.value)


def test_shapes() -> None:
    assert shape_of(ask("what is the capital of France?")) == "short"
    assert shape_of(ask("fix this:\n```py\nprint(1\n```")) == "code"
    assert shape_of(ask("word " * 3000)) == "long"
    assert shape_of(Request((Message("user", (Text("what?"), Image("image/png", data="AA=="))),))) == "vision"


def test_seating_rules() -> None:
    now = datetime.now(UTC)
    bench = [
        M("a"),
        M("resting", status="resting", resting_until=now + timedelta(minutes=5)),
        M("rested", status="resting", resting_until=now - timedelta(minutes=5)),
        M("gone", status="retired", status_reason="stopped answering"),
        M("new", status="onboarding"),
        M("eyes", role="vision"),
        M("paint", role="image"),
        M("tiny", context_window=100),
        M("spare"),
        M("adhoc", ad_hoc=True),
        M("explored", status="available"),
    ]
    collection = C("c", ("a", "resting", "rested", "gone", "new", "eyes", "paint", "tiny"), explorer_seats=1)
    # The bench's order for explorers; ad hoc and unfit ones are passed over.
    order = ["adhoc", "resting", "explored", "spare"]
    decision = Decision(record=collection.members, explorers=tuple(order), left_off=())
    seating = seat_panel(collection, ask("hi " * 200), bench=bench, decision=decision, now=now)
    assert [(s.label, s.model.alias, s.explorer) for s in seating.seats] == [
        ("Seat 1", "a", False),
        ("Seat 2", "rested", False),
        ("Seat 3", "explored", True),
    ]
    reasons = {m.alias: m.reason for m in seating.left_off}
    assert reasons["resting"].startswith("resting until")
    assert reasons["gone"] == "retired: stopped answering"
    assert reasons["new"].startswith("onboarding")
    assert "images" in reasons["eyes"]
    assert "image model" in reasons["paint"]
    assert reasons["tiny"].startswith("context window 100 < ")


def test_a_big_max_tokens_is_lowered_per_member_not_a_reason_to_leave_it_off() -> None:
    """The openai SDK's agents ask 64000, LiteLLM's `anthropic/` its own
    default: each member is asked for what it can write instead."""
    bench = [
        M("writes-8k", context_window=128_000, output_limit=8192),
        M("small-window", context_window=16_000),
        M("no-room", context_window=300),
        M("unknown"),
    ]
    collection = C("c", ("writes-8k", "small-window", "no-room", "unknown"))
    request = Request((user("hi " * 200),), sampling=Sampling(max_tokens=64_000))
    seating = seat_panel(collection, request, bench=bench)
    assert [s.model.alias for s in seating.seats] == ["writes-8k", "small-window", "unknown"]
    assert seating.left_off[0].alias == "no-room" and "context window 300" in seating.left_off[0].reason
    asked, note = fitted_note(request, bench[0])
    assert asked.sampling.max_tokens == 8192
    assert note == "max_tokens 64000 lowered to 8192, its output limit"
    asked, note = fitted_note(request, bench[1])
    assert asked.sampling.max_tokens < 16_000 and note.endswith("what its context window leaves")
    assert fitted_note(request, bench[3]) == (request, "")


def test_seat_cap_extras_and_explorer_never_ad_hoc() -> None:
    bench = [M("a"), M("b"), M("c"), M("x", ad_hoc=True), M("img", role="image")]
    collection = C("c", ("a", "b", "c"), seats=2, explorer_seats=1)
    decision = Decision(
        record=("c", "a"), explorers=("x", "img"), left_off=(("b", "ranked below the collection's 2 seats"),)
    )
    seating = seat_panel(collection, ask(), bench=bench, decision=decision)
    assert [s.model.alias for s in seating.seats] == ["c", "a"]  # no explorer: ad hoc and image never
    assert "ranked below" in {m.alias: m.reason for m in seating.left_off}["b"]
    with_extra = seat_panel(C("c", ("a",)), ask(), bench=bench, extras=("x",))
    assert [s.model.alias for s in with_extra.seats] == ["a", "x"]  # named, so an ad hoc model may sit
    with pytest.raises(NotFound):
        seat_panel(C("c", ("a",)), ask(), bench=bench, extras=("nobody",))


def test_anonymised_merge_request() -> None:
    seats = [
        Seat("c_1", "Seat 1", "gpt", "ok", 1.0, content="Paris"),
        Seat("c_2", "Seat 2", "claude", "ok", 1.0, content="Paris, France"),
        Seat("c_3", "Seat 3", "llama", "error", 1.0, error="boom"),
        Seat("c_4", "Seat 4", "qwen", "ok", 1.0, content="Lyon"),
    ]
    anonymised = anonymise(seats, random.Random(7))
    assert sorted(anonymised.label_of_letter) == ["A", "B", "C"]
    assert sorted(anonymised.label_of_letter.values()) == ["Seat 1", "Seat 2", "Seat 4"]
    request = merge_request(ask("capital of France?"), anonymised)
    prompt = request.messages[0].text
    for alias in ("gpt", "claude", "llama", "qwen"):
        assert alias not in prompt and alias not in request.system
    assert "capital of France?" in prompt and "Seat C" in prompt
    assert request.output is None  # the answer is plain text, streamed; the report is its own call


def test_the_merger_reads_each_answer_without_its_leading_think_block() -> None:
    seats = [
        Seat("c_1", "Seat 1", "r1", "ok", 1.0, content="<think>\nParis? Surely.\n</think>\n\nParis"),
        Seat("c_2", "Seat 2", "qwq", "ok", 1.0, content="Lyon, no: Paris.\n</think>\nParis, France"),
        Seat("c_3", "Seat 3", "gpt", "ok", 1.0, content="The tag <think> is text here."),
    ]
    answers = anonymise(seats, random.Random(7)).answers()
    prompt = merge_request(ask("capital of France?"), anonymise(seats, random.Random(7))).messages[0].text
    for text in (answers, prompt):
        assert "Surely" not in text and "Lyon" not in text and "</think>" not in text
        assert "\n\nParis\n" in text + "\n" and "Paris, France" in text
        assert "The tag <think> is text here." in text
