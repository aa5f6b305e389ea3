"""The quotas view from the store, the same through the CLI and HTTP."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

import httpx
import pytest
from typer.testing import CliRunner

from benchwarmers.calls.call_ids import new_call_id
from benchwarmers.calls.log import CallRow, record_call
from benchwarmers.cli.context import console
from benchwarmers.cli.main import app
from benchwarmers.limits.counters import MemoryCounters
from benchwarmers.limits.enforce import Limiter
from benchwarmers.limits.ledger import month_of, next_day, next_month
from benchwarmers.limits.quotas import as_json, quotas_view
from benchwarmers.limits.user_limits import MAX_AMOUNT, clear_limits, list_limits, set_limits
from benchwarmers.runtime import Runtime
from benchwarmers.store.endpoints import add_endpoint
from benchwarmers.store.models import add_model, get_model
from benchwarmers.testing.live_server import live_server


async def spend(
    runtime: Runtime, served: str, tokens_in: int, tokens_out: int, *, status: str = "ok"
) -> None:
    row = CallRow(
        id=new_call_id(),
        kind="seat",
        alias=served,
        endpoint="fake",
        served=served,
        status=status,
        seconds=0.5,
        tokens_in=tokens_in,
        tokens_out=tokens_out,
        sent=status != "limited",
    )
    await record_call(runtime.store, row)


@pytest.fixture
async def spent(runtime: Runtime) -> Runtime:
    await add_endpoint(runtime.store, "fake", "http://127.0.0.1:9/v1", "openai")
    await add_model(runtime.store, "one", "fake", "model-one")
    await add_model(runtime.store, "two", "fake", "model-two")
    await spend(runtime, "model-one", 100, 20)
    await spend(runtime, "model-one", 50, 10)
    await spend(runtime, "model-two", 7, 3)
    await spend(runtime, "model-two", 0, 0, status="limited")  # refused before it went out
    return runtime


async def test_used_left_and_resets_per_window(spent: Runtime) -> None:
    await set_limits(spent.store, "fake", "", {"rpm": 10, "rpd": 100, "rpmonth": 1000, "tpd": 200})
    await set_limits(spent.store, "fake", "model-one", {"tpm": 150})
    now = datetime.now(UTC)
    view = await quotas_view(spent.store, now)
    by_kind = {(q.served, q.window, q.unit): q for q in view.quotas}
    assert (by_kind[("", "minute", "requests")].used, by_kind[("", "minute", "requests")].left) == (3, 7)
    assert by_kind[("", "day", "requests")].resets_at == next_day(now)
    assert by_kind[("", "month", "requests")].resets_at == next_month(now)
    assert by_kind[("", "month", "requests")].used == 3
    tpd = by_kind[("", "day", "tokens")]
    assert (tpd.used, tpd.left) == (190, 10)
    tpm = by_kind[("model-one", "minute", "tokens")]
    assert (tpm.used, tpm.left) == (180, 0)
    assert tpm.resets_at is not None and now < tpm.resets_at <= now + timedelta(minutes=1)
    assert view.month == month_of(now)
    assert {(u.served, u.spent.requests, u.spent.tokens) for u in view.usage} == {
        ("model-one", 2, 180),
        ("model-two", 1, 10),
    }


async def test_learned_limits_and_rests_show_and_expire(spent: Runtime) -> None:
    limiter = Limiter(spent.store, MemoryCounters(), default_rest=0.5)
    await limiter.learn(
        "fake",
        "model-one",
        status=429,
        headers={
            "anthropic-ratelimit-requests-limit": "50",
            "anthropic-ratelimit-requests-remaining": "0",
            "anthropic-ratelimit-requests-reset": (datetime.now(UTC) + timedelta(seconds=30)).isoformat(),
        },
    )
    view = await quotas_view(spent.store)
    (learned,) = [q for q in view.quotas if q.source != "set"]
    assert (learned.unit, learned.window, learned.limit, learned.used, learned.left) == (
        "requests",
        "minute",
        50,
        50,
        0,
    )
    (rest,) = view.resting
    assert rest.alias == "one" and "429" in rest.reason
    body = as_json(view)
    assert body["resting"][0]["until"].endswith("+00:00")
    assert body["quotas"][0]["source"] == "anthropic-ratelimit"
    # Later than the reset, what the provider said no longer holds: it leaves the view.
    later = await quotas_view(spent.store, datetime.now(UTC) + timedelta(minutes=2))
    assert [q for q in later.quotas if q.source != "set"] == []
    assert later.resting == ()  # and the rest is over
    assert (await get_model(spent.store, "one")).status == "available"
    await limiter.close()


async def test_set_replace_and_clear(spent: Runtime) -> None:
    await set_limits(spent.store, "fake", "", {"rpm": 3, "tpd": 5000})
    await set_limits(spent.store, "fake", "", {"rpm": 4})
    assert {(x.kind, x.amount) for x in await list_limits(spent.store)} == {("rpm", 4), ("tpd", 5000)}
    assert await clear_limits(spent.store, "fake", "", ("tpd",)) == 1
    assert [x.kind for x in await list_limits(spent.store)] == ["rpm"]
    assert await clear_limits(spent.store, "fake") == 1
    assert await list_limits(spent.store) == []


@pytest.mark.parametrize(("kind", "amount"), [("rph", 3), ("rpm", 0), ("tpm", 10**10)])
async def test_bad_limits_are_refused_clearly(spent: Runtime, kind: str, amount: int) -> None:
    from benchwarmers.errors import UserError

    with pytest.raises(UserError, match=kind):
        await set_limits(spent.store, "fake", "", {"rpm": 5, kind: amount})
    assert await list_limits(spent.store) == []  # nothing of the refused call kept


async def test_a_learned_ceiling_past_the_columns_range_is_kept_at_its_top(spent: Runtime) -> None:
    """A provider stating billions of tokens a day must not fail the write
    (PostgreSQL's `integer` column): the view shows the largest it holds."""
    limiter = Limiter(spent.store, MemoryCounters())
    huge = str(10**10)
    await limiter.learn(
        "fake",
        "model-one",
        status=200,
        headers={"x-ratelimit-limit-tokens": huge, "x-ratelimit-remaining-tokens": huge},
    )
    await limiter.close()
    learned = [q for q in (await quotas_view(spent.store)).quotas if q.source != "set"]
    assert [q.limit for q in learned] == [MAX_AMOUNT]


def test_the_cli(home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(console, "width", 160)  # tables unwrapped, as on a wide terminal
    runner = CliRunner()

    def run(*args: str) -> str:
        result = runner.invoke(app, list(args))
        assert result.exit_code == 0, result.output
        return result.output

    run("endpoint", "add", "fake", "http://127.0.0.1:9/v1", "--keyless", "--no-check")
    assert "3 requests a minute on fake" in run("limit", "set", "fake", "--rpm", "3")
    run("limit", "set", "fake", "--model", "m-1", "--tpd", "20000")
    listed = run("limit", "list")
    assert "rpm" in listed and "tpd" in listed and "20,000" in listed and "m-1" in listed
    quotas = run("quotas")
    assert "3 requests/minute" in quotas and "rolling" in quotas and "No calls in" in quotas
    assert "Removed 1 limit on fake/m-1" in run("limit", "clear", "fake", "--model", "m-1")
    refused = runner.invoke(app, ["limit", "set", "fake"])
    assert refused.exit_code != 0 and "at least one" in refused.output
    unknown = runner.invoke(app, ["limit", "set", "nowhere", "--rpm", "1"])
    assert unknown.exit_code != 0 and "nowhere" in unknown.output


async def test_get_bench_quotas(home: Path) -> None:
    async with Runtime.open(home=home) as runtime:
        await add_endpoint(runtime.store, "fake", "http://127.0.0.1:9/v1", "openai")
        await set_limits(runtime.store, "fake", "", {"rpd": 9})
    with live_server(home) as server:
        async with httpx.AsyncClient() as client:
            reply = await client.get(f"{server.url}/bench/quotas")
    assert reply.status_code == 200
    body = reply.json()
    (quota,) = body["quotas"]
    assert quota | {"resets_at": None} == {
        "endpoint": "fake",
        "model": None,
        "unit": "requests",
        "window": "day",
        "source": "set",
        "limit": 9,
        "used": 0,
        "left": 9,
        "resets_at": None,
    }
    assert quota["resets_at"] == next_day(datetime.now(UTC)).isoformat(timespec="seconds")
    assert body["usage"] == [] and body["resting"] == []
