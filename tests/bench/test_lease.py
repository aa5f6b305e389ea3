"""One process at a time holds a lease: across replicas on PostgreSQL, and
between processes on one SQLite data folder."""

from __future__ import annotations

import asyncio
from pathlib import Path
from types import SimpleNamespace
from typing import Any

from benchwarmers.bench.leases import Lease
from benchwarmers.runtime import Runtime
from benchwarmers.store.db import Store


async def test_one_replica_holds_the_lease_and_another_takes_over(postgres_url: str, tmp_path: Path) -> None:
    first, second = Store(postgres_url), Store(postgres_url)
    try:
        one, two = Lease(first, tmp_path, "scheduler"), Lease(second, tmp_path, "scheduler")
        other_name = Lease(second, tmp_path, "onboarding")
        assert await other_name.acquire()  # another name, another lease
        await other_name.release()
        assert await one.acquire() and one.held
        assert not await two.acquire() and not two.held
        assert await one.acquire()  # holding it already: still ours
        await one.release()
        assert await two.acquire() and two.held
        await two.release()
    finally:
        await first.close()
        await second.close()


async def test_on_sqlite_a_file_lock_keeps_a_second_process_out(runtime: Runtime) -> None:
    one = Lease(runtime.store, runtime.home, "scheduler")
    two = Lease(runtime.store, runtime.home, "scheduler")  # as another process would open it
    assert await one.acquire() and not await two.acquire()
    await one.release()
    assert await two.acquire()
    await two.release()


class _StuckConnection:
    """A connection whose lock query never answers, and that says when closed."""

    def __init__(self) -> None:
        self.asked = asyncio.Event()
        self.closed = False

    async def scalar(self, *_: Any) -> bool:
        self.asked.set()
        await asyncio.Event().wait()
        raise AssertionError("never answered")

    async def close(self) -> None:
        self.closed = True


async def test_an_acquire_cancelled_mid_query_closes_its_connection(tmp_path: Path) -> None:
    connection = _StuckConnection()

    async def connect() -> _StuckConnection:
        return connection

    replica = SimpleNamespace(is_sqlite=False, engine=SimpleNamespace(connect=connect))
    lease = Lease(replica, tmp_path, "scheduler")  # type: ignore[arg-type]
    acquiring = asyncio.create_task(lease.acquire())
    await connection.asked.wait()
    acquiring.cancel()
    await asyncio.gather(acquiring, return_exceptions=True)
    assert acquiring.cancelled() and connection.closed and not lease.held
