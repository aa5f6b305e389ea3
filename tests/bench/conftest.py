"""Fixtures for the bench's tests.

- `bench`: a runtime whose endpoint `fake` is the fake provider (OpenAI API,
  no key); `add_fake` (root conftest) gives fake models that answer the
  probes the way a capable model would.
- `offline`: a bench whose endpoint `local` nothing answers, for the
  decisions, which read the store only; `seat(...)` writes seats and
  verdicts as the panel would (rows in `calls`, verdicts through
  `record_verdict`); `judge_pair(...)` writes an ask's two seats and a
  pair judged between them (through `record_pairs`).
"""

from __future__ import annotations

import uuid
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime

import pytest

from benchwarmers.calls.pairs import PairJudgement, record_pairs
from benchwarmers.calls.verdicts import record_verdict
from benchwarmers.runtime import Runtime
from benchwarmers.store.db import Store
from benchwarmers.store.endpoints import add_endpoint
from benchwarmers.store.schema import Call
from benchwarmers.testing import FakeProvider


@pytest.fixture
async def bench(runtime: Runtime, fake_provider: FakeProvider) -> Runtime:
    await add_endpoint(runtime.store, "fake", fake_provider.openai_base, "openai", needs_key=False)
    return runtime


Seat = Callable[..., Awaitable[str]]


@pytest.fixture
async def offline(runtime: Runtime) -> Runtime:
    """A bench on an endpoint nothing answers: decisions read the store only."""
    await add_endpoint(runtime.store, "local", "http://127.0.0.1:9/v1", "openai", needs_key=False)
    return runtime


@pytest.fixture
def seat(offline: Runtime) -> Seat:
    """seat(alias, collection, shape, useful=None|True|False, explorer=False) -> call id"""

    async def add(
        alias: str,
        collection: str = "trio",
        shape: str = "short",
        useful: bool | None = None,
        explorer: bool = False,
    ) -> str:
        call_id = uuid.uuid4().hex
        now = datetime.now(UTC)
        async with offline.store.write() as session:
            session.add(
                Call(
                    id=call_id,
                    at=now,
                    kind="seat",
                    alias=alias,
                    task=f"panel seat (bench/{collection}, {shape})",
                    collection=collection,
                    shape=shape,
                    status="ok",
                    explorer=explorer,
                )
            )
        if useful is not None:
            await record_verdict(offline.store, call_id, useful)
        return call_id

    return add


async def judge_pair(
    store: Store, collection: str, i: int, better: str, worse: str, outcome: str = "better"
) -> None:
    """Ask `i` of `collection` on short: a seat of `better` and one of
    `worse` (calls `{alias}{i}`), the pair judged `outcome` between them."""
    async with store.write() as session:
        for alias in (better, worse):
            session.add(
                Call(
                    id=f"{alias}{i}",
                    at=datetime.now(UTC),
                    kind="seat",
                    alias=alias,
                    collection=collection,
                    shape="short",
                    ask_id=f"ask{i}",
                    status="ok",
                )
            )
    await record_pairs(store, PairJudgement(outcome, (f"{better}{i}", f"{worse}{i}")))
