"""The pooled outbound client every model call shares: our own HTTP/1.1
keep-alive connections (`wire.py`), gated.

Why not httpx (`benchmarks/outbound.py`, loopback, one process, a loaded
2-core box): at 20 concurrent calls httpx's pool did 185 calls/s (p99 477
ms), aiohttp's 2,269 (p99 42 ms); at 200 concurrent httpx did 73 (p99 11 s).
And httpcore's pool leaks a slot for good when a request is cancelled while
it waits for a connection the pool has just assigned it (httpcore #1093,
open): a flood with some seats timing out wedged it (0 of 30 calls answered
after it, on every run), so every call on every endpoint timed out while
the upstreams answered at once. Why not aiohttp's client, which came next:
its request machinery was most of a passthrough's own CPU (`wire.py`).
A panel fans out to hundreds of concurrent streams per endpoint: that is
the load this client is for.

Our own gates stand in front of the pool: a semaphore per origin
(`PER_ORIGIN`) and one for all (`TOTAL`), so no more connections are ever
open than they allow, and a call that cannot get one before its deadline
fails here, clean, as `ProviderBusy`: it never went out, which says
nothing about the model (health checks do not count it). Redirects are not
followed: an endpoint that redirects is misconfigured and is told so
(`transport.py`).

The transport reads a reply as a `Response` (status, headers, body chunks),
so the sending step can be swapped: `_send` is the one place the network
is asked, and `providers/memory.py`'s `MemoryClient` answers there from a
function instead, behind the same gates.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable
from typing import Any, Self

from yarl import URL

from benchwarmers.config import tunables
from benchwarmers.errors import ProviderBusy
from benchwarmers.providers.deadline import Deadline
from benchwarmers.providers.proxy import Proxies
from benchwarmers.providers.wire import Pool, parse_url

PER_ORIGIN = 512
TOTAL = 1024
KEEPALIVE_SECONDS = tunables.KEEPALIVE_SECONDS.value
# The gates give up this long before a call's deadline, so that the call's own
# timeout (the caller's, at the deadline) does not hide why it never went out.
GATE_MARGIN = 0.05


def _nothing() -> None:
    return None


class Response:
    """A reply as the transport reads it: the status, the headers (names
    lower-cased) and the body's chunks as they arrive. `release()` gives
    back the connection and the gates it held (once; the transport calls it
    when the exchange ends, however it ends)."""

    __slots__ = ("_close", "body", "gates", "headers", "status")

    def __init__(
        self,
        status: int,
        headers: dict[str, str],
        body: AsyncIterator[bytes],
        close: Callable[[], object] = _nothing,
    ) -> None:
        self.status = status
        self.headers = headers
        self.body = body
        self._close = close
        self.gates: tuple[asyncio.Semaphore, ...] = ()

    def release(self) -> None:
        self._close()
        self._close = _nothing
        gates, self.gates = self.gates, ()
        for gate in gates:
            gate.release()


class OutboundClient:
    """The session and its gates. Open it inside the loop that will use it:

    async with OutboundClient() as outbound:
        response = await outbound.open("POST", url, body, headers, deadline)
        try: ...
        finally:
            response.release()
    """

    def __init__(self, *, per_origin: int = PER_ORIGIN, total: int = TOTAL) -> None:
        self.per_origin = min(per_origin, total)
        self.total = total
        self._pool: Pool | None = None
        self._all: asyncio.Semaphore | None = None
        self._origins: dict[tuple[str, str | None, int | None], asyncio.Semaphore] = {}
        # The adapters on this client, by API kind (`base.adapter_for`: made once, asked every call).
        self.adapters: dict[str, Any] = {}

    async def __aenter__(self) -> Self:
        self._pool = self._open_pool()
        self._all = asyncio.Semaphore(self.total)
        return self

    def _open_pool(self) -> Pool | None:
        return Pool(KEEPALIVE_SECONDS, Proxies.from_environment())

    async def __aexit__(self, *_: object) -> None:
        self._all = None
        if self._pool is not None:
            self._pool.close()
            self._pool = None

    @property
    def in_flight(self) -> int:
        """Calls holding a connection now."""
        return 0 if self._all is None else self.total - self._all._value

    async def open(
        self,
        method: str,
        url: str,
        body: dict[str, Any] | None,
        headers: dict[str, str],
        deadline: Deadline,
    ) -> Response:
        """The response, status and headers read, body not: the caller must
        `release()` it. Raises `ProviderBusy` when no connection frees up
        before the deadline, `TimeoutError` when no status line came by then,
        `ValueError` for a URL or header it cannot send, `OSError`s otherwise
        (having released what it took)."""
        if self._all is None:
            raise RuntimeError("the outbound client is not open")
        parsed = parse_url(url)
        taken = await self._enter(parsed, deadline.when)
        try:
            with deadline:
                response = await self._send(method, parsed, body, headers)
        except BaseException:
            for gate in taken:
                gate.release()
            raise
        response.gates = taken
        return response

    async def _send(
        self, method: str, url: URL, body: dict[str, Any] | None, headers: dict[str, str]
    ) -> Response:
        """Send, and wait for the status line and headers (the one step a
        `MemoryClient` answers itself)."""
        pool = self._pool
        assert pool is not None
        connection, body_of = await pool.exchange(method, url, body, headers)
        return Response(connection.status, connection.headers, body_of, lambda: pool.give_back(connection))

    async def _enter(self, url: URL, deadline: float | None) -> tuple[asyncio.Semaphore, ...]:
        assert self._all is not None
        key = (url.scheme, url.host, url.port)
        origin = self._origins.get(key)
        if origin is None:
            origin = self._origins[key] = asyncio.Semaphore(self.per_origin)
        taken: list[asyncio.Semaphore] = []
        try:
            for gate in (origin, self._all):
                if deadline is None or not gate.locked():  # free: taken at once, no timer needed
                    await gate.acquire()
                else:
                    async with asyncio.timeout_at(deadline - GATE_MARGIN):
                        await gate.acquire()
                taken.append(gate)
        except TimeoutError:
            for gate in taken:
                gate.release()
            limit, where = (self.per_origin, f"to {url.host}") if not taken else (self.total, "in all")
            raise ProviderBusy(
                f"the call did not go out: all {limit} outbound connections {where} were busy "
                "until its deadline"
            ) from None
        except BaseException:
            for gate in taken:
                gate.release()
            raise
        return tuple(taken)
