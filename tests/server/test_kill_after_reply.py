"""A call whose reply reached the client survives SIGKILL of the server
sent the instant the reply is in: the real server (`benchwarmers serve`, a
child process per ask) is killed right after its reply, started again on the
same data, and every call the reply named is in the call log. The child's
call-log writer is made slow on purpose (each batch waits before it
writes, through a `sitecustomize` on its path), so a reply that ended
before its commit would lose its calls here. Panel and route, streamed and
not, on SQLite and on PostgreSQL."""

from __future__ import annotations

import asyncio
import sqlite3
from collections.abc import Iterator
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
from ..serving import CALL_ID
from .child_server import Child

SLOW_WRITER = """
import asyncio
from benchwarmers.calls import log

_write = log._LogWriter._write


async def _slow_write(self, rows):
    await asyncio.sleep(0.5)
    await _write(self, rows)


log._LogWriter._write = _slow_write
"""
ASKS = [
    # (path, body, whether the call ids come from the x-bench-call header)
    ("/v1/chat/completions", {"model": "bench/duo", "messages": [{"role": "user", "content": "hi"}]}, False),
    (
        "/v1/messages",
        {
            "model": "bench/duo",
            "max_tokens": 50,
            "stream": True,
            "messages": [{"role": "user", "content": "hi"}],
        },
        False,
    ),
    (
        "/v1/chat/completions",
        {"model": "bench/drive:route", "stream": True, "messages": [{"role": "user", "content": "hi"}]},
        True,
    ),
    (
        "/api/chat",
        {"model": "bench/drive:route", "stream": False, "messages": [{"role": "user", "content": "hi"}]},
        True,
    ),
]


async def _register(home: Path, url: str | None, fake: FakeProvider) -> None:
    async with Runtime.open(home, url) as runtime:
        await add_endpoint(runtime.store, "fake", fake.openai_base, "openai", needs_key=False)
        for alias in ("kill-a", "kill-b"):
            fake.add(FakeModel(alias, answer=f"{alias} answers"))
            await add_model(runtime.store, alias, "fake", alias)
        await add_collection(runtime.store, "duo", ["kill-a", "kill-b"])
        await add_collection(runtime.store, "drive", ["kill-a"])


def _kill_after_each_reply(home: Path, url: str | None, slow: Path) -> list[list[str]]:
    """Each ask against a slow child of its own (started side by side on the
    same data, so their starts overlap), killed as soon as its reply is
    read; the call ids each reply named. A child writes only its own calls,
    so the others still running cannot save a killed one's."""
    named: list[list[str]] = []
    children = [Child(home, url, PYTHONPATH=str(slow)) for _ in ASKS]
    try:
        for child in children:
            child.launch()
        for child, (path, body, from_header) in zip(children, ASKS, strict=True):
            child.until_serving()
            reply = httpx.post(child.url + path, json=body, timeout=30)
            child.kill()
            assert reply.status_code == 200, reply.text
            calls = (
                [reply.headers["x-bench-call"]] if from_header else sorted(set(CALL_ID.findall(reply.text)))
            )
            assert calls, reply.text
            named.append(calls)
        after = Child(home, url)
        children.append(after)
        after.start()  # on the same data: the store opens after the kills
    finally:
        for child in children:
            child.stop()
    return named


@pytest.fixture
def slow(tmp_path: Path) -> Path:
    folder = tmp_path / "slow-writer"
    folder.mkdir()
    (folder / "sitecustomize.py").write_text(SLOW_WRITER)
    return folder


@pytest.fixture
def fake() -> Iterator[FakeProvider]:
    with FakeProvider() as provider:
        yield provider


def test_a_replied_call_survives_sigkill_on_sqlite(home: Path, fake: FakeProvider, slow: Path) -> None:
    asyncio.run(_register(home, None, fake))
    named = _kill_after_each_reply(home, None, slow)
    with sqlite3.connect(home / SQLITE_FILE) as db:
        assert db.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
        logged = {row[0] for row in db.execute("SELECT id FROM calls")}
    for calls in named:
        assert set(calls) <= logged


async def test_a_replied_call_survives_sigkill_on_postgres(
    home: Path, fake: FakeProvider, slow: Path
) -> None:
    async with throwaway_postgres() as url:
        await _register(home, url, fake)
        named = await asyncio.to_thread(_kill_after_each_reply, home, url, slow)
        connection = await asyncpg.connect(url)
        try:
            logged = {row[0] for row in await connection.fetch("SELECT id FROM calls")}
        finally:
            await connection.close()
    for calls in named:
        assert set(calls) <= logged
