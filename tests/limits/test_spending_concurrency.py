"""Budgets that do not leak: 200 asks at once on a gateway key whose
budget pays for exactly N of them let exactly N through and none over,
on SQLite in one process, on SQLite across two worker processes (`serve
--workers 2`, the budget counted in the supervisor: `limits/shared.py`)
and on PostgreSQL + Redis across two; the reservations of calls that failed
are given back, and what was spent is what the budget says.

The calls let through are held at the provider until every ask has its
answer, so no settle frees room while the 200 are decided: the count is
the reservations' alone, as the budget promises."""

from __future__ import annotations

import asyncio
import os
import threading
import uuid
from collections.abc import Callable
from datetime import UTC, datetime, time, timedelta
from pathlib import Path
from time import sleep

import httpx
import pytest

from benchwarmers.calls.tokens import prompt_tokens, reply_tokens
from benchwarmers.identity.keys import create_key
from benchwarmers.limits.budgets import set_budget
from benchwarmers.runtime import DATABASE_URL_ENV, REDIS_URL_ENV, Runtime
from benchwarmers.store.collections import add_collection
from benchwarmers.store.endpoints import add_endpoint
from benchwarmers.store.models import add_model
from benchwarmers.store.settings import MAX_PANELS, MAX_PANELS_PER_KEY, Settings
from benchwarmers.testing import FakeModel, FakeProvider
from benchwarmers.testing.script import FakeError
from benchwarmers.types import Message, Request, Sampling, Text
from tests.serving import served

# Two server processes and 230 asks on a loaded machine: far more than the default allows.
pytestmark = pytest.mark.timeout(900)
REDIS_URL = "redis://127.0.0.1:6379/0"
ASKS = 200
THROUGH = 20  # what the budget pays for
FAILING = 30
# A run takes well under this even on a loaded machine: started closer to midnight, it waits for it.
MIDNIGHT_MARGIN = 300
MAX_TOKENS = 50
BODY = {"model": "bench/paid", "max_tokens": MAX_TOKENS, "messages": [{"role": "user", "content": "hi"}]}
BROKEN = {**BODY, "model": "bench/broken"}
# The budget's estimate of one ask: the prompt and the reply it allows (`calls/tokens.py`).
ESTIMATE = prompt_tokens(
    Request(messages=(Message("user", (Text("hi"),)),), sampling=Sampling(max_tokens=MAX_TOKENS))
) + reply_tokens(Request(messages=(), sampling=Sampling(max_tokens=MAX_TOKENS)))


async def _register(home: Path, fake: FakeProvider, key: str, database_url: str | None) -> str:
    async with Runtime.open(home, database_url=database_url) as runtime:
        store = runtime.store
        await add_endpoint(store, "fake", fake.openai_base, "openai", needs_key=False)
        await add_model(store, "paid", "fake", "paid", price_in=1.0, price_out=2.0)
        await add_model(store, "broken", "fake", "broken", price_in=1.0, price_out=2.0)
        await add_collection(store, "paid", ["paid"], seat_timeout=600)
        await add_collection(store, "broken", ["broken"], seat_timeout=60)
        await Settings(store).set(MAX_PANELS, 1000)
        await Settings(store).set(MAX_PANELS_PER_KEY, 1000)
        _, secret = await create_key(store, key)
        # Pays for THROUGH asks' estimates and not one more.
        await set_budget(store, "key", key, "day", usd=None, tokens=THROUGH * ESTIMATE + ESTIMATE - 1)
        return secret


async def _flood(
    url: str,
    headers: dict[str, str],
    body: dict[str, object],
    count: int,
    decided: Callable[[list[asyncio.Task[httpx.Response]]], bool] = lambda _: True,
    then: Callable[[], None] = lambda: None,
) -> list[httpx.Response]:
    """`count` asks at once; once `decided(asks)`, `then()`; their replies."""
    fresh = httpx.Limits(max_keepalive_connections=0)  # a connection each: either worker may take it
    async with httpx.AsyncClient(timeout=600, limits=fresh) as client:
        asks = [
            asyncio.create_task(client.post(f"{url}/v1/chat/completions", json=body, headers=headers))
            for _ in range(count)
        ]
        waited = 0.0
        while not decided(asks):
            assert waited < 600, f"{sum(a.done() for a in asks)} of {count} asks answered after 600 s"
            await asyncio.sleep(0.05)
            waited += 0.05
        then()
        return await asyncio.gather(*asks)


def _spent(url: str, headers: dict[str, str], key: str) -> int:
    budgets = httpx.get(f"{url}/bench/budgets", headers=headers, timeout=30).json()["budgets"]
    (mine,) = [b for b in budgets if b["scope"] == "key" and b["name"] == key]
    return int(mine["spentTokens"])


def _clear_of_midnight() -> None:
    """Start clear of UTC midnight: the budget is per day, and a run across
    it gives the asks after it a new day's budget (a CI run at 23:59:59 let
    20 through before midnight and 20 after, as the budget rightly does)."""
    now = datetime.now(UTC)
    to_midnight = (datetime.combine(now.date() + timedelta(days=1), time(), UTC) - now).total_seconds()
    if to_midnight < MIDNIGHT_MARGIN:
        sleep(to_midnight + 1)


def _exactly_n(
    home: Path, counts: Callable[[str], None], label: str, env: dict[str, str], *args: str
) -> None:
    key = f"budget-{uuid.uuid4().hex[:10]}"  # Redis outlives the test: counters of its own
    _clear_of_midnight()
    hold = threading.Event()
    with FakeProvider() as fake:
        fake.add(FakeModel("paid", answer="paid answer", hold=hold))
        fake.add(FakeModel("broken", error=FakeError(500, "down")))
        secret = asyncio.run(_register(home, fake, key, env.get(DATABASE_URL_ENV)))
        headers = {"authorization": f"Bearer {secret}"}
        child_env = {**os.environ, "BENCHWARMERS_HOME": str(home), **env}
        with served(*args, log=home.parent / "serve.log", env=child_env) as child:

            def decided(asks: list[asyncio.Task[httpx.Response]]) -> bool:
                """Every ask decided: the refused answered, the admitted held at the provider."""
                answered = sum(ask.done() for ask in asks)
                return answered + fake.calls["paid"] >= ASKS

            replies = asyncio.run(_flood(child.url, headers, BODY, ASKS, decided, hold.set))
            statuses = [r.status_code for r in replies]
            refused = [r for r in replies if r.status_code == 429]
            spent = _spent(child.url, headers, key)
            # Calls that fail give their reservations back: the budget is where it was.
            failed = asyncio.run(_flood(child.url, headers, BROKEN, FAILING))
            spent_after_failures = _spent(child.url, headers, key)
            reached = fake.calls["paid"]
            broken_sent = fake.calls["broken"]
    counts(
        f"budgets ({label}): {ASKS} asks at once, {statuses.count(200)} through, {len(refused)} refused, "
        f"{reached} reached the provider; budget pays for {THROUGH}; {FAILING} failing calls "
        f"({broken_sent} sent) left the spend at {spent_after_failures} (was {spent})"
    )
    assert statuses.count(200) == THROUGH == reached
    assert len(refused) == ASKS - THROUGH
    for reply in refused:
        assert reply.headers["retry-after"].isdigit() and int(reply.headers["retry-after"]) >= 1
        assert f"budget key {key} per day:" in reply.json()["error"]["message"]
    # Settled at their real cost: under the estimates, never over the budget.
    assert 0 < spent <= THROUGH * ESTIMATE
    assert all(r.status_code != 200 for r in failed) and broken_sent > 0
    assert spent_after_failures == spent


def test_sqlite_one_process_lets_exactly_the_budget_through(
    home: Path, counts: Callable[[str], None]
) -> None:
    _exactly_n(home, counts, "SQLite, one process", {DATABASE_URL_ENV: "", REDIS_URL_ENV: ""})


def test_two_workers_on_sqlite_let_exactly_the_budget_through(
    home: Path, counts: Callable[[str], None]
) -> None:
    env = {DATABASE_URL_ENV: "", REDIS_URL_ENV: ""}
    _exactly_n(home, counts, "SQLite, --workers 2", env, "--workers", "2")


@pytest.fixture
def redis_url() -> str:
    from redis import Redis

    client = Redis.from_url(REDIS_URL, socket_connect_timeout=0.5)
    try:
        client.ping()
    except Exception as exc:  # no Redis to share counters in, whatever the reason
        pytest.skip(f"no Redis on 127.0.0.1:6379 ({type(exc).__name__})")
    finally:
        client.close()
    return REDIS_URL


def test_two_workers_on_postgres_and_redis_let_exactly_the_budget_through(
    home: Path, postgres_url: str, redis_url: str, counts: Callable[[str], None]
) -> None:
    env = {DATABASE_URL_ENV: postgres_url, REDIS_URL_ENV: redis_url}
    _exactly_n(home, counts, "PostgreSQL + Redis, --workers 2", env, "--workers", "2")
