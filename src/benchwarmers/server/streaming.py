"""What every format route's streamed reply shares: the headers that keep
proxies from buffering it, the response around a format's byte stream, and
how a stream whose store failed half way ends.

SSE (OpenAI, Anthropic, Gemini) and NDJSON (Ollama) alike: a stream the
client reads piece by piece must not sit in a proxy's buffer or a cache.

A stream has sent its 200 before its calls are safe in the log: when the
store then refuses them (a disk that filled since the ask was admitted,
`store/space.py`), the stream ends with the format's own error event (an
SSE `data:` error, Anthropic's `event: error`, an NDJSON `{"error"}`
line), saying so, instead of stopping with no end a client can read.

The status waits for the stream's first piece, not for the route: a
panel stream's first piece comes once a seat has answered or begun to
write, and a panel no seat answered raises there instead
(`core.Panels.panel`); the reply is then that error in the caller's format
(429 or 502, by the app's handlers, `errors.HANDLERS`), as if the route
had raised it. So the route returns its response while the seats are
asked, and the first answer goes out with only its own rendering before
it, not the route's return and the response's start as well (about 0.1-0.2
ms of a streamed panel's first content byte, docs/benchmarks.md, issue 39).

However it ends (done, the client gone, the client cut for reading
nothing), the body's generator is closed at once: a panel's seats wait
on what the stream has not yet sent (backpressure, `panel/hand.py`),
and read on when it closes. A client gone stops the stream at once: while
it waits for its next piece (a seat or a member silent, thinking),
Starlette's disconnect listener cancels it (uvicorn says ASGI 2.3, so the
response listens); while pieces pour in, at its next piece
(`protocol.GONE_KEY`): the server's `send` writes nothing to a closed
connection and waits for nothing, so until the disconnect reached the
response, a route-mode stream read its upstream to the end for nobody.
"""

from __future__ import annotations

import dataclasses
from collections.abc import AsyncIterator, Mapping

from fastapi.responses import StreamingResponse
from starlette.requests import Request
from starlette.types import Receive, Scope, Send

from benchwarmers.errors import StoreError, StoreFull
from benchwarmers.formats.base import STREAM_CHOICE_HEADER, seat_text_wanted
from benchwarmers.formats.errors import error_bytes, format_for_path
from benchwarmers.server.errors import handler_for
from benchwarmers.server.protocol import GONE_KEY
from benchwarmers.types import Ask

STREAM_HEADERS = {"cache-control": "no-cache", "x-accel-buffering": "no"}


def panel_stream_ask(request: Request, ask: Ask) -> Ask:
    """A streamed panel ask as its client wants the seats' text: as it is
    written (the default), or each seat's section as it finishes
    (`x-bench-stream: sections`). A merged ask shows one answer: no seat
    text is streamed for it."""
    live = seat_text_wanted(request.headers.get(STREAM_CHOICE_HEADER)) and ask.mode != "merged"
    return dataclasses.replace(ask, seat_text=live) if live else ask


class FormatStream(StreamingResponse):
    """A streamed reply that ends with its format's error event when the store fails mid-way."""

    _format = "openai_chat"
    _scope: Scope

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        self._format = format_for_path(scope["path"])
        self._scope = scope
        try:
            await super().__call__(scope, receive, send)
        finally:
            # Closed now, not whenever the collector finds it: a panel's seats
            # wait on its stream's buffer (`panel/hand.py`) until it closes.
            close = getattr(self.body_iterator, "aclose", None)
            if close is not None:
                await close()

    async def stream_response(self, send: Send) -> None:
        scope = self._scope
        pieces = aiter(self.body_iterator)
        try:  # the status waits for the first piece: until then an error is the reply
            chunk: str | bytes | memoryview | None = await anext(pieces, None)
        except Exception as exc:
            handler = handler_for(exc)
            if handler is None:
                raise  # a bug: CatchAll answers it
            refusal = await handler(Request(scope), exc)
            await send(
                {"type": "http.response.start", "status": refusal.status_code, "headers": refusal.raw_headers}
            )
            await send({"type": "http.response.body", "body": refusal.body, "more_body": False})
            return
        await send({"type": "http.response.start", "status": self.status_code, "headers": self.raw_headers})
        try:
            while chunk is not None:
                if not isinstance(chunk, bytes | memoryview):
                    chunk = chunk.encode(self.charset)
                await send({"type": "http.response.body", "body": chunk, "more_body": True})
                if GONE_KEY in scope:  # nobody to send to: the stream stops here, closed below
                    return
                chunk = await anext(pieces, None)
        except StoreError as exc:
            status = 507 if isinstance(exc, StoreFull) else 503
            event = error_event(self._format, self.media_type or "", status, str(exc))
            await send({"type": "http.response.body", "body": event, "more_body": True})
        await send({"type": "http.response.body", "body": b"", "more_body": False})


def error_event(fmt: str, media_type: str, status: int, message: str) -> bytes:
    """The error as the last event of a stream in format `fmt` ("" where the
    framing has no place for one: Gemini's JSON array)."""
    body = error_bytes(fmt, status, message)
    if media_type.startswith("text/event-stream"):
        return (b"event: error\n" if fmt == "anthropic" else b"") + b"data: " + body + b"\n\n"
    if "ndjson" in media_type:
        return body + b"\n"
    return b""


def stream_response(
    body: AsyncIterator[bytes], media_type: str, headers: Mapping[str, str] = STREAM_HEADERS
) -> StreamingResponse:
    """A format's rendered stream as the response, unbuffered."""
    return FormatStream(body, media_type=media_type, headers=dict(headers))
