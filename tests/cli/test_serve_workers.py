"""`benchwarmers serve --workers N`: several processes on one port, on
PostgreSQL + Redis (on SQLite: test_serve_workers_sqlite.py)."""

from __future__ import annotations

import asyncio
import os
import socket
from collections.abc import AsyncIterator
from pathlib import Path

import httpx
import pytest
from prometheus_client.parser import text_string_to_metric_families
from sqlalchemy import func, select

from benchwarmers.errors import UserError
from benchwarmers.runtime import DATABASE_URL_ENV, REDIS_URL_ENV, Runtime
from benchwarmers.server.run import bind_sockets
from benchwarmers.store.collections import add_collection
from benchwarmers.store.endpoints import add_endpoint
from benchwarmers.store.models import add_model
from benchwarmers.store.schema import Call
from benchwarmers.testing.fake_provider import FakeProvider
from benchwarmers.testing.script import FakeModel
from tests.serving import CALL_ID, boards_agree_after_pairs, served
from tests.waiting import eventually

REDIS_URL = "redis://127.0.0.1:6379/0"
ASKS = 40
# Keep-alive clients connecting at once: the kernel hashes each to one worker's socket,
# so all of them landing on one worker by chance is 2 in 2**16.
AT_ONCE = 16


def test_each_worker_has_a_socket_of_its_own_on_the_one_port() -> None:
    sockets = bind_sockets("127.0.0.1", 0, 3)
    try:
        ports = {sock.getsockname()[1] for sock in sockets}
        assert len(sockets) == 3 and len(ports) == 1
        (port,) = ports
        # Taken, by another such group too: refused in one line, never shared.
        with pytest.raises(UserError, match=f"port {port} on 127.0.0.1 is already in use"):
            bind_sockets("127.0.0.1", port, 2)
    finally:
        for sock in sockets:
            sock.close()
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        with pytest.raises(UserError, match="is already in use"):
            bind_sockets("127.0.0.1", taken.getsockname()[1], 2)


@pytest.fixture
def redis_url() -> str:
    from redis import Redis

    client = Redis.from_url(REDIS_URL, socket_connect_timeout=0.5)
    try:
        client.ping()
    except Exception as exc:  # whatever the reason, there is no Redis to serve with
        pytest.skip(f"--workers needs Redis, and there is none on 127.0.0.1:6379 ({type(exc).__name__})")
    finally:
        client.close()
    return REDIS_URL


@pytest.fixture
async def two_workers(
    home: Path, postgres_url: str, redis_url: str, fake_provider: FakeProvider
) -> AsyncIterator[tuple[str, str]]:
    """`serve --workers 2` on PostgreSQL + Redis, a collection of one fake member (wk) and one of
    two (duo); (URL, database URL)."""
    async with Runtime.open(home, database_url=postgres_url) as runtime:
        fake_provider.add(FakeModel("wk-one", answer="from a worker"))
        await add_endpoint(runtime.store, "fake", fake_provider.openai_base, "openai", needs_key=False)
        await add_model(runtime.store, "wk-one", "fake", "wk-one")
        await add_collection(runtime.store, "wk", members=["wk-one"])
        fake_provider.add(FakeModel("wk-two", answer="from another member"))
        await add_model(runtime.store, "wk-two", "fake", "wk-two")
        await add_collection(runtime.store, "duo", members=["wk-one", "wk-two"])
    env = {
        **os.environ,
        "BENCHWARMERS_HOME": str(home),
        DATABASE_URL_ENV: postgres_url,
        REDIS_URL_ENV: redis_url,
    }
    with served("--workers", "2", log=home.parent / "serve.log", env=env) as child:
        yield child.url, postgres_url
    output = child.output()
    assert "2 worker processes" in output, output
    assert child.process.returncode == 0, output


async def test_two_workers_answer_on_one_port_and_lose_nothing(two_workers: tuple[str, str]) -> None:
    url, database_url = two_workers
    # A fresh connection per request, so the kernel hands them to either worker.
    fresh = httpx.Limits(max_keepalive_connections=0)
    async with httpx.AsyncClient(timeout=30, limits=fresh) as client:
        body = {"model": "bench/wk", "messages": [{"role": "user", "content": "hello"}]}
        asks = [client.post(f"{url}/v1/chat/completions", json=body) for _ in range(ASKS)]
        health = [client.get(f"{url}/healthz") for _ in range(ASKS)]
        replies = await asyncio.gather(*asks, *health)
        assert [r.status_code for r in replies] == [200] * (2 * ASKS)
        assert all("from a worker" in r.text for r in replies[:ASKS])
        # Each call a reply named is found at once by either worker (each commits its calls
        # behind its replies): `pending` on a fresh connection per call.
        named = [sorted(set(CALL_ID.findall(reply.text))) for reply in replies[:ASKS]]
        assert all(len(ids) == 1 for ids in named), named
        found = await asyncio.gather(
            *(client.post(f"{url}/bench/pending", json={"calls": ids}) for ids in named)
        )
        assert [reply.json()["pending"] for reply in found] == named
        pids = {r.json()["pid"] for r in replies[ASKS:]}
        for _ in range(20):  # both are listening; a loaded machine may still favour one for a while
            if len(pids) == 2:
                break
            pids |= {
                r.json()["pid"]
                for r in await asyncio.gather(*(client.get(f"{url}/healthz") for _ in range(10)))
            }
        assert len(pids) == 2, pids
        # Every ask's call reaches the shared database, and either worker's scrape counts all of them.
        async with Runtime.open(database_url=database_url) as runtime:
            assert await eventually(lambda: _logged(runtime), lambda logged: logged >= ASKS) == ASKS
        scraped = (await client.get(f"{url}/metrics")).text
    calls = sum(
        sample.value
        for family in text_string_to_metric_families(scraped)
        for sample in family.samples
        if sample.name == "benchwarmers_calls_total" and sample.labels.get("collection") == "wk"
    )
    assert calls == ASKS


async def _logged(runtime: Runtime) -> int:
    """The calls of collection wk in the log."""
    async with runtime.store.read() as session:
        return (
            await session.scalar(select(func.count()).select_from(Call).where(Call.collection == "wk")) or 0
        )


async def test_keep_alive_clients_that_connect_at_once_are_spread_over_the_workers(
    two_workers: tuple[str, str],
) -> None:
    """On one socket shared by both workers, the worker that woke first took
    every connection waiting, and kept its keep-alive clients for good."""
    url, _database_url = two_workers
    clients = [httpx.AsyncClient(timeout=30, limits=httpx.Limits(max_connections=1)) for _ in range(AT_ONCE)]
    try:
        first = await asyncio.gather(*(client.get(f"{url}/healthz") for client in clients))
        again = await asyncio.gather(*(client.get(f"{url}/healthz") for client in clients))
    finally:
        await asyncio.gather(*(client.aclose() for client in clients))
    pids = [reply.json()["pid"] for reply in first]
    assert len(set(pids)) == 2, pids
    assert [reply.json()["pid"] for reply in again] == pids  # each client kept its worker


async def test_the_leaderboard_of_either_worker_shows_a_pair_given_through_the_other(
    two_workers: tuple[str, str],
) -> None:
    """Its counts were read from the store and its scores from the worker's
    cached reads: right after a pair given through the other worker, a board
    showed the new pair beside the score from before it, for up to 2 s."""
    url, _database_url = two_workers
    await boards_agree_after_pairs(url, "duo")
