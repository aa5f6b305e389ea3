"""What the MCP tools need from Benchwarmers, as one small interface with two
implementations, so the tools are written once:

- `InProcessBackend` serves `/mcp` on the server itself: it answers through
  the core API the gateway routes use (`benchwarmers.core.panels`), as the
  caller the guard already admitted, so a gateway key's collections hold
  through MCP exactly as through `/v1`.
- `remote.HttpBackend` serves `benchwarmers mcp` (stdio): it calls a
  running server over HTTP with the user's key.

Both answer in the same shapes, so a tool cannot tell which one it has: a
panel as the typed `PanelReply` (the stdio one reads the server's `bench`
object back into it, `formats/bench_json.py`), and the JSON the HTTP API
already defines for the rest (the `/v1/models` entries, the verdict's
`recorded`).
"""

from __future__ import annotations

from contextlib import aclosing
from dataclasses import dataclass, field
from typing import Any, Protocol

from benchwarmers.core import Panels, collection_entry
from benchwarmers.types import Ask, PanelDone, PanelReply, PanelStarted, Seat, SeatDone


@dataclass
class PanelWatch:
    """What a running panel has done so far, for progress notifications.
    `seated` is known only when the backend learns it (in-process);
    `answered` holds each seat as it comes in, the typed `Seat` from either
    backend (the stdio one reads the stream's `bench_seat` back into it)."""

    seated: list[str] = field(default_factory=list)
    answered: list[Seat] = field(default_factory=list)

    def seat_done(self, seat: Seat) -> None:
        self.answered.append(seat)

    def summary(self) -> str:
        done = [f"{s.alias} ({s.status})" for s in self.answered]
        if self.seated:
            done_aliases = {s.alias for s in self.answered}
            waiting = [a for a in self.seated if a not in done_aliases]
            head = f"{len(done)} of {len(self.seated)} seats in"
            tail = f"; waiting on {', '.join(waiting)}" if waiting else ""
        else:
            head, tail = f"{len(done)} seats in", ""
        return head + (f": {', '.join(done)}" if done else "") + tail


class Backend(Protocol):
    # Whether `pending_verdicts` may read a transcript path: a path names a
    # file where this backend runs, fine for the user's own process, on a
    # server only for its local owner.
    reads_transcripts: bool

    async def collections(self) -> list[dict[str, Any]]:
        """The collections this caller may ask, as `GET /v1/models` lists them."""
        ...

    async def ask(self, ask: Ask, watch: PanelWatch) -> PanelReply:
        """Run the panel; note seats in `watch` as they finish; return the
        whole reply (what its `bench` object holds)."""
        ...

    async def verdict(self, body: dict[str, Any]) -> dict[str, Any]:
        """Record a verdict (a body of `POST /bench/verdict`: one seat's, or a
        pair's); return what that route calls `recorded`."""
        ...

    async def pending(self, calls: list[str]) -> list[str]:
        """Of these call ids, the answered seats that have no verdict yet."""
        ...


class InProcessBackend:
    """The backend on the server: `core.Panels` as one admitted identity
    sees it."""

    def __init__(self, core: Panels) -> None:
        self.core = core
        self.reads_transcripts = core.identity.owner

    async def collections(self) -> list[dict[str, Any]]:
        return [collection_entry(view) for view in await self.core.collections()]

    async def ask(self, ask: Ask, watch: PanelWatch) -> PanelReply:
        # Cancelled (the tool call was: `server._Tools._with_progress`), the stream closes
        # before the reply, which stops the panel: its seats still answering are cancelled.
        async with aclosing(await self.core.panel(ask, stop_on_close=True)) as events:
            async for event in events:
                if isinstance(event, PanelStarted):
                    watch.seated = [alias for _label, alias, _call in event.seats]
                elif isinstance(event, SeatDone):
                    watch.seat_done(event.seat)
                elif isinstance(event, PanelDone):
                    return event.reply
        raise RuntimeError("the panel ended without a reply")

    async def verdict(self, body: dict[str, Any]) -> dict[str, Any]:
        return (await self.core.verdict(body)).as_json()

    async def pending(self, calls: list[str]) -> list[str]:
        return await self.core.pending({"calls": calls})
