"""`benchwarmers budget set|list|clear`: a budget per key, collection or
install; a mistake is one line and saves nothing."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from benchwarmers.cli.main import app

runner = CliRunner()


def _ok(*args: str) -> str:
    result = runner.invoke(app, list(args))
    assert result.exit_code == 0, result.output
    return result.output


def _budgets() -> list[dict[str, object]]:
    return list(json.loads(_ok("budget", "list", "--json"))["budgets"])


def test_budget_set_list_clear(home: Path) -> None:
    _ok("key", "add", "laptop")
    assert "No budgets" in _ok("budget", "list")
    said = _ok("budget", "set", "--key", "laptop", "--per", "day", "--usd", "5", "--tokens", "100000")
    assert "budget key laptop per day: $5, 100000 tokens; left $5, 100000 tokens, resets " in said
    _ok("budget", "set", "--install", "--per", "month", "--usd", "$20")
    listed = _budgets()
    assert [(b["scope"], b["name"], b["period"], b["usd"], b["tokens"]) for b in listed] == [
        ("key", "laptop", "day", 5.0, 100000),
        ("install", "", "month", 20.0, None),
    ]
    assert listed[0]["leftUsd"] == 5.0 and listed[0]["spentTokens"] == 0
    table = _ok("budget", "list")
    assert "laptop" in table and "install" in table
    assert "Removed 1 budget." in _ok("budget", "clear", "--key", "laptop")
    assert [b["scope"] for b in _budgets()] == ["install"]


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--key", "laptop", "--per", "day", "--usd", "-5"], "usd must be a number of US dollars, 0 or more"),
        (["--key", "laptop", "--per", "day", "--usd", "five"], "usd must be a number of US dollars"),
        (["--key", "laptop", "--per", "day", "--usd", "EUR5"], "usd must be a number of US dollars"),
        (["--key", "laptop", "--per", "day", "--usd", "5", "--currency", "EUR"], "budgets are in USD"),
        (["--key", "laptop", "--per", "day", "--tokens", "-1"], "tokens must be a whole number"),
        (["--key", "laptop", "--per", "day", "--tokens", "1.5"], "tokens must be a whole number"),
        (["--key", "laptop", "--per", "year", "--usd", "5"], "--per must be one of day, week, month"),
        (["--key", "nobody", "--per", "day", "--usd", "5"], "no gateway key named 'nobody'"),
        (["--collection", "nothing", "--per", "day", "--usd", "5"], "no collection named 'nothing'"),
        (["--key", "laptop", "--install", "--per", "day", "--usd", "5"], "exactly one of"),
        (["--per", "day", "--usd", "5"], "exactly one of"),
        (["--key", "laptop", "--per", "day"], "give --usd, --tokens or both"),
    ],
)
def test_budget_mistakes_are_one_line_and_save_nothing(home: Path, args: list[str], message: str) -> None:
    _ok("key", "add", "laptop")
    result = runner.invoke(app, ["budget", "set", *args])
    assert result.exit_code != 0
    assert message in result.output
    assert "Traceback" not in result.output
    assert _budgets() == []
