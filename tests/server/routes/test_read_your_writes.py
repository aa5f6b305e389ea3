"""A reply's calls are safe by the time its last byte reaches the client,
and found by whoever asks the server of them right after. On SQLite, safe
is in the call journal (`store/journal.py`: a restart replays it), and the
commit follows behind the reply. Shown with a writer made slow on purpose
(each batch waits before it writes): every format, streamed and not, panel
and route, the journal read right after the reply, then `/bench/pending`
and `/bench/verdict` at once (they wait for the commit), and the calls read
back from a connection of our own after them."""

from __future__ import annotations

import asyncio
import sqlite3
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import httpx
import pytest

from benchwarmers.calls import log
from benchwarmers.runtime import Runtime
from benchwarmers.store import journal
from benchwarmers.store.collections import add_collection
from benchwarmers.store.endpoints import add_endpoint
from benchwarmers.store.models import add_model
from benchwarmers.testing import FakeModel, FakeProvider
from benchwarmers.testing.live_server import LiveServer, live_server

from ...serving import CALL_ID
from .hardening_support import FORMATS, format_request

# How long each of the writer's batches waits before it writes: far longer
# than rendering and sending a reply takes, so a reply that did not wait for
# its commit would be read back before its rows exist.
SLOW_COMMIT = 0.3


async def _register(home: Path, fake: FakeProvider) -> None:
    async with Runtime.open(home) as runtime:
        await add_endpoint(runtime.store, "fake", fake.openai_base, "openai", needs_key=False)
        for alias in ("ryw-a", "ryw-b"):
            fake.add(FakeModel(alias, answer=f"{alias} answers"))
            await add_model(runtime.store, alias, "fake", alias)
        await add_collection(runtime.store, "duo", ["ryw-a", "ryw-b"])
        await add_collection(runtime.store, "drive", ["ryw-a"])


@pytest.fixture(scope="module")
def slow_writer_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveServer]:
    from benchwarmers.testing.fake_provider import FakeProvider

    home = tmp_path_factory.mktemp("ryw") / "home"
    write = log._LogFile.write

    def slow_write(self: log._LogFile, statements: Any) -> None:
        time.sleep(SLOW_COMMIT)
        write(self, statements)

    with FakeProvider() as fake:
        with ThreadPoolExecutor(1) as pool:
            pool.submit(asyncio.run, _register(home, fake)).result()
        with pytest.MonkeyPatch.context() as patch:
            patch.setattr(log._LogFile, "write", slow_write)
            with live_server(home) as server:
                yield server


def journaled(home: Path) -> set[str]:
    """The call ids in the server's journal now (its segment is being written, not removed)."""
    folder = home / f"benchwarmers.db{journal.SUFFIX}"
    rows = (
        journal.decode(line) for path in folder.glob("*.journal") for line in path.read_bytes().splitlines()
    )
    return {row[0]["id"] for row in rows if row is not None}


def committed(home: Path, calls: list[str]) -> set[str]:
    marks = ",".join("?" * len(calls))
    with sqlite3.connect(home / "benchwarmers.db") as db:
        return {row[0] for row in db.execute(f"SELECT id FROM calls WHERE id IN ({marks})", calls)}


@pytest.mark.parametrize("stream", [False, True], ids=["whole", "streamed"])
@pytest.mark.parametrize("fmt", FORMATS)
@pytest.mark.parametrize("mode", ["panel", "route"])
def test_a_replys_calls_are_safe_by_its_last_byte_and_found_at_once(
    slow_writer_server: LiveServer, fmt: str, stream: bool, mode: str
) -> None:
    server = slow_writer_server
    model = "bench/duo" if mode == "panel" else "bench/drive:route"
    path, body = format_request(fmt, model, stream)
    with httpx.Client(base_url=server.url, timeout=30) as client:
        reply = client.post(path, json=body, headers={"x-bench-conversation": f"{fmt}-{stream}"})
        assert reply.status_code == 200, reply.text
        if mode == "route":
            calls = [reply.headers["x-bench-call"]]
        else:
            calls = sorted(set(CALL_ID.findall(reply.text + reply.headers.get("x-bench", ""))))
            assert len(calls) == 2, reply.text
        # Read at once: no waiting, no retry. The writer is still sleeping on its batch.
        assert set(calls) <= journaled(server.home)
        if mode == "panel":
            pending = client.post("/bench/pending", json={"calls": calls})
            assert sorted(pending.json()["pending"]) == calls, pending.text
        verdict = client.post("/bench/verdict", json={"call": calls[0], "useful": True})
        assert verdict.status_code == 200, verdict.text
        assert committed(server.home, calls) == set(calls)
