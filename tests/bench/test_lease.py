"""One process at a time holds a lease: across replicas on PostgreSQL, and
between processes on one SQLite data folder."""

from __future__ import annotations

from pathlib import Path

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
