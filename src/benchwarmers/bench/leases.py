"""Leases: "only one process does this" across processes and replicas.

The scheduler's jobs and the onboarding queue must each be worked by one
process at a time: two schedulers would probe every model twice, and two
queue workers could both "resume" the same interrupted item. A lease is
held for as long as the holder runs, and frees itself when the holder dies,
so another process takes over without anyone cleaning up:

* PostgreSQL (several replicas): a session advisory lock
  (`pg_try_advisory_lock`) held on a dedicated connection; a dead replica's
  connection closes and the lock with it.
* SQLite (one machine: the server, maybe a CLI beside it): an exclusive
  `flock` on a file in the data folder; the kernel drops it when the
  process exits. Where `fcntl` does not exist (Windows) the lease is always
  granted: one process per data folder is the norm there.
"""

from __future__ import annotations

import zlib
from pathlib import Path
from typing import IO

from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncConnection

from benchwarmers.store.db import Store

try:
    import fcntl
except ImportError:  # Windows
    fcntl = None  # type: ignore[assignment]


class Lease:
    def __init__(self, store: Store, home: Path, name: str) -> None:
        self.store = store
        self.name = name
        self.path = home / f"{name}.lock"
        # The same 32-bit number on every replica for the same name.
        self.key = zlib.crc32(f"benchwarmers:{name}".encode())
        self._connection: AsyncConnection | None = None
        self._file: IO[bytes] | None = None
        self._granted = False

    @property
    def held(self) -> bool:
        return self._connection is not None or self._file is not None or self._granted

    async def acquire(self) -> bool:
        """Take the lease if it is free; True when this process holds it."""
        if self.held:
            return True
        if self.store.is_sqlite:
            return self._acquire_file()
        connection = await self.store.engine.connect()
        try:
            got = await connection.scalar(text("SELECT pg_try_advisory_lock(:key)"), {"key": self.key})
        except BaseException:  # a cancelled acquire too: the connection is not left to the collector
            await connection.close()
            raise
        if got:
            self._connection = connection
            return True
        await connection.close()
        return False

    def _acquire_file(self) -> bool:
        if fcntl is None:
            self._granted = True
            return True
        handle = self.path.open("ab")
        try:
            fcntl.flock(handle.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            handle.close()
            return False
        self._file = handle
        return True

    async def release(self) -> None:
        self._granted = False
        if self._file is not None:
            handle, self._file = self._file, None
            if fcntl is not None:
                fcntl.flock(handle.fileno(), fcntl.LOCK_UN)
            handle.close()
        if self._connection is not None:
            connection, self._connection = self._connection, None
            try:
                await connection.execute(text("SELECT pg_advisory_unlock(:key)"), {"key": self.key})
            finally:
                await connection.close()
