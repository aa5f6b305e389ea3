"""The in-memory wire: an outbound client whose calls a function answers,
with no socket, as httpx's `MockTransport` does for httpx. The adapters'
unit tests run on it (tests/providers/test_openai.py and its siblings), so
every API's request shape, reply parsing, streaming and error mapping is
checked in milliseconds and without a network.

    def handler(request: WireRequest) -> WireResponse:
        assert request.json["model"] == "m1"
        return WireResponse.json({"choices": [...]}, headers={"x-ratelimit-remaining-requests": "9"})

    async with MemoryClient(handler) as outbound:
        chunks = adapter_for("openai", outbound).execute(target, request, stream=False)

Only the send is replaced (`OutboundClient._send`): the gates, the deadline
and the transport's reading and error mapping are the real ones. The
handler sees the body as it would go out (through JSON, as `wire.py`
sends it) and the headers lower-cased. It may be sync or async; it
fails the send by raising (`ConnectionRefusedError` is a refused
connection, and an awaited event that never comes is a provider that never
answers). A reply's body is bytes, or chunks one by one: an exception
among them breaks the stream there (`broken()` is the one `wire.py` raises
when a connection closes mid-body), and an async iterable may wait between
chunks (a stall).
"""

from __future__ import annotations

import inspect
import json
from collections.abc import AsyncIterable, AsyncIterator, Awaitable, Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from yarl import URL

from benchwarmers.providers.outbound import PER_ORIGIN, TOTAL, OutboundClient, Response
from benchwarmers.providers.wire import WireError

Body = bytes | Iterable[bytes | BaseException] | AsyncIterable[bytes]


def broken() -> WireError:
    """What `wire.py` raises when the connection closes mid-body."""
    return WireError("the connection closed before the reply ended")


@dataclass(frozen=True, slots=True)
class WireRequest:
    """One call as it would reach the provider."""

    method: str
    url: URL
    headers: dict[str, str]
    json: Any  # the body after a JSON round trip; None for a GET

    @property
    def path(self) -> str:
        return self.url.path


@dataclass(frozen=True, slots=True)
class WireResponse:
    status: int = 200
    headers: dict[str, str] = field(default_factory=dict)
    body: Body = b""

    @classmethod
    def json(cls, data: Any, status: int = 200, headers: dict[str, str] | None = None) -> WireResponse:
        return cls(status, {"content-type": "application/json", **(headers or {})}, json.dumps(data).encode())

    @classmethod
    def sse(cls, *events: Any, headers: dict[str, str] | None = None, status: int = 200) -> WireResponse:
        """A Server-Sent Events body, one chunk per event. An event is a JSON
        value (`data:` only), an `(event name, value)` pair, a str (sent as
        the data line as it is, e.g. `[DONE]`) or an exception (the stream
        breaks there)."""
        chunks = [_sse(event) for event in events]
        return cls(status, {"content-type": "text/event-stream", **(headers or {})}, chunks)

    @classmethod
    def ndjson(cls, *lines: Any, headers: dict[str, str] | None = None, status: int = 200) -> WireResponse:
        """An NDJSON body, one chunk per line (a str as it is, an exception
        breaks the stream there)."""
        chunks = [line if isinstance(line, BaseException) else _ndjson(line) for line in lines]
        return cls(status, {"content-type": "application/x-ndjson", **(headers or {})}, chunks)


Handler = Callable[[WireRequest], WireResponse | Awaitable[WireResponse]]


class MemoryClient(OutboundClient):
    """An `OutboundClient` whose every call `handler` answers in memory;
    `requests` keeps what was sent, in order."""

    def __init__(self, handler: Handler, *, per_origin: int = PER_ORIGIN, total: int = TOTAL) -> None:
        super().__init__(per_origin=per_origin, total=total)
        self.handler = handler
        self.requests: list[WireRequest] = []

    def _open_pool(self) -> None:
        return None  # no socket, no connections

    async def _send(
        self, method: str, url: URL, body: dict[str, Any] | None, headers: dict[str, str]
    ) -> Response:
        sent = {name.lower(): value for name, value in headers.items()}
        if body is not None:
            sent.setdefault("content-type", "application/json")
        request = WireRequest(method, url, sent, None if body is None else json.loads(json.dumps(body)))
        self.requests.append(request)
        answer = self.handler(request)
        response = await answer if inspect.isawaitable(answer) else answer
        found = {name.lower(): value for name, value in response.headers.items()}
        return Response(response.status, found, _chunks(response.body))


async def _chunks(body: Body) -> AsyncIterator[bytes]:
    if isinstance(body, bytes):
        if body:
            yield body
        return
    if isinstance(body, AsyncIterable):
        async for chunk in body:
            yield chunk
        return
    for item in body:
        if isinstance(item, BaseException):
            raise item
        yield item


def _sse(event: Any) -> bytes | BaseException:
    if isinstance(event, BaseException):
        return event
    name, data = event if isinstance(event, tuple) else ("", event)
    line = data if isinstance(data, str) else json.dumps(data)
    return (f"event: {name}\n" if name else "").encode() + f"data: {line}\n\n".encode()


def _ndjson(line: Any) -> bytes:
    return (line if isinstance(line, str) else json.dumps(line)).encode() + b"\n"
