"""What a panel reply says, the same in every format.

Any chat client shows a message's text and ignores keys it does not know,
so the text carries every seat's answer, each under a heading naming its
seat, model and status; the `bench` object carries the same seats as data
(call ids for verdicts, timings, usage), for clients that read it
(`bench_json.py` writes it). Building the text here, once, means the five
formats cannot drift apart in what a panel looks like.
"""

from __future__ import annotations

from benchwarmers.types import (
    LeftOff,
    Merged,
    MergeDone,
    PanelDone,
    PanelEvent,
    PanelReply,
    PanelStarted,
    Seat,
    SeatDone,
    Usage,
)


def seat_heading(seat: Seat) -> str:
    """`### Seat 2 · qwen-coder (ok, 1.4 s)`, the call id after it so a reader
    can send a verdict from the text alone."""
    flag = ", explorer" if seat.explorer else ""
    return f"### {seat.seat} · {seat.alias} ({seat.status}, {seat.seconds:.1f} s{flag}) · call {seat.call}"


def seat_text(seat: Seat) -> str:
    """One seat's section: heading, then its answer or why there is none."""
    if seat.status == "ok":
        body = seat.content
    elif seat.status == "empty":
        body = "_(answered with nothing)_"
    elif seat.status == "limited":
        until = f" until {seat.frees_at}" if seat.frees_at else ""
        body = f"_(not asked: a rate limit here{until}{': ' + seat.error if seat.error else ''})_"
    elif seat.status == "rate_limited":
        until = f"; rests until {seat.frees_at}" if seat.frees_at else ""
        why = f": {seat.error}" if seat.error else ""
        body = f"_(the provider refused it: rate limited, HTTP 429{until}{why})_"
    elif seat.status == "timeout":
        body = f"_(no answer in time{': ' + seat.error if seat.error else ''})_"
    else:
        body = f"_(failed: {seat.error or 'unknown error'})_"
    return f"{seat_heading(seat)}\n\n{body.strip()}\n\n"


def left_off_text(left_off: tuple[LeftOff, ...]) -> str:
    if not left_off:
        return ""
    lines = "\n".join(f"- {m.alias}: {m.reason}" for m in left_off)
    return f"---\nLeft off this panel:\n{lines}\n"


def merged_note_text(merged: Merged) -> str:
    """A merge that failed says so above the panel that stands in for it."""
    return f"_{merged.note}_\n\n" if merged.note else ""


def reply_text(reply: PanelReply) -> str:
    """The whole message text of a non-streamed reply: the merger's answer
    when a merge answered, else every seat in seat order."""
    if reply.merged is not None and reply.merged.status == "ok":
        return reply.merged.content
    note = merged_note_text(reply.merged) if reply.merged is not None else ""
    return note + "".join(seat_text(s) for s in reply.seats) + left_off_text(reply.left_off)


class StreamText:
    """Turns panel events into the text pieces a stream delivers, so every
    format streams the same words: each seat's section as it finishes (in
    finish order), and, when merged, the merger's answer instead.

    When the ask waits for a merger (`PanelStarted.merged`, or `merged=True`
    given here), seats add no text (a chat window shows one answer) and the
    merger's answer, or on its failure the panel with a note, comes in one
    piece at the end. An engine asked to merge always sends a `MergeDone`, a
    failed one when no seat answered."""

    def __init__(self, *, merged: bool = False) -> None:
        self.merged = merged
        self._started: PanelStarted | None = None
        self._seats: list[Seat] = []

    def piece(self, event: PanelEvent) -> str:
        if isinstance(event, PanelStarted):
            self._started = event
            self.merged = self.merged or event.merged
            return ""
        if isinstance(event, SeatDone):
            self._seats.append(event.seat)
            return "" if self.merged else seat_text(event.seat)
        if isinstance(event, MergeDone):
            if event.merged.status == "ok":
                return event.merged.content
            by_order = sorted(self._seats, key=lambda s: _seat_order(self._started, s))
            left_off = self._started.left_off if self._started else ()
            return (
                merged_note_text(event.merged)
                + "".join(seat_text(s) for s in by_order)
                + left_off_text(left_off)
            )
        if isinstance(event, PanelDone):
            return "" if self.merged else left_off_text(event.reply.left_off)
        return ""


def _seat_order(started: PanelStarted | None, seat: Seat) -> int:
    labels = [label for label, _alias, _call in started.seats] if started else []
    return labels.index(seat.seat) if seat.seat in labels else len(labels)


def total_usage(reply: PanelReply) -> Usage:
    """Every call of the reply added up (seats and merge), for a format's
    `usage` field."""
    total = Usage()
    for seat in reply.seats:
        total = total + seat.usage
    if reply.merged is not None:
        total = total + reply.merged.usage
    return total
