"""`benchwarmers usage` and `benchwarmers model set`: spend grouped every
way in a table or as JSON, an unknown price shown as unknown (never $0),
prices set by the user and dated, and bad input one line each."""

from __future__ import annotations

import asyncio
import json
from datetime import UTC, datetime

import pytest

from benchwarmers.calls.caller import CallContext, Caller
from benchwarmers.runtime import Runtime
from benchwarmers.store.endpoints import add_endpoint
from benchwarmers.store.models import add_model, get_model
from benchwarmers.testing.fake_provider import FakeProvider
from benchwarmers.testing.script import FakeModel
from benchwarmers.types import Request, Sampling, user

from .test_main import fails, ok


def today() -> str:
    """Read when asked, not at import: a run that crosses midnight logs its calls on the new day."""
    return datetime.now(UTC).date().isoformat()


@pytest.fixture
def spent(fake_provider: FakeProvider) -> None:
    """Two calls of a priced model (one by a key), one of a model whose price is unknown."""

    async def work() -> None:
        async with Runtime.open() as runtime:
            store = runtime.store
            await add_endpoint(store, "fake", fake_provider.base_for("openai"), "openai", needs_key=False)
            for alias, price in (("dear", 4.0), ("mystery", None)):
                fake_provider.add(FakeModel(alias, answer="four"))
                await add_model(store, alias, "fake", alias, price_in=price, price_out=price)
            request = Request(messages=(user("2+2?"),), sampling=Sampling(max_tokens=20))
            caller = Caller(runtime)
            for alias, context in (
                ("dear", CallContext(collection="trio", key="alice")),
                ("dear", CallContext(collection="trio")),
                ("mystery", CallContext(collection="duo")),
            ):
                model = await get_model(store, alias)
                await caller.call(model, request, kind="seat", timeout=5.0, context=context)

    asyncio.run(work())


def test_usage_as_json_by_each_group(spent: None) -> None:
    for by, groups in (
        ("key", {"alice", "owner"}),
        ("collection", {"trio", "duo"}),
        ("model", {"dear", "mystery"}),
        ("day", {today()}),
    ):
        report = json.loads(ok("usage", "--by", by, "--since", today(), "--until", today(), "--json"))
        assert {r["group"] for r in report["rows"]} == groups
        assert report["total"]["calls"] == 3 and report["total"]["unpricedCalls"] == 1
    models = {r["group"]: r for r in json.loads(ok("usage", "--by", "model", "--json"))["rows"]}
    assert models["dear"]["costUsd"] > 0 and models["dear"]["unpricedCalls"] == 0
    assert (models["mystery"]["costUsd"], models["mystery"]["unpricedCalls"]) == (0, 1)


def test_the_table_says_unknown_for_an_unknown_price(spent: None) -> None:
    table = ok("usage", "--by", "model")
    mystery = next(line for line in table.splitlines() if "mystery" in line)
    assert "unknown" in mystery and "$" not in mystery
    dear = next(line for line in table.splitlines() if "dear" in line)
    assert "$0.0" in dear
    total = next(line for line in table.splitlines() if "total" in line)
    assert "+ 1 unpriced" in total


@pytest.mark.parametrize(
    ("args", "words"),
    [
        (("--by", "week"), "by must be one of key, collection, model, day, got 'week'"),
        (("--since", "2026-13-01"), "since must be a date as YYYY-MM-DD"),
        (("--until", "12/04/2026"), "until must be a date as YYYY-MM-DD"),
        (
            ("--since", "2026-12-05", "--until", "2026-12-01"),
            "since (2026-12-05) is after until (2026-12-01)",
        ),
    ],
)
def test_bad_usage_input_is_one_line(args: tuple[str, ...], words: str) -> None:
    fails("usage", *args, contains=words)


def test_model_set_prices_and_shows_them_dated(spent: None) -> None:
    said = ok("model", "set", "mystery", "--price-in", "1.5", "--price-out", "6")
    assert "$1.5 in / $6 out per million tokens (set by you)" in said
    shown = ok("model", "show", "mystery")
    assert "(set by you)" in shown and "price unknown (catalog)" in shown and "(user)" in shown
    fails("model", "set", "mystery", "--price-in", "-2", contains="--price-in must be from 0 to")
    fails("model", "set", "mystery", contains="give --price-in, --price-out")
    fails("model", "set", "nobody", "--paid-ok", contains="no model 'nobody'")
