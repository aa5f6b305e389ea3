"""`benchwarmers budget set|list|clear`: spending ceilings per gateway key,
collection or the whole install, per calendar day, week or month (UTC), in
USD and/or tokens (docs/budgets.md). Amounts are checked whole before the
store is opened: a bad one is one line, and nothing is saved.
"""

from __future__ import annotations

from typing import Annotated

import typer
from rich.markup import escape
from rich.table import Table

from benchwarmers.cli.context import JsonFlag, console, print_json, with_core
from benchwarmers.core import (
    BUDGET_PERIODS,
    BudgetStatus,
    budget_json,
    money,
    parse_budget_tokens,
    parse_budget_usd,
)
from benchwarmers.errors import UserError

budget_app = typer.Typer(
    help="Budgets per gateway key, collection or install (USD and tokens a day, week or month).",
    no_args_is_help=True,
)

KeyOption = Annotated[str, typer.Option("--key", help="The gateway key the budget is for.")]
CollectionOption = Annotated[str, typer.Option("--collection", help="The collection the budget is for.")]
InstallOption = Annotated[bool, typer.Option("--install", help="The whole install: every call.")]


def register(app: typer.Typer) -> None:
    app.add_typer(budget_app, name="budget")


def _scope(key: str, collection: str, install: bool) -> tuple[str, str]:
    given = [(scope, name) for scope, name in (("key", key), ("collection", collection)) if name]
    if install:
        given.append(("install", ""))
    if len(given) != 1:
        raise UserError("name exactly one of --key NAME, --collection NAME, --install")
    return given[0]


def _period(per: str) -> str:
    if per not in BUDGET_PERIODS:
        raise UserError(f"--per must be one of {', '.join(BUDGET_PERIODS)}, not {per!r}")
    return per


@budget_app.command("set")
def set_(
    per: Annotated[str, typer.Option("--per", help="day, week or month (UTC calendar).")],
    key: KeyOption = "",
    collection: CollectionOption = "",
    install: InstallOption = False,
    usd: Annotated[str | None, typer.Option("--usd", help="US dollars a period, e.g. 5 or 0.50.")] = None,
    tokens: Annotated[str | None, typer.Option("--tokens", help="Tokens (in + out) a period.")] = None,
    currency: Annotated[str, typer.Option("--currency", help="Only USD is taken.")] = "USD",
) -> None:
    """Set a budget (replacing that period's): USD, tokens, or both."""
    scope, name = _scope(key, collection, install)
    period = _period(per)
    amount_usd = parse_budget_usd(usd, currency)
    amount_tokens = parse_budget_tokens(tokens)
    if amount_usd is None and amount_tokens is None:
        raise UserError("give --usd, --tokens or both (`budget clear` removes a budget)")
    status = with_core(
        lambda core: core.admin.put_budget(scope, name, period, usd=amount_usd, tokens=amount_tokens)
    )
    console.print(f"{escape(_describe(status))}")


@budget_app.command("list")
def list_(as_json: JsonFlag = False) -> None:
    """Every budget, with what its period spent, what is left and when it resets."""
    statuses = with_core(lambda core: core.admin.budgets())
    if as_json:
        print_json({"budgets": [budget_json(status) for status in statuses]})
        return
    if not statuses:
        console.print("No budgets. Set one: benchwarmers budget set --key NAME --per day --usd 5")
        return
    table = Table("budget", "limit", "spent", "left", "resets")
    for status in statuses:
        budget = status.budget
        table.add_row(
            escape(budget.label.removeprefix("budget ")),
            _amounts(budget.usd, budget.tokens),
            _amounts(status.spent_nano / 1e9 if budget.usd is not None else None, status.spent_tokens),
            _amounts(status.left_usd, status.left_tokens),
            status.resets_at.isoformat(timespec="seconds"),
        )
    console.print(table)


@budget_app.command("clear")
def clear(
    key: KeyOption = "",
    collection: CollectionOption = "",
    install: InstallOption = False,
    per: Annotated[str | None, typer.Option("--per", help="Only this period's (else all).")] = None,
) -> None:
    """Remove a scope's budgets (one period's with --per)."""
    scope, name = _scope(key, collection, install)
    period = None if per is None else _period(per)
    removed = with_core(lambda core: core.admin.clear_budgets(scope, name, period))
    console.print(f"Removed {removed} budget{'s' if removed != 1 else ''}.")


def _amounts(usd: float | None, tokens: int | None) -> str:
    parts = ([money(usd)] if usd is not None else []) + ([f"{tokens} tokens"] if tokens is not None else [])
    return ", ".join(parts) or "-"


def _describe(status: BudgetStatus) -> str:
    budget = status.budget
    return (
        f"{budget.label}: {_amounts(budget.usd, budget.tokens)}; "
        f"left {_amounts(status.left_usd, status.left_tokens)}, "
        f"resets {status.resets_at.isoformat(timespec='seconds')}"
    )
