"""Spend read back (`calls/usage.py`), end to end: calls go to the fake
provider over HTTP, are costed as they end at the price then in effect,
and are grouped by key, collection, model and day, on SQLite and on
PostgreSQL (its day of a timestamp, its one-statement batches)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from datetime import UTC, date, datetime, timedelta
from pathlib import Path

import pytest
from sqlalchemy import select

from benchwarmers.calls.caller import CallContext, Caller, CallResult
from benchwarmers.calls.log import flush_log
from benchwarmers.calls.usage import OWNER, check_by, check_day, check_span, usage
from benchwarmers.errors import UserError
from benchwarmers.limits.ledger import ledger, month_of
from benchwarmers.runtime import Runtime
from benchwarmers.store import prices
from benchwarmers.store.endpoints import add_endpoint
from benchwarmers.store.models import add_model, get_model
from benchwarmers.store.schema import Call
from benchwarmers.testing.fake_provider import FakeProvider
from benchwarmers.testing.script import FakeModel
from benchwarmers.testing.store_template import copy_migrated_store
from benchwarmers.types import Request, Sampling, user

from ..conftest import throwaway_postgres


def today() -> date:
    """Read when asked, not at import: a run that crosses midnight logs its calls on the new day."""
    return datetime.now(UTC).date()


@pytest.fixture(params=["sqlite", "postgresql"])
async def runtime(request: pytest.FixtureRequest, home: Path) -> AsyncIterator[Runtime]:
    if request.param == "sqlite":
        copy_migrated_store(home)
        async with Runtime.open(home=home) as rt:
            yield rt
        return
    async with throwaway_postgres() as url, Runtime.open(home=home, database_url=url) as rt:
        yield rt


async def _call(runtime: Runtime, alias: str, context: CallContext = CallContext()) -> CallResult:
    model = await get_model(runtime.store, alias)
    request = Request(messages=(user("say something short"),), sampling=Sampling(max_tokens=50))
    return await Caller(runtime).call(model, request, kind="seat", timeout=5.0, context=context)


async def _bench(runtime: Runtime, fake: FakeProvider, **priced: tuple[float | None, float | None]) -> None:
    await add_endpoint(runtime.store, "fake", fake.base_for("openai"), "openai", needs_key=False)
    for alias, (price_in, price_out) in priced.items():
        fake.add(FakeModel(alias, answer=f"{alias} answers in a few words"))
        await add_model(runtime.store, alias, "fake", alias, price_in=price_in, price_out=price_out)


async def test_a_price_change_mid_month_costs_old_calls_at_the_old_price(
    runtime: Runtime, fake_provider: FakeProvider
) -> None:
    await _bench(runtime, fake_provider, dear=(2.0, 8.0))
    before = await _call(runtime, "dear")
    await prices.set_prices(runtime.store, "dear", price_in=20.0, price_out=80.0)
    after = await _call(runtime, "dear")
    u1, u2 = before.reply.usage, after.reply.usage
    assert u1.input_tokens > 0 and u1.output_tokens > 0
    old = (u1.input_tokens * 2.0 + u1.output_tokens * 8.0) / 1e6
    new = (u2.input_tokens * 20.0 + u2.output_tokens * 80.0) / 1e6
    assert before.cost_usd == pytest.approx(old) and after.cost_usd == pytest.approx(new)
    await flush_log()
    async with runtime.store.read() as session:
        logged = dict((await session.execute(select(Call.id, Call.cost_usd))).all())
    assert logged == {before.call: pytest.approx(old), after.call: pytest.approx(new)}
    rows, total = await usage(runtime.store, "model", today(), today())
    assert [(r.group, r.calls, r.unpriced_calls) for r in rows] == [("dear", 2, 0)]
    assert total.cost_usd == pytest.approx(old + new)
    (line,) = await ledger(runtime.store, month_of(datetime.now(UTC)))
    assert line.spent.requests == 2
    history = await prices.history(runtime.store, "dear")
    assert [(h.price_in, h.price_out, h.source) for h in history] == [
        (2.0, 8.0, "catalog"),
        (20.0, 80.0, "user"),
    ]


async def test_an_unknown_price_stays_unknown_and_a_free_one_is_zero(
    runtime: Runtime, fake_provider: FakeProvider
) -> None:
    await _bench(runtime, fake_provider, mystery=(None, None), gift=(0.0, 0.0))
    unknown = await _call(runtime, "mystery")
    free = await _call(runtime, "gift")
    assert unknown.status == free.status == "ok"
    assert unknown.cost_usd is None
    assert free.cost_usd == 0.0
    await flush_log()
    rows, total = await usage(runtime.store, "model", today(), today())
    by_model = {r.group: r for r in rows}
    assert (by_model["mystery"].cost_usd, by_model["mystery"].unpriced_calls) == (0.0, 1)
    assert (by_model["gift"].cost_usd, by_model["gift"].unpriced_calls) == (0.0, 0)
    assert (total.calls, total.unpriced_calls) == (2, 1)


async def test_spend_grouped_by_key_collection_model_and_day(
    runtime: Runtime, fake_provider: FakeProvider
) -> None:
    await _bench(runtime, fake_provider, a=(1.0, 1.0), b=(3.0, 3.0))
    results = [
        await _call(runtime, "a", CallContext(collection="trio", key="alice")),
        await _call(runtime, "b", CallContext(collection="trio", key="alice")),
        await _call(runtime, "b", CallContext(collection="duo", key="bob")),
        await _call(runtime, "a"),  # the owner's, no collection
    ]
    cost = [r.cost_usd or 0.0 for r in results]
    await flush_log()

    async def grouped(by: str, key: str | None = None) -> dict[str, tuple[int, float]]:
        rows, _ = await usage(runtime.store, check_by(by), today(), today(), key=key)
        return {r.group: (r.calls, pytest.approx(r.cost_usd)) for r in rows}

    assert await grouped("key") == {"alice": (2, cost[0] + cost[1]), "bob": (1, cost[2]), OWNER: (1, cost[3])}
    assert await grouped("collection") == {
        "trio": (2, cost[0] + cost[1]),
        "duo": (1, cost[2]),
        "(none)": (1, cost[3]),
    }
    assert await grouped("model") == {"a": (2, cost[0] + cost[3]), "b": (2, cost[1] + cost[2])}
    assert await grouped("day") == {today().isoformat(): (4, sum(cost))}
    assert await grouped("model", key="bob") == {"b": (1, cost[2])}  # a key reads its own spend only
    # A span of days that holds none of them holds nothing.
    rows, total = await usage(runtime.store, "day", today() - timedelta(days=9), today() - timedelta(days=1))
    assert rows == [] and total.calls == 0


@pytest.mark.parametrize(
    ("since", "until", "message"),
    [
        ("2026-13-01", "", "since must be a date as YYYY-MM-DD, got '2026-13-01'"),
        ("", "yesterday", "until must be a date as YYYY-MM-DD, got 'yesterday'"),
        ("2026-1-5", "", "since must be a date as YYYY-MM-DD"),
        ("2026-12-05", "2026-12-01", "since (2026-12-05) is after until (2026-12-01)"),
    ],
)
def test_bad_days_are_refused_naming_them(since: str, until: str, message: str) -> None:
    with pytest.raises(UserError, match=message.replace("(", r"\(").replace(")", r"\)")):
        check_span(since, until, date(2026, 12, 4))


def test_an_unknown_by_is_refused_and_the_span_defaults_to_this_month() -> None:
    with pytest.raises(UserError, match="by must be one of key, collection, model, day, got 'week'"):
        check_by("week")
    assert check_span("", "", date(2026, 12, 4)) == (date(2026, 12, 1), date(2026, 12, 4))
    assert check_day("since", "2026-02-28") == date(2026, 2, 28)
