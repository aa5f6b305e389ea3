"""`benchwarmers limit set|list|clear` and `benchwarmers quotas`.

Limits are set per endpoint (every model behind its key) or per model
(`--model SERVED`); both apply. `quotas` shows what the store says: each
limit with what is used, what is left and when it resets, this month's
usage per model, and who is resting after a 429.
"""

from __future__ import annotations

import dataclasses
from datetime import datetime
from typing import Annotated

import typer
from rich.markup import escape
from rich.table import Table

from benchwarmers.cli.context import JsonFlag, console, print_json, with_core
from benchwarmers.core import LIMIT_KINDS, Quota, QuotasView, quotas_json
from benchwarmers.errors import UserError

limit_app = typer.Typer(
    help="Limits you set per endpoint or model (requests and tokens).", no_args_is_help=True
)


def register(app: typer.Typer) -> None:
    app.add_typer(limit_app, name="limit")
    app.command("quotas")(quotas)


@limit_app.command("set")
def set_(
    endpoint: Annotated[str, typer.Argument(help="The endpoint the limit is for.")],
    model: Annotated[str, typer.Option("--model", help="Only this served model id.")] = "",
    rpm: Annotated[int | None, typer.Option("--rpm", min=1, help="Requests per minute.")] = None,
    rpd: Annotated[int | None, typer.Option("--rpd", min=1, help="Requests per day (UTC).")] = None,
    rpmonth: Annotated[
        int | None, typer.Option("--rpmonth", min=1, help="Requests per calendar month.")
    ] = None,
    tpm: Annotated[int | None, typer.Option("--tpm", min=1, help="Tokens per minute.")] = None,
    tpd: Annotated[int | None, typer.Option("--tpd", min=1, help="Tokens per day (UTC).")] = None,
) -> None:
    """Set limits on an endpoint, or on one of its models."""
    given = {"rpm": rpm, "rpd": rpd, "rpmonth": rpmonth, "tpm": tpm, "tpd": tpd}
    amounts = {kind: amount for kind, amount in given.items() if amount is not None}
    if not amounts:
        raise UserError("give at least one of --rpm, --rpd, --rpmonth, --tpm, --tpd")

    for limit in with_core(lambda core: core.admin.set_limits(endpoint, model, amounts)):
        console.print(f"{limit.kind}: {escape(limit.describe)}")


@limit_app.command("list")
def list_(as_json: JsonFlag = False) -> None:
    """List the limits you set."""
    limits = with_core(lambda core: core.admin.limits())
    if as_json:
        print_json([{**dataclasses.asdict(limit), "kind": limit.kind} for limit in limits])
        return
    if not limits:
        console.print("No limits set. Providers' own limits still apply: see `benchwarmers quotas`.")
        return
    table = Table("endpoint", "model", "limit", "amount")
    for limit in limits:
        table.add_row(
            escape(limit.endpoint), escape(limit.served or "(all)"), limit.kind, f"{limit.amount:,}"
        )
    console.print(table)


@limit_app.command("clear")
def clear(
    endpoint: Annotated[str, typer.Argument(help="The endpoint whose limits to remove.")],
    model: Annotated[str, typer.Option("--model", help="Only this served model's limits.")] = "",
    kind: Annotated[
        list[str] | None, typer.Option("--kind", help=f"Only these: {', '.join(LIMIT_KINDS)} (repeatable).")
    ] = None,
) -> None:
    """Remove limits you set (all of the endpoint's or model's, or the named kinds)."""
    removed = with_core(lambda core: core.admin.clear_limits(endpoint, model, kind or ()))
    scope = f"{endpoint}/{model}" if model else endpoint
    console.print(f"Removed {removed} limit{'' if removed == 1 else 's'} on {escape(scope)}.")


def _when(when: datetime | None) -> str:
    return when.strftime("%Y-%m-%d %H:%M:%S UTC") if when is not None else "-"


def _number(value: int | None) -> str:
    return f"{value:,}" if value is not None else "?"


def _resets(quota: Quota) -> str:
    """A user's minute window rolls: room frees as the oldest call ages out."""
    if quota.window == "minute" and quota.source == "set":
        return f"rolling, frees {_when(quota.resets_at)}" if quota.resets_at else "rolling"
    return _when(quota.resets_at)


def quotas(as_json: JsonFlag = False) -> None:
    """Limits with what is used, left and when they reset; this month's usage."""
    view: QuotasView = with_core(lambda core: core.admin.quotas())
    if as_json:
        print_json(quotas_json(view))  # the same object as GET /bench/quotas
        return
    limits = Table("endpoint", "model", "limit", "source", "used", "left", "resets", title="Limits")
    for q in view.quotas:
        per = f"{_number(q.limit)} {q.unit}" + (f"/{q.window}" if q.window else "")
        left = _number(q.left)
        limits.add_row(
            escape(q.endpoint),
            escape(q.served or "(all)"),
            per,
            q.source,
            _number(q.used),
            f"[red]{left}[/]" if q.left == 0 else left,
            _resets(q) if q.window == "minute" and q.source == "set" else _when(q.resets_at),
        )
    if view.quotas:
        console.print(limits)
    else:
        console.print("No limits set or learned yet.")
    usage = Table("endpoint", "model", "requests", "tokens in", "tokens out", title=f"Usage {view.month}")
    for row in view.usage:
        usage.add_row(
            escape(row.endpoint),
            escape(row.served),
            f"{row.spent.requests:,}",
            f"{row.spent.tokens_in:,}",
            f"{row.spent.tokens_out:,}",
        )
    if view.usage:
        console.print(usage)
    else:
        console.print(f"No calls in {view.month} yet.")
    for rest in view.resting:
        console.print(
            f"[yellow]{escape(rest.alias)}[/] rests until {_when(rest.until)}: {escape(rest.reason)}"
        )
