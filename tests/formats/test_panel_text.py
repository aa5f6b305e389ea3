"""A panel stream's text, live: one seat on air at a time, every seat's
words whole and in one piece, under a heading with its call id, its status
after its text; sections: each seat whole as it finishes."""

from __future__ import annotations

import pytest

from benchwarmers.formats.panel_text import StreamText, seat_text
from benchwarmers.types import (
    Merged,
    MergeDone,
    MergeText,
    PanelDone,
    PanelEvent,
    PanelReply,
    PanelStarted,
    Seat,
    SeatDone,
    SeatText,
)

pytestmark = pytest.mark.unit

A = Seat("c_a", "Seat 1", "alpha", "ok", 1.0, content="a1 a2")
B = Seat("c_b", "Seat 2", "beta", "ok", 0.5, content="b1")
C = Seat("c_c", "Seat 3", "gamma", "ok", 2.0, content="c1 c2 c3")
D = Seat("c_d", "Seat 4", "delta", "error", 0.1, error="HTTP 500: broke")
STARTED = PanelStarted(
    "trio",
    "short",
    tuple((s.seat, s.alias, s.call) for s in (A, B, C, D)),
)


def said(seat: Seat, text: str) -> SeatText:
    return SeatText(seat.seat, seat.alias, seat.call, text)


def run(events: list[PanelEvent], **options: bool) -> list[str]:
    stream = StreamText(**options)
    return [stream.piece(event) for event in events]


def test_live_text_keeps_each_seat_whole_one_on_air_at_a_time() -> None:
    events: list[PanelEvent] = [
        STARTED,
        said(A, "a1 "),  # A writes first: on air
        said(B, "b1"),  # kept
        said(A, "a2"),
        said(C, "c1 "),  # kept
        SeatDone(D),  # failed without a word: waits for A
        SeatDone(B),  # done while A is on air: waits
        said(C, "c2 "),
        SeatDone(A),  # A ends; D and B whole; C on air with what it wrote
        said(C, "c3"),
        SeatDone(C),
        PanelDone(PanelReply("trio", "short", (A, B, C, D))),
    ]
    pieces = run(events, live=True)
    assert pieces[1] == "### Seat 1 · alpha · call c_a\n\na1 "
    assert pieces[2] == "" and pieces[3] == "a2" and pieces[4] == ""
    assert pieces[5] == "" and pieces[6] == "" and pieces[7] == ""
    text = "".join(pieces)
    assert text == (
        "### Seat 1 · alpha · call c_a\n\na1 a2\n\n_(ok, 1.0 s)_\n\n"
        "### Seat 4 · delta · call c_d\n\n_(failed: HTTP 500: broke)_\n\n_(error, 0.1 s)_\n\n"
        "### Seat 2 · beta · call c_b\n\nb1\n\n_(ok, 0.5 s)_\n\n"
        "### Seat 3 · gamma · call c_c\n\nc1 c2 c3\n\n_(ok, 2.0 s)_\n\n"
    )


def test_a_seat_cut_mid_answer_says_why_after_what_it_wrote() -> None:
    cut = Seat("c_a", "Seat 1", "alpha", "cancelled", 1.0, error="stopped")
    pieces = run([STARTED, said(A, "half"), SeatDone(cut)], live=True)
    assert "".join(pieces).endswith("half\n\n_(stopped before it finished)_\n\n_(cancelled, 1.0 s)_\n\n")


def test_sections_ignore_the_text_and_show_each_seat_as_it_finishes() -> None:
    pieces = run([STARTED, said(A, "a1 "), SeatDone(B), said(A, "a2"), SeatDone(A)], live=False)
    assert pieces == ["", "", seat_text(B), "", seat_text(A)]


def test_a_merged_stream_shows_no_seat_text() -> None:
    pieces = run([STARTED, said(A, "a1 "), SeatDone(A)], live=True, merged=True)
    assert pieces == ["", "", ""]


def test_the_merger_streams_as_it_writes_and_its_end_adds_only_the_rest() -> None:
    merged = Merged("c_m", "judge", "ok", 1.0, content="One merged answer.")
    events: list[PanelEvent] = [
        STARTED,
        SeatDone(A),
        MergeText("judge", "c_m", "One "),
        MergeText("judge", "c_m", "merged"),
        MergeDone(merged),
    ]
    pieces = run(events, live=True, merged=True)
    assert pieces == ["", "", "One ", "merged", " answer."]


def test_a_merger_that_fails_after_writing_is_followed_by_the_next_with_a_line_between() -> None:
    merged = Merged("c_2", "second", "ok", 1.0, content="Second answer.")
    events: list[PanelEvent] = [
        STARTED,
        MergeText("first", "c_1", "Half"),
        MergeText("second", "c_2", "Second answer.", restart=True),
        MergeDone(merged),
    ]
    text = "".join(run(events, merged=True))
    assert text.startswith("Half\n\n_(that merger stopped") and text.endswith("Second answer.")
    assert text.count("Second answer.") == 1


def test_a_cut_seat_says_why() -> None:
    cut = Seat("c_a", "Seat 1", "alpha", "cancelled", 1.0, error="cut: quorum 2 of 3 reached")
    assert "cut: quorum 2 of 3 reached: the reply went without it" in seat_text(cut)
    stopped = Seat("c_b", "Seat 2", "beta", "cancelled", 1.0, error="stopped by the person who asked")
    assert "stopped before it finished" in seat_text(stopped)
