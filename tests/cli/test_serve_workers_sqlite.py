"""`benchwarmers serve --workers 2` on the embedded default: SQLite, no Redis.

Real processes on loopback in front of the fake provider: both workers
answer and every call they answered is in the store; a limit is spent once
across the workers (the supervisor's counters, `limits/shared.py`), also
when the worker that counted is killed; a token limit is charged once, its
estimate settled with the reply's count; a worker killed mid-load loses no
call a client was told of (its replacement replays its journal) and the
supervisor carries on with a new one."""

from __future__ import annotations

import asyncio
import os
import signal
import sqlite3
from pathlib import Path

import httpx
import pytest

from benchwarmers.limits.user_limits import set_limits
from benchwarmers.runtime import DATABASE_URL_ENV, REDIS_URL_ENV, Runtime
from benchwarmers.store.collections import add_collection
from benchwarmers.store.db import SQLITE_FILE
from benchwarmers.store.endpoints import add_endpoint
from benchwarmers.store.models import add_model
from benchwarmers.testing.fake_provider import FakeProvider
from benchwarmers.testing.script import FakeModel
from tests.serving import CALL_ID, boards_agree_after_pairs, served

BODY = {"model": "bench/wk", "messages": [{"role": "user", "content": "hello"}]}
ASKS = 40
LIMIT = 5
LIMITED_ASKS = 16
# Calls acknowledged before the kill, and in all: enough that the kill lands mid-load.
BEFORE_KILL = 30
IN_ALL = 90
LOADERS = 6
# Asks one worker acknowledges while the test holds the database locked, then is killed.
HELD = 5
# Real servers on a loaded two-core box: starting two workers and a replacement takes a while.
pytestmark = pytest.mark.timeout(600)


def _env(home: Path) -> dict[str, str]:
    env = {**os.environ, "BENCHWARMERS_HOME": str(home)}
    env.pop(DATABASE_URL_ENV, None)
    env.pop(REDIS_URL_ENV, None)
    return env


async def _register(home: Path, fake: FakeProvider, rpm: int | None = None) -> None:
    fake.add(FakeModel("wk-one", answer="from a worker"))
    async with Runtime.open(home, database_url=None) as runtime:
        await add_endpoint(runtime.store, "fake", fake.openai_base, "openai", needs_key=False)
        await add_model(runtime.store, "wk-one", "fake", "wk-one")
        # A seat refused for the limit gives up after 3 s, not when the minute frees room.
        await add_collection(runtime.store, "wk", members=["wk-one"], seat_timeout=3)
        if rpm is not None:
            await set_limits(runtime.store, "fake", "", {"rpm": rpm})


@pytest.fixture
def sqlite_env(home: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, str]:
    monkeypatch.delenv(DATABASE_URL_ENV, raising=False)
    monkeypatch.delenv(REDIS_URL_ENV, raising=False)
    return _env(home)


def _logged_ids(home: Path) -> set[str]:
    """The call ids in the SQLite file, read past the program (no replay of a journal on the way)."""
    with sqlite3.connect(home / SQLITE_FILE) as connection:
        return {row[0] for row in connection.execute("SELECT id FROM calls WHERE collection = 'wk'")}


async def _pids(client: httpx.AsyncClient, url: str, want: int = 2) -> set[int]:
    """The workers' pids seen at /healthz (fresh connections, which the kernel spreads)."""
    pids: set[int] = set()
    for _ in range(50):
        replies = await asyncio.gather(*(client.get(f"{url}/healthz") for _ in range(10)))
        pids |= {reply.json()["pid"] for reply in replies}
        if len(pids) >= want:
            break
    return pids


async def test_two_workers_on_sqlite_answer_and_log_every_call(
    home: Path, fake_provider: FakeProvider, sqlite_env: dict[str, str]
) -> None:
    await _register(home, fake_provider)
    fresh = httpx.Limits(max_keepalive_connections=0)
    with served("--workers", "2", log=home.parent / "serve.log", env=sqlite_env) as child:
        async with httpx.AsyncClient(timeout=60, limits=fresh) as client:
            replies = await asyncio.gather(
                *(client.post(f"{child.url}/v1/chat/completions", json=BODY) for _ in range(ASKS))
            )
            assert [r.status_code for r in replies] == [200] * ASKS
            named = [sorted(set(CALL_ID.findall(reply.text))) for reply in replies]
            assert all(len(ids) == 1 for ids in named), named
            # Read your writes across workers: `pending` finds every call, on either worker.
            found = await asyncio.gather(
                *(client.post(f"{child.url}/bench/pending", json={"calls": ids}) for ids in named)
            )
            assert [reply.json()["pending"] for reply in found] == named
            assert len(await _pids(client, child.url)) == 2
    output = child.output()
    assert "2 worker processes on the one port (SQLite and the supervisor's limit counters" in output, output
    assert child.process.returncode == 0, output
    assert _logged_ids(home) == {ids[0] for ids in named}


async def test_the_leaderboard_of_either_worker_on_sqlite_shows_a_pair_given_through_the_other(
    home: Path, fake_provider: FakeProvider, sqlite_env: dict[str, str]
) -> None:
    """A board read the pairs it counts from the file and its scores from the
    worker's cached reads: right after a pair given through the other worker,
    the new pair sat beside the score from before it, for up to 2 s."""
    await _register(home, fake_provider)
    fake_provider.add(FakeModel("wk-two", answer="from another member"))
    async with Runtime.open(home, database_url=None) as runtime:
        await add_model(runtime.store, "wk-two", "fake", "wk-two")
        await add_collection(runtime.store, "duo", members=["wk-one", "wk-two"])
    with served("--workers", "2", log=home.parent / "serve.log", env=sqlite_env) as child:
        await boards_agree_after_pairs(child.url, "duo")
    assert child.process.returncode == 0, child.output()


def _status(reply: httpx.Response) -> str:
    if reply.status_code == 429 and "Seat 1 (wk-one): the limit of" in reply.text:
        return "limited"
    assert reply.status_code == 200, reply.text
    [seat] = reply.json()["bench"]["seats"]
    return str(seat["status"])


@pytest.mark.parametrize("kill_one", [False, True], ids=["both-up", "one-killed"])
async def test_two_workers_on_sqlite_let_exactly_the_limit_through(
    home: Path, fake_provider: FakeProvider, sqlite_env: dict[str, str], kill_one: bool
) -> None:
    await _register(home, fake_provider, rpm=LIMIT)
    url = ""
    with served("--workers", "2", log=home.parent / "serve.log", env=sqlite_env) as child:
        url = child.url
        fresh = httpx.Limits(max_keepalive_connections=0)
        async with (
            httpx.AsyncClient(timeout=60, limits=fresh) as spread,
            httpx.AsyncClient(timeout=60, limits=httpx.Limits(max_connections=1)) as kept,
        ):
            assert len(await _pids(spread, url)) == 2
            # One worker (kept's connection) counts two calls, then may be killed mid-window.
            victim = (await kept.get(f"{url}/healthz")).json()["pid"]
            statuses = [_status(await kept.post(f"{url}/v1/chat/completions", json=BODY)) for _ in range(2)]
            assert (await kept.get(f"{url}/healthz")).json()["pid"] == victim
            if kill_one:
                os.kill(victim, signal.SIGKILL)
            # The rest at once, on fresh connections, over whichever workers are up.
            replies = await asyncio.gather(
                *(spread.post(f"{url}/v1/chat/completions", json=BODY) for _ in range(LIMITED_ASKS - 2))
            )
            statuses += [_status(reply) for reply in replies]
            if kill_one:
                assert victim not in await _pids(spread, url)
    assert statuses.count("ok") == LIMIT == fake_provider.calls["wk-one"], statuses
    assert statuses.count("limited") == LIMITED_ASKS - LIMIT
    assert child.process.returncode == 0, child.output()


# A token limit whose calls each estimate their prompt and `TOKEN_MAX` reply
# tokens but use about `TOKEN_WORDS` (the fake counts words): charged once at
# the real count, `TOKEN_LIMIT` lets exactly 4 through (3 x ~201 used + the
# next estimate ~302 fit, 4 x 201 + 302 do not); an estimate never settled
# lets 3 through, one counted twice (estimate and real) 2.
TOKEN_MAX, TOKEN_WORDS, TOKEN_LIMIT, TOKEN_ASKS = 300, 200, 1005, 7


async def test_two_workers_on_sqlite_settle_a_token_estimate_once(
    home: Path, fake_provider: FakeProvider, sqlite_env: dict[str, str]
) -> None:
    """Issue 37: token limits charged once, the estimate settled on the
    reply, also when the calls go through two workers and the supervisor's
    counters (each ask on a fresh connection, which the kernel spreads)."""
    fake_provider.add(FakeModel("wk-tok", answer=" ".join(["word"] * TOKEN_WORDS)))
    async with Runtime.open(home, database_url=None) as runtime:
        await add_endpoint(runtime.store, "fake", fake_provider.openai_base, "openai", needs_key=False)
        await add_model(runtime.store, "wk-tok", "fake", "wk-tok")
        await add_collection(runtime.store, "wk", members=["wk-tok"], seat_timeout=3)
        await set_limits(runtime.store, "fake", "wk-tok", {"tpm": TOKEN_LIMIT})
    ask = {**BODY, "max_tokens": TOKEN_MAX}
    statuses: list[str] = []
    with served("--workers", "2", log=home.parent / "serve.log", env=sqlite_env) as child:
        fresh = httpx.Limits(max_keepalive_connections=0)
        async with httpx.AsyncClient(timeout=60, limits=fresh) as client:
            assert len(await _pids(client, child.url)) == 2
            for _ in range(TOKEN_ASKS):
                reply = await client.post(f"{child.url}/v1/chat/completions", json=ask)
                if reply.status_code == 429:
                    assert "the limit of" in reply.text, reply.text
                    statuses.append("limited")
                else:
                    assert reply.status_code == 200, reply.text
                    [seat] = reply.json()["bench"]["seats"]
                    statuses.append(str(seat["status"]))
                await asyncio.sleep(0.2)  # a settle may land just after its reply is sent
    assert statuses == ["ok"] * 4 + ["limited"] * (TOKEN_ASKS - 4), statuses
    assert fake_provider.calls["wk-tok"] == 4
    per_call = sum(fake_provider.reported["wk-tok"]) / 4  # the fake's totals, both directions
    assert TOKEN_WORDS <= per_call <= TOKEN_WORDS + 10, fake_provider.reported
    assert child.process.returncode == 0, child.output()


async def test_a_worker_killed_mid_load_loses_no_acknowledged_call(
    home: Path, fake_provider: FakeProvider, sqlite_env: dict[str, str]
) -> None:
    """Load on fresh connections over both workers; mid-way, the database
    held locked by the test while one worker answers `HELD` asks on a kept
    connection (acknowledged, in its journal, not committed: the lock is
    shorter than the writers' busy timeout), then that worker SIGKILLed and
    the lock let go. Every call any reply named is in the file after the
    server stops, read without the program (which would replay a journal on
    the way): the replacement replayed the killed worker's."""
    await _register(home, fake_provider)
    acknowledged: list[str] = []
    failed = 0
    killed = asyncio.Event()

    async def load(client: httpx.AsyncClient, url: str) -> None:
        nonlocal failed
        while len(acknowledged) < IN_ALL:
            if len(acknowledged) >= BEFORE_KILL:
                await killed.wait()
            try:
                reply = await client.post(f"{url}/v1/chat/completions", json=BODY)
            except httpx.TransportError:
                failed += 1  # on the killed worker's connection: never acknowledged
                continue
            if reply.status_code == 200:
                acknowledged.extend(set(CALL_ID.findall(reply.text)))
            else:
                failed += 1

    with served("--workers", "2", log=home.parent / "serve.log", env=sqlite_env) as child:
        url = child.url
        fresh = httpx.Limits(max_keepalive_connections=0)
        async with (
            httpx.AsyncClient(timeout=120, limits=fresh) as client,
            httpx.AsyncClient(timeout=120, limits=httpx.Limits(max_connections=1)) as kept,
        ):
            before = await _pids(client, url)
            assert len(before) == 2
            victim = (await kept.get(f"{url}/healthz")).json()["pid"]
            loaders = [asyncio.create_task(load(client, url)) for _ in range(LOADERS)]
            while len(acknowledged) < BEFORE_KILL:
                await asyncio.sleep(0.01)
            lock = sqlite3.connect(home / SQLITE_FILE, isolation_level=None, check_same_thread=False)
            try:
                await asyncio.to_thread(lock.execute, "BEGIN IMMEDIATE")
                held = [await kept.post(f"{url}/v1/chat/completions", json=BODY) for _ in range(HELD)]
                assert [reply.status_code for reply in held] == [200] * HELD
                on_victim = {call for reply in held for call in CALL_ID.findall(reply.text)}
                assert (await kept.get(f"{url}/healthz")).json()["pid"] == victim
                os.kill(victim, signal.SIGKILL)  # mid-load: the loaders' asks are in flight
            finally:
                lock.execute("ROLLBACK")
                lock.close()
            assert not on_victim & _logged_ids(home)  # only in its journal when it died
            acknowledged.extend(on_victim)
            killed.set()
            await asyncio.gather(*loaders)
            # The supervisor replaced it: two workers again, the killed one not among them.
            after: set[int] = set()
            for _ in range(50):
                after = await _pids(client, url)
                if len(after) == 2 and victim not in after:
                    break
                await asyncio.sleep(0.2)
            assert victim not in after and len(after) == 2, (before, after)
            # A fresh worker answers, and its calls are logged like any.
            assert (await client.post(f"{url}/v1/chat/completions", json=BODY)).status_code == 200
    assert child.process.returncode == 0, child.output()
    assert len(acknowledged) >= IN_ALL and failed < IN_ALL, (len(acknowledged), failed)
    assert set(acknowledged) <= _logged_ids(home)
