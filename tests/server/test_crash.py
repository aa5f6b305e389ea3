"""Crash safety: the real server (`benchwarmers serve`, a child process) is
killed with SIGKILL under load, three times, on SQLite and on PostgreSQL.
After each restart the store passes its integrity check, every verdict
acknowledged with a 200 is there, and every seat whose answer reached a
client is in the call log."""

from __future__ import annotations

import asyncio
import sqlite3
import threading
import time
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import asyncpg
import httpx
import pytest

from benchwarmers.runtime import Runtime
from benchwarmers.store.collections import add_collection
from benchwarmers.store.db import SQLITE_FILE
from benchwarmers.store.endpoints import add_endpoint
from benchwarmers.store.models import add_model
from benchwarmers.testing import FakeModel, FakeProvider

from ..conftest import throwaway_postgres
from .child_server import Child

KILLS = 3
CLIENTS = 8
PROGRESS = 5  # verdicts acknowledged in each run before the kill
MAX_LOAD_SECONDS = 60.0


async def _register(home: Path, url: str | None, fake: FakeProvider) -> None:
    async with Runtime.open(home, url) as runtime:
        await add_endpoint(runtime.store, "fake", fake.openai_base, "openai", needs_key=False)
        for alias in ("a", "b", "c"):
            fake.add(FakeModel(alias, answer=f"{alias} answers", latency=0.02))
            await add_model(runtime.store, alias, "fake", alias)
        await add_collection(runtime.store, "trio", ["a", "b", "c"])


class Load:
    """Clients asking and judging until told to stop; what they were told."""

    def __init__(self, url: str) -> None:
        self.url = url
        self.stop = threading.Event()
        self.lock = threading.Lock()
        self.told: set[str] = set()  # seat call ids whose answers a client received
        self.acked: set[str] = set()  # verdicts answered 200
        self.sent = 0
        self.server_errors = 0

    def client(self) -> None:
        with httpx.Client(base_url=self.url, timeout=10) as http:
            while not self.stop.is_set():
                try:
                    self._once(http)
                except httpx.HTTPError:
                    time.sleep(0.01)  # the server is gone (killed): keep trying until told to stop

    def _once(self, http: httpx.Client) -> None:
        body = {"model": "bench/trio", "messages": [{"role": "user", "content": "hi"}]}
        with self.lock:
            self.sent += 1
        reply = http.post("/v1/chat/completions", json=body)
        self._count(reply)
        if reply.status_code != 200:
            return
        seats = [s["call"] for s in reply.json()["bench"]["seats"] if s["status"] == "ok"]
        with self.lock:
            self.told.update(seats)
            self.sent += 1
        verdict = http.post("/bench/verdict", json={"call": seats[0], "useful": True, "note": "crash test"})
        self._count(verdict)
        if verdict.status_code == 200:
            with self.lock:
                self.acked.add(seats[0])

    def _count(self, reply: httpx.Response) -> None:
        if reply.status_code >= 500:
            with self.lock:
                self.server_errors += 1


def _sqlite_check(home: Path, told: set[str], acked: set[str]) -> tuple[int, int]:
    with sqlite3.connect(home / SQLITE_FILE) as db:
        assert db.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
        calls = {row[0] for row in db.execute("SELECT id FROM calls")}
        verdicts = {row[0] for row in db.execute("SELECT call_id FROM verdicts")}
    return len(told & calls), len(acked & verdicts)


async def _postgres_check(url: str, told: set[str], acked: set[str]) -> tuple[int, int]:
    connection = await asyncpg.connect(url)
    try:
        calls = {row[0] for row in await connection.fetch("SELECT id FROM calls")}
        verdicts = {row[0] for row in await connection.fetch("SELECT call_id FROM verdicts")}
        orphans = await connection.fetchval(
            "SELECT count(*) FROM verdicts v LEFT JOIN calls c ON c.id = v.call_id WHERE c.id IS NULL"
        )
        assert orphans == 0
    finally:
        await connection.close()
    return len(told & calls), len(acked & verdicts)


def _crash_cycles(home: Path, url: str | None, counts: Callable[[str], None]) -> None:
    child = Child(home, url)
    try:
        child.start()
        load = Load(child.url)
        for kill in range(KILLS):
            load.stop.clear()
            with ThreadPoolExecutor(CLIENTS) as pool:
                for _ in range(CLIENTS):
                    pool.submit(load.client)
                # Kill once this run has made progress, with asks and verdicts in flight.
                progress_from = len(load.acked)
                deadline = time.monotonic() + MAX_LOAD_SECONDS
                while len(load.acked) < progress_from + PROGRESS and time.monotonic() < deadline:
                    time.sleep(0.05)
                child.kill()
                load.stop.set()
            child.start()  # the store opens (and recovers) after the kill; the next round loads it
            if url is None:
                found_seats, found_verdicts = _sqlite_check(home, load.told, load.acked)
            else:
                found_seats, found_verdicts = asyncio.run(_postgres_check(url, load.told, load.acked))
            counts(
                f"crash {kill + 1}/{KILLS} ({'postgres' if url else 'sqlite'}): {load.sent} requests sent, "
                f"{load.server_errors} 5xx, seats told/found {len(load.told)}/{found_seats}, "
                f"verdicts acked/found {len(load.acked)}/{found_verdicts}"
            )
            assert load.server_errors == 0
            assert found_seats == len(load.told) and found_verdicts == len(load.acked)
        assert len(load.acked) >= KILLS * PROGRESS, "the load made too little progress to prove anything"
    finally:
        child.stop()


@pytest.fixture
def fake() -> Iterator[FakeProvider]:
    with FakeProvider() as provider:
        yield provider


def test_sigkill_under_load_loses_nothing_on_sqlite(
    home: Path, fake: FakeProvider, counts: Callable[[str], None]
) -> None:
    asyncio.run(_register(home, None, fake))
    _crash_cycles(home, None, counts)


async def test_sigkill_under_load_loses_nothing_on_postgres(
    home: Path, fake: FakeProvider, counts: Callable[[str], None]
) -> None:
    async with throwaway_postgres() as url:
        await _register(home, url, fake)
        await asyncio.to_thread(_crash_cycles, home, url, counts)
