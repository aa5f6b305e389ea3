"""What a panel reply says, the same in every format.

Any chat client shows a message's text and ignores keys it does not know,
so the text carries every seat's answer, each under a heading naming its
seat, model and status; the `bench` object carries the same seats as data
(call ids for verdicts, timings, usage), for clients that read it
(`bench_json.py` writes it). Building the text here, once, means the five
formats cannot drift apart in what a panel looks like.

A stream shows text as it is written (`StreamText(live=True)`, the default
of every format's panel stream) or each seat's section whole as it
finishes (`live=False`: a client asks with `x-bench-stream: sections`).
One message has one text, and interleaved pieces of several seats would be
unreadable, so a live stream has one seat "on air" at a time: the first
seat to write is shown as it writes; the others' text is kept meanwhile,
and when the seat on air ends, a seat already done is shown whole, else
the one still writing whose text came first goes on air with what it has.
Every seat's words come through in full, under a heading that names it
(and its call id) before its status is known; the status follows its text.
"""

from __future__ import annotations

from benchwarmers.types import (
    LeftOff,
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
    Usage,
)


def seat_heading(seat: Seat) -> str:
    """`### Seat 2 · qwen-coder (ok, 1.4 s)`, the call id after it so a reader
    can send a verdict from the text alone."""
    flag = (", explorer" if seat.explorer else "") + output_flag(seat)
    return f"### {seat.seat} · {seat.alias} ({seat.status}, {seat.seconds:.1f} s{flag}) · call {seat.call}"


def output_flag(seat: Seat) -> str:
    """ ", JSON valid" or ", JSON invalid: <why>" when structured output was asked."""
    check = seat.output_check
    if check is None:
        return ""
    return ", JSON valid" if check.valid else f", JSON invalid: {check.error}"


def seat_text(seat: Seat) -> str:
    """One seat's section: heading, then its answer or why there is none."""
    return f"{seat_heading(seat)}\n\n{seat_body(seat).strip()}\n\n"


def seat_body(seat: Seat) -> str:
    """A seat's answer, or why there is none."""
    if seat.status == "ok":
        body = seat.content
    elif seat.status == "cancelled" and seat.error.startswith("cut: "):
        body = f"_({seat.error}: the reply went without it)_"
    elif seat.status == "cancelled":
        body = "_(stopped before it finished)_"
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
    return body


def live_heading(label: str, alias: str, call: str) -> str:
    """A live seat's heading, written before its status is known:
    `### Seat 2 · qwen-coder · call c_...`."""
    return f"### {label} · {alias} · call {call}\n\n"


def live_ending(seat: Seat, *, shown: str) -> str:
    """What follows a live seat's text (`shown`: what of it was written):
    the rest of its answer or why there is none, then its status line."""
    flag = (", explorer" if seat.explorer else "") + output_flag(seat)
    status = f"_({seat.status}, {seat.seconds:.1f} s{flag})_"
    if seat.status == "ok" and seat.content.startswith(shown):
        rest = seat.content[len(shown) :]
    else:  # a failure says why (after whatever arrived of it)
        rest = ("\n\n" if shown else "") + seat_body(seat).strip()
    return f"{rest}\n\n{status}\n\n"


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
    format streams the same words: each seat's text as it is written, one
    seat on air at a time (`live`), or each seat's section as it finishes
    (in finish order), and, when merged, the merger's answer instead.

    When the ask waits for a merger (`PanelStarted.merged`, or `merged=True`
    given here), seats add no text (a chat window shows one answer) and the
    merger's answer streams as it is written (`MergeText`; a merger that
    fails after writing is followed by a line saying so, then the next
    one's answer), or on every merger's failure the panel comes with a
    note. An engine asked to merge always sends a `MergeDone`, a failed one
    when no seat answered."""

    def __init__(self, *, merged: bool = False, live: bool = False) -> None:
        self.merged = merged
        self.live = live
        self._started: PanelStarted | None = None
        self._seats: list[Seat] = []
        # Live: the seat on air (its label) and what of it was shown; the
        # others' text kept meanwhile, and the seats done waiting their turn.
        self._on_air = ""
        self._shown: list[str] = []
        self._kept: dict[str, list[str]] = {}
        self._waiting: list[Seat] = []
        # The merger's answer as streamed: the call on air and what of it was shown.
        self._merge_call = ""
        self._merge_shown: list[str] = []

    def piece(self, event: PanelEvent) -> str:
        if isinstance(event, SeatText):
            return self._written(event) if self.live and not self.merged else ""
        if isinstance(event, PanelStarted):
            self._started = event
            self.merged = self.merged or event.merged
            return ""
        if isinstance(event, SeatDone):
            self._seats.append(event.seat)
            if self.merged:
                return ""
            return self._ended(event.seat) if self.live else seat_text(event.seat)
        if isinstance(event, MergeText):
            return self._merge_written(event)
        if isinstance(event, MergeDone):
            return self._merge_ended(event.merged)
        if isinstance(event, PanelDone):
            return "" if self.merged else left_off_text(event.reply.left_off)
        return ""

    def _merge_written(self, event: MergeText) -> str:
        out = ""
        if event.call != self._merge_call:
            if self._merge_call:  # an earlier merger wrote, then failed
                out = "\n\n_(that merger stopped before it finished; another merges)_\n\n"
            self._merge_call, self._merge_shown = event.call, []
        self._merge_shown.append(event.text)
        return out + event.text

    def _merge_ended(self, merged: Merged) -> str:
        """The rest of the merger's answer (all of it when none streamed),
        or the panel with a note when no merger answered."""
        shown = "".join(self._merge_shown).lstrip() if merged.call == self._merge_call else ""
        if merged.status == "ok":
            if shown and merged.content.startswith(shown):
                return merged.content[len(shown) :]
            if self._merge_call and merged.call != self._merge_call:
                return "\n\n_(that merger stopped before it finished; another merges)_\n\n" + merged.content
            return "" if shown else merged.content
        by_order = sorted(self._seats, key=lambda s: _seat_order(self._started, s))
        left_off = self._started.left_off if self._started else ()
        return (
            ("\n\n" if self._merge_call else "")
            + merged_note_text(merged)
            + "".join(seat_text(s) for s in by_order)
            + left_off_text(left_off)
        )

    def _written(self, event: SeatText) -> str:
        if self._on_air == event.seat:
            self._shown.append(event.text)
            return event.text
        if not self._on_air:
            self._on_air, self._shown = event.seat, [event.text]
            return live_heading(event.seat, event.alias, event.call) + event.text
        self._kept.setdefault(event.seat, []).append(event.text)
        return ""

    def _ended(self, seat: Seat) -> str:
        """A seat is done: its ending if on air, then whoever is next;
        else it waits its turn (or, with nobody on air, is shown whole)."""
        if self._on_air and self._on_air != seat.seat:
            self._waiting.append(seat)
            return ""
        out = live_ending(seat, shown="".join(self._shown)) if self._on_air else self._whole(seat)
        self._on_air, self._shown = "", []
        while self._waiting:  # the seats done meanwhile, whole, in the order they finished
            out += self._whole(self._waiting.pop(0))
        if self._kept:  # the seat still writing whose text came first goes on air
            label, kept = next(iter(self._kept.items()))
            del self._kept[label]
            alias, call = self._seat_names(label)
            self._on_air, self._shown = label, kept
            out += live_heading(label, alias, call) + "".join(kept)
        return out

    def _whole(self, seat: Seat) -> str:
        kept = "".join(self._kept.pop(seat.seat, []))
        return live_heading(seat.seat, seat.alias, seat.call) + kept + live_ending(seat, shown=kept)

    def _seat_names(self, label: str) -> tuple[str, str]:
        for seat_label, alias, call in self._started.seats if self._started else ():
            if seat_label == label:
                return alias, call
        return "", ""


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
