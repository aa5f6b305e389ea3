"""Counters the workers of one `serve --workers N` share without Redis.

Each worker counting provider limits, key rates and budgets in its own
memory would let N times a limit through; Redis is one place they could
share, but a one-machine user should not need it. So the supervisor (the
process that starts and replaces the workers) keeps the one set of
counters, `MemoryCounters` as a single server keeps them, in a thread of
its own, and the workers ask it over a Unix socket (`SocketCounters`, the
same `Counters` interface as the in-memory and Redis backends).

Why exact: the service answers every worker's requests on one event loop,
and `MemoryCounters.take` checks and counts with no `await` between, so
two workers' takes are as serial as two coroutines' in one process. Why
crash-safe: the counts live in the supervisor, not in a worker, so a
worker killed mid-window leaves what it counted counted (its replacement
asks the same service); the supervisor's death ends every worker, as one
process's death ends its memory counters.

The wire: a request is `[op, ...arguments]` and its answer one JSON value,
each framed by a 4-byte length. A worker's coroutines share one
connection and pipeline their requests; answers come back in order. A
take's receipt (which log entries it counted, so `settle` can correct
them in place) stays in the service under an id, kept as long as the
longest of its windows, after which a settle has nothing left to correct.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import struct
import threading
from collections import deque
from collections.abc import Callable, Sequence
from typing import Any

from benchwarmers import ids, jsontext
from benchwarmers.config import environment
from benchwarmers.limits.counters import Admission, Charge, Counters, MemoryCounters, PairCharge

log = logging.getLogger(__name__)

SOCKET_ENV = environment.COUNTERS_SOCKET.name
_LENGTH = struct.Struct(">I")
# A request larger than this is not ours (a charge list is a few hundred bytes).
_MAX_FRAME = 1 << 20


def _frame(value: Any) -> bytes:
    body = jsontext.dumps(value)
    return _LENGTH.pack(len(body)) + body


async def _read_frame(reader: asyncio.StreamReader) -> Any:
    (length,) = _LENGTH.unpack(await reader.readexactly(_LENGTH.size))
    if length > _MAX_FRAME:
        raise ConnectionError(f"a counters frame of {length} bytes")
    return jsontext.loads(await reader.readexactly(length))


def _charges(raw: list[list[Any]]) -> list[Charge]:
    return [
        Charge(str(key), int(amount), int(limit), float(span), float(until))
        for key, amount, limit, span, until in raw
    ]


def _raw(charges: list[Charge]) -> list[list[Any]]:
    return [[c.key, c.amount, c.limit, c.span, c.resets_at] for c in charges]


def _pairs(raw: list[list[Any]]) -> list[PairCharge]:
    return [
        PairCharge(str(key), int(first), int(second), int(first_limit), int(second_limit), float(until))
        for key, first, second, first_limit, second_limit, until in raw
    ]


class Service:
    """The counters themselves, answering requests (one at a time, on one loop)."""

    def __init__(self) -> None:
        self.counters = MemoryCounters()
        # A take's receipt by id, with when it is no use any more (its windows all aged out).
        self._receipts: dict[str, tuple[float, object]] = {}

    async def answer(self, request: list[Any]) -> Any:
        op, args = request[0], request[1:]
        handler: Callable[..., Any] = getattr(self, f"_op_{op}")
        return await handler(*args)

    async def _op_take(self, raw: list[list[Any]], now: float) -> Any:
        charges = _charges(raw)
        self._forget(now)
        admission = await self.counters.take(charges, now)
        if not admission.admitted:
            blocked = admission.blocked_by
            return [0, admission.frees_at, charges.index(blocked) if blocked is not None else -1]
        span = max((c.span for c in charges), default=0.0)
        if not span:
            return [1, None]
        receipt = ids.token_hex(8)
        self._receipts[receipt] = (now + span, admission.receipt)
        return [1, receipt]

    async def _op_adjust(self, raw: list[list[Any]], now: float) -> None:
        await self.counters.adjust(_charges(raw), now)

    async def _op_settle(self, raw: list[list[Any]], receipt: str, amount: int, now: float) -> None:
        kept = self._receipts.get(receipt)
        if kept is not None:
            await self.counters.settle(_charges(raw), kept[1], int(amount), now)

    async def _op_put(self, key: str, used: int, resets_at: float, now: float, only_if_absent: bool) -> None:
        await self.counters.put(
            key, int(used), float(resets_at), float(now), only_if_absent=only_if_absent is True
        )

    async def _op_used(self, key: str, now: float) -> int | None:
        return await self.counters.used(key, float(now))

    async def _op_take_pairs(self, raw: list[list[Any]], now: float) -> int:
        return await self.counters.take_pairs(_pairs(raw), float(now))

    async def _op_adjust_pairs(self, raw: list[list[Any]], first: int, second: int, now: float) -> None:
        await self.counters.adjust_pairs(_pairs(raw), int(first), int(second), float(now))

    async def _op_put_pair(
        self, key: str, first: int, second: int, resets_at: float, now: float, only_if_absent: bool
    ) -> None:
        await self.counters.put_pair(
            key, int(first), int(second), float(resets_at), float(now), only_if_absent=only_if_absent is True
        )

    async def _op_used_pair(self, key: str, now: float) -> tuple[int, int] | None:
        return await self.counters.used_pair(key, float(now))

    def _forget(self, now: float) -> None:
        """Drop receipts whose windows have all aged out, oldest first."""
        receipts = self._receipts
        while receipts:
            first = next(iter(receipts))
            if receipts[first][0] > now:
                return
            del receipts[first]


class CounterService:
    """The service on a Unix socket at `path`, in a thread of its own with
    its own event loop (the supervisor's main thread is uvicorn's)."""

    def __init__(self, path: str) -> None:
        self.path = path
        self.service = Service()
        self._loop = asyncio.new_event_loop()
        self._ready = threading.Event()
        self._stop: asyncio.Event | None = None
        self._failure: BaseException | None = None
        self._connections: dict[asyncio.Task[Any], asyncio.StreamWriter] = {}
        self._thread = threading.Thread(target=self._run, name="counters", daemon=True)

    def start(self) -> None:
        """Listening once this returns (or raises why not)."""
        self._thread.start()
        self._ready.wait()
        if self._failure is not None:
            raise self._failure

    def stop(self) -> None:
        if self._stop is not None:
            self._loop.call_soon_threadsafe(self._stop.set)
        self._thread.join()
        with contextlib.suppress(FileNotFoundError):
            os.unlink(self.path)

    def _run(self) -> None:
        try:
            self._loop.run_until_complete(self._serve())
        finally:
            self._loop.close()

    async def _serve(self) -> None:
        self._stop = asyncio.Event()
        try:
            server = await asyncio.start_unix_server(self._connection, path=self.path)
            os.chmod(self.path, 0o600)
        except BaseException as exc:
            self._failure = exc
            self._ready.set()
            return
        self._ready.set()
        async with server:
            await self._stop.wait()
            server.close()
            # Each worker's connection closed and its handler finished before the loop closes.
            for writer in list(self._connections.values()):
                writer.close()
            await asyncio.gather(*self._connections, return_exceptions=True)

    async def _connection(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        handler = asyncio.current_task()
        assert handler is not None
        self._connections[handler] = writer
        try:
            while True:
                request = await _read_frame(reader)
                writer.write(_frame(await self.service.answer(request)))
        except (asyncio.IncompleteReadError, ConnectionError):
            pass  # the worker went away
        except Exception:  # not our protocol: drop the connection, keep serving the others
            log.exception("a counters request could not be answered")
        finally:
            writer.close()
            del self._connections[handler]


class SocketCounters(Counters):
    """A worker's counters: the supervisor's `CounterService`, over its
    Unix socket. Requests from this process's coroutines share one
    connection, pipelined (one write, the answer read in turn), so a
    charge costs one round trip on the machine, as a Redis script does."""

    def __init__(self, path: str) -> None:
        self.path = path
        self._writer: asyncio.StreamWriter | None = None
        self._reading: asyncio.Task[None] | None = None
        self._waiting: deque[asyncio.Future[Any]] = deque()
        self._connecting: asyncio.Lock | None = None

    async def _ask(self, *request: Any) -> Any:
        writer = self._writer if self._writer is not None else await self._connect()
        answer = asyncio.get_running_loop().create_future()
        self._waiting.append(answer)
        writer.write(_frame(list(request)))
        return await answer

    async def _connect(self) -> asyncio.StreamWriter:
        if self._connecting is None:
            self._connecting = asyncio.Lock()
        async with self._connecting:
            if self._writer is None:
                reader, writer = await asyncio.open_unix_connection(self.path)
                self._reading = asyncio.create_task(self._read(reader), name="counters: answers")
                self._writer = writer
            return self._writer

    async def _read(self, reader: asyncio.StreamReader) -> None:
        error: BaseException = ConnectionError("the counters service closed the connection")
        try:
            while True:
                value = await _read_frame(reader)
                answer = self._waiting.popleft()
                if not answer.done():
                    answer.set_result(value)
        except (asyncio.IncompleteReadError, ConnectionError, OSError) as exc:
            error = ConnectionError(f"the counters service went away ({exc})")
        finally:
            # Whoever waits hears why; the next request connects again.
            writer, self._writer = self._writer, None
            if writer is not None:
                writer.close()
            waiting, self._waiting = self._waiting, deque()
            for answer in waiting:
                if not answer.done():
                    answer.set_exception(error)

    async def take(self, charges: list[Charge], now: float) -> Admission:
        if not charges:
            return Admission(True)
        answer = await self._ask("take", _raw(charges), now)
        if answer[0] == 1:
            return Admission(True, receipt=answer[1])
        blocked = charges[answer[2]] if answer[2] >= 0 else None
        return Admission(False, answer[1], blocked)

    async def adjust(self, charges: list[Charge], now: float) -> None:
        if charges:
            await self._ask("adjust", _raw(charges), now)

    async def _settle_sliding(self, charges: list[Charge], receipt: object, amount: int, now: float) -> None:
        if isinstance(receipt, str):
            await self._ask("settle", _raw(charges), receipt, amount, now)

    async def put(
        self, key: str, used: int, resets_at: float, now: float, *, only_if_absent: bool = False
    ) -> None:
        await self._ask("put", key, used, resets_at, now, only_if_absent)

    async def used(self, key: str, now: float) -> int | None:
        answer = await self._ask("used", key, now)
        return None if answer is None else int(answer)

    async def take_pairs(self, charges: Sequence[PairCharge], now: float) -> int:
        if not charges:
            return -1
        return int(await self._ask("take_pairs", charges, now))

    async def adjust_pairs(self, windows: Sequence[PairCharge], first: int, second: int, now: float) -> None:
        if windows:
            await self._ask("adjust_pairs", windows, first, second, now)

    async def put_pair(
        self, key: str, first: int, second: int, resets_at: float, now: float, *, only_if_absent: bool = False
    ) -> None:
        await self._ask("put_pair", key, first, second, resets_at, now, only_if_absent)

    async def used_pair(self, key: str, now: float) -> tuple[int, int] | None:
        answer = await self._ask("used_pair", key, now)
        return None if answer is None else (int(answer[0]), int(answer[1]))

    async def close(self) -> None:
        writer, self._writer = self._writer, None
        if writer is not None:
            writer.close()
        if self._reading is not None:
            self._reading.cancel()
            await asyncio.gather(self._reading, return_exceptions=True)
