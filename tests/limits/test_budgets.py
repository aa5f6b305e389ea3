"""Budgets as the user sets them: amounts read strictly (USD only, never
negative), calendar windows in UTC, a cost from prices, and a budget saved
only for a scope that exists."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from benchwarmers.errors import NotFound, UserError
from benchwarmers.identity.keys import create_key, revoke_key
from benchwarmers.limits.budgets import (
    Budget,
    all_budgets,
    clear_budgets,
    cost_nano,
    parse_tokens,
    parse_usd,
    set_budget,
    window,
)
from benchwarmers.runtime import Runtime
from benchwarmers.store.collections import add_collection
from benchwarmers.store.endpoints import add_endpoint
from benchwarmers.store.models import add_model


@pytest.mark.parametrize(
    ("given", "usd"), [("5", 5.0), ("$0.25", 0.25), ("USD 3", 3.0), (2, 2.0), (None, None)]
)
def test_usd_amounts_read(given: object, usd: float | None) -> None:
    assert parse_usd(given) == usd


@pytest.mark.parametrize("given", ["-1", -0.01, "five", "EUR5", "5€", "nan", "inf", True, "1e12"])
def test_bad_usd_amounts_are_refused(given: object) -> None:
    with pytest.raises(UserError):
        parse_usd(given)


def test_another_currency_is_refused() -> None:
    with pytest.raises(UserError, match="budgets are in USD; currency 'EUR' is not taken"):
        parse_usd("5", "EUR")
    assert parse_usd("5", "usd") == 5.0


@pytest.mark.parametrize(
    ("given", "tokens"), [("1000", 1000), (0, 0), ("1_000", 1000), (3.0, 3), (None, None)]
)
def test_token_amounts_read(given: object, tokens: int | None) -> None:
    assert parse_tokens(given) == tokens


@pytest.mark.parametrize("given", ["-3", -1, 2.5, "lots", True, "1.5"])
def test_bad_token_amounts_are_refused(given: object) -> None:
    with pytest.raises(UserError, match="whole number"):
        parse_tokens(given)


def test_windows_are_utc_calendar_day_week_and_month() -> None:
    now = datetime(2026, 12, 31, 23, 30, tzinfo=UTC)  # a Thursday
    assert window("day", now) == (datetime(2026, 12, 31, tzinfo=UTC), datetime(2027, 1, 1, tzinfo=UTC))
    assert window("week", now) == (datetime(2026, 12, 28, tzinfo=UTC), datetime(2027, 1, 4, tzinfo=UTC))
    assert window("month", now) == (datetime(2026, 12, 1, tzinfo=UTC), datetime(2027, 1, 1, tzinfo=UTC))


def test_a_cost_from_known_prices_and_none_from_an_unknown_one() -> None:
    # 1000 in at $3/M and 500 out at $15/M: $0.003 + $0.0075.
    assert cost_nano(1000, 500, 3.0, 15.0) == 10_500_000
    assert cost_nano(10, 0, 0.0, 0.0) == 0
    assert cost_nano(10, 5, None, 1.0) is None
    assert cost_nano(0, 5, None, 1.0) == 5_000  # no input tokens: its price is not needed


async def test_budgets_are_saved_only_for_what_exists(runtime: Runtime) -> None:
    store = runtime.store
    await add_endpoint(store, "fake", "http://127.0.0.1:9/v1", "openai", needs_key=False)
    await add_model(store, "m", "fake", "m")
    await add_collection(store, "solo", ["m"])
    await create_key(store, "alice")
    await create_key(store, "gone")
    await revoke_key(store, "gone")
    for scope, name, error in [
        ("key", "bob", NotFound),
        ("key", "gone", NotFound),
        ("collection", "nothing", NotFound),
        ("key", "", UserError),
        ("install", "x", UserError),
        ("team", "alice", UserError),
    ]:
        with pytest.raises(error):
            await set_budget(store, scope, name, "day", usd=1.0, tokens=None)
    with pytest.raises(UserError, match="period must be one of"):
        await set_budget(store, "key", "alice", "year", usd=1.0, tokens=None)
    assert await all_budgets(store) == ()

    await set_budget(store, "key", "alice", "week", usd=2.0, tokens=None)
    await set_budget(store, "install", "", "month", usd=None, tokens=100)
    await set_budget(store, "collection", "solo", "day", usd=1.0, tokens=10)
    await set_budget(store, "key", "alice", "week", usd=3.0, tokens=5)  # replaces
    assert await all_budgets(store) == (
        Budget("key", "alice", "week", 3.0, 5),
        Budget("collection", "solo", "day", 1.0, 10),
        Budget("install", "", "month", None, 100),
    )
    assert await set_budget(store, "key", "alice", "week", usd=None, tokens=None) is None  # removes
    assert await clear_budgets(store, "collection", "solo") == 1
    assert await all_budgets(store) == (Budget("install", "", "month", None, 100),)
