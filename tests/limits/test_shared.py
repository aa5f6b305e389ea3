"""The supervisor's counters over a Unix socket (`limits/shared.py`): what
the in-process counters do (the whole behaviour suite runs against them too,
tests/limits/test_counters.py's `shared` cases), shared by several clients
as `serve --workers N`'s workers share them, and what a client does when
the service goes away. Real processes: tests/cli/test_serve_workers_sqlite.py."""

from __future__ import annotations

import asyncio
import shutil
import socket
import struct
import tempfile

import pytest

from benchwarmers.limits.counters import Charge
from benchwarmers.limits.shared import CounterService, Service, SocketCounters

T0 = 1_800_000_000.0
LIMIT = 25
ASKS_EACH = 40


async def test_clients_of_one_service_let_exactly_the_limit_through(counter_service: CounterService) -> None:
    """Three clients (three workers), each taking at once many times: all
    their takes together admit exactly the limit."""
    clients = [SocketCounters(counter_service.path) for _ in range(3)]
    rpm = [Charge.sliding("rpm", 1, LIMIT, 60.0), Charge.fixed("rpd", 1, LIMIT * 10, T0 + 3600)]
    try:
        admissions = await asyncio.gather(
            *(client.take(rpm, T0 + i * 0.001) for client in clients for i in range(ASKS_EACH))
        )
        assert sum(a.admitted for a in admissions) == LIMIT
        refused = [a for a in admissions if not a.admitted]
        assert all(a.blocked_by == rpm[0] and a.frees_at == T0 + 60.0 for a in refused)
        # What one counted, another sees: the fixed counter holds exactly the admitted takes.
        assert await clients[2].used("rpd", T0 + 1) == LIMIT
    finally:
        for client in clients:
            await client.close()


async def test_a_settle_through_another_client_corrects_the_take(counter_service: CounterService) -> None:
    """The receipt lives in the service, so any client may settle a take
    (a worker's replacement could), and the token estimate is corrected where it stands."""
    first, second = SocketCounters(counter_service.path), SocketCounters(counter_service.path)
    tpm = [Charge.sliding("tpm", 600, 1000, 60.0)]
    try:
        taken = await first.take(tpm, T0)
        assert taken.admitted and isinstance(taken.receipt, str)
        await second.settle(tpm, taken.receipt, 100, T0 + 1)
        assert (await second.take([Charge.sliding("tpm", 900, 1000, 60.0)], T0 + 2)).admitted
        assert not (await first.take([Charge.sliding("tpm", 1, 1000, 60.0)], T0 + 3)).admitted
    finally:
        await first.close()
        await second.close()


async def test_receipts_are_kept_as_long_as_their_window() -> None:
    service = Service()
    taken = await service.answer(["take", [["tpm", 5, 10, 60.0, 0.0]], T0])
    assert taken[0] == 1 and taken[1] is not None
    fixed_only = await service.answer(["take", [["rpd", 1, 10, 0.0, T0 + 100]], T0])
    assert fixed_only == [1, None]  # nothing to settle in place: no receipt kept
    await service.answer(["take", [["other", 1, 10, 60.0, 0.0]], T0 + 59])
    assert next(iter(service._receipts)) == taken[1] and len(service._receipts) == 2
    await service.answer(["take", [["other", 1, 10, 60.0, 0.0]], T0 + 60])
    assert taken[1] not in service._receipts  # its window aged out: a settle would find nothing
    assert len(service._receipts) == 2


async def test_a_client_hears_when_the_service_goes_away_and_connects_again() -> None:
    """Its waiting requests fail with a ConnectionError (the call is refused
    as with Redis down), and the next request connects afresh."""
    folder = tempfile.mkdtemp(prefix="bw-counters-")
    path = f"{folder}/counters"
    gone = CounterService(path)
    gone.start()
    client = SocketCounters(path)
    try:
        assert (await client.take([Charge.sliding("k", 1, 5, 60.0)], T0)).admitted
        gone.stop()
        with pytest.raises(ConnectionError):
            await client.take([Charge.sliding("k", 1, 5, 60.0)], T0)
        again = CounterService(path)
        again.start()
        try:
            # A new service knows nothing of the old one's counts (a supervisor's restart is a server's).
            assert await client.used("k", T0) is None
            assert (await client.take([Charge.fixed("k", 1, 1, T0 + 10)], T0)).admitted
        finally:
            again.stop()
    finally:
        await client.close()
        shutil.rmtree(folder, ignore_errors=True)


def test_a_frame_that_is_not_ours_drops_that_connection_only(counter_service: CounterService) -> None:
    with socket.socket(socket.AF_UNIX) as stranger:
        stranger.connect(counter_service.path)
        stranger.sendall(struct.pack(">I", 1 << 30))  # larger than any request
        assert stranger.recv(1) == b""  # closed on it

    async def still_serving() -> bool:
        client = SocketCounters(counter_service.path)
        try:
            return (await client.take([Charge.sliding("x", 1, 1, 60.0)], T0)).admitted
        finally:
            await client.close()

    assert asyncio.run(still_serving())
