"""`benchwarmers usage`: what the calls cost, grouped by gateway key,
collection, model or day, over a span of UTC days (this month by default).

The same figures as `GET /bench/usage` and the Quotas page (`core.Spend`).
A call whose model's price was unknown is counted apart and never as $0:
a group whose every call was unpriced costs "unknown", one with some says
so beside its sum.
"""

from __future__ import annotations

from typing import Annotated, Any

import typer
from rich.markup import escape
from rich.table import Table

from benchwarmers.cli.context import JsonFlag, console, print_json, with_core
from benchwarmers.core import USAGE_BY, usd_text


def register(app: typer.Typer) -> None:
    app.command("usage")(usage)


def usage(
    by: Annotated[str, typer.Option("--by", help=f"Group by: {', '.join(USAGE_BY)}.")] = "model",
    since: Annotated[
        str, typer.Option("--since", help="First day, YYYY-MM-DD (UTC; default: the 1st of this month).")
    ] = "",
    until: Annotated[str, typer.Option("--until", help="Last day, YYYY-MM-DD (UTC; default: today).")] = "",
    as_json: JsonFlag = False,
) -> None:
    """What the calls cost (USD, at the price when each ran) and their tokens."""
    report = with_core(lambda core: core.spend.usage(by, since, until))
    if as_json:
        print_json(report)
        return
    title = f"Spend by {report['by']}, {report['since']} to {report['until']} (UTC)"
    if not report["rows"]:
        console.print(f"{title}: no calls.")
        return
    table = Table(report["by"], "calls", "input tokens", "output tokens", "USD", title=title)
    for row in report["rows"]:
        table.add_row(escape(row["group"]), *_figures(row))
    table.add_section()
    table.add_row("[bold]total[/]", *_figures(report["total"]))
    console.print(table)


def _figures(row: dict[str, Any]) -> tuple[str, str, str, str]:
    return (
        f"{row['calls']:,}",
        f"{row['inputTokens']:,}",
        f"{row['outputTokens']:,}",
        usd_text(row["costUsd"], row["unpricedCalls"], row["calls"]),
    )
