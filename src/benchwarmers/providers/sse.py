"""Line framings of streamed replies: Server-Sent Events and NDJSON.

Three of the four APIs stream SSE (OpenAI, Anthropic, Gemini with
`alt=sse`); Ollama streams one JSON object per line. `Frames` takes the
body's bytes as they arrive and hands back the events each piece
completes, knowing nothing of any API, so the transport frames a stream
once and each adapter only reads events.

It is synchronous on purpose: a piece off the socket usually holds several
events (often the whole reply), and the transport awaits the socket once
per piece rather than once per line and once per event through a chain of
async generators, each with its own timeout scope.
"""

from __future__ import annotations

import codecs
from typing import Literal, NamedTuple

Framing = Literal["sse", "ndjson"]
_UTF8 = codecs.getincrementaldecoder("utf-8")  # looked up once, not per stream


class SseEvent(NamedTuple):
    """One dispatched event: its SSE `event:` name ("" when none was sent,
    and for NDJSON) and its `data:` lines joined by newlines (an NDJSON
    line, stripped). A named tuple: made for every event of every stream,
    and a third of what a frozen dataclass costs to make."""

    name: str
    data: str


class Frames:
    """One stream's reader: `feed` each piece of the body, `end` when it
    ends. Lines split at CR, LF or CRLF, as SSE says, decoded as UTF-8 (a
    byte-order mark opening the body dropped).

    SSE events dispatch on a blank line, `:` comments are ignored, and an
    event still pending when the body ends is dropped, as the spec says, so
    a cut stream never yields half an event. NDJSON yields every non-blank
    line."""

    def __init__(self, framing: Framing) -> None:
        self._sse = framing == "sse"
        self._decoder = _UTF8("replace")
        self._started = False  # whether the body's first character was read (a BOM there is dropped)
        self._pending = ""
        # Pieces of a line no break has ended yet, joined once one does: a
        # line that never ends (up to the reply's cap) is copied once, not
        # once a piece (which stalled the loop for seconds on a 32 MB line).
        self._unbroken: list[str] = []
        self._name = ""
        self._data: list[str] = []

    def feed(self, piece: bytes) -> list[SseEvent]:
        chunk = self._decoder.decode(piece)
        if not self._started and chunk:
            # A byte-order mark opening the body is no part of its first line
            # (the SSE spec drops it; some Windows-built servers send one).
            self._started = True
            if chunk[0] == "\ufeff":
                chunk = chunk[1:]
        if "\n" not in chunk and "\r" not in chunk:
            self._unbroken.append(chunk)
            return []
        if self._unbroken:
            self._unbroken.append(chunk)
            chunk = "".join(self._unbroken)
            self._unbroken = []
        text = self._pending + chunk
        # A CR at the end may be half of a CRLF: keep it for the next piece.
        complete, held = (text[:-1], "\r") if text.endswith("\r") else (text, "")
        events: list[SseEvent] = []
        if self._sse and not self._data and not self._name and "\r" not in complete:
            complete = self._plain(complete, events)
        lines = _split(complete)
        self._pending = lines.pop() + held  # the line not ended yet ("" when none)
        if events:
            events += self._lines(lines)
            return events
        return self._lines(lines)

    def _plain(self, text: str, events: list[SseEvent]) -> str:
        """The events at the front of `text` that are one `data: ` line each
        (every event of most streams: OpenAI's, Anthropic's after their
        `event:` line is absent, Gemini's), read a block at a time rather
        than a line at a time; what is left from the first other block on
        (or the block not ended yet), for the line reader. Called with no
        event half read, so each block ended by a blank line is an event."""
        blocks = text.split("\n\n")
        for index in range(len(blocks) - 1):
            block = blocks[index]
            if block[:6] != "data: " or "\n" in block:
                return "\n\n".join(blocks[index:])
            events.append(SseEvent("", block[6:]))
        return blocks[-1]

    def end(self) -> list[SseEvent]:
        """What the last, unterminated line completes (NDJSON only: a
        pending SSE event is dropped)."""
        rest = self._pending + "".join(self._unbroken) + self._decoder.decode(b"", final=True)
        self._pending = ""
        self._unbroken = []
        events = self._lines(_split(rest)) if rest else []
        self._data = []
        return events

    def _lines(self, lines: list[str]) -> list[SseEvent]:
        events: list[SseEvent] = []
        if not self._sse:
            for raw in lines:
                line = raw.strip()
                if line:
                    events.append(SseEvent("", line))
            return events
        data = self._data
        for line in lines:
            if line[:5] == "data:":  # most lines of every stream: read without splitting
                data.append(line[6:] if line[5:6] == " " else line[5:])
                continue
            if not line:
                if data:
                    events.append(SseEvent(self._name, data[0] if len(data) == 1 else "\n".join(data)))
                    data = self._data = []
                self._name = ""
                continue
            if line[0] == ":":
                continue
            field, _, value = line.partition(":")
            if value[:1] == " ":
                value = value[1:]
            if field == "data":
                data.append(value)
            elif field == "event":
                self._name = value
        return events


def _split(text: str) -> list[str]:
    """Lines at CR, LF and CRLF only (not at the other breaks `splitlines`
    knows, which JSON strings may hold); the last item is what follows the
    last break."""
    if "\r" not in text:
        return text.split("\n")
    return text.replace("\r\n", "\n").replace("\r", "\n").split("\n")
