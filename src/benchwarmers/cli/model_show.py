"""`benchwarmers model show ALIAS`: one model, and why it sits or does not.

Status and catalog facts, its prices (and their history when they
changed: each dated, `store/prices.py`), recent probes (health is whether they were
answered; whether the answers passed their checks is shown beside it), its
record per collection and shape (with the 90% credible interval the
decisions use), its suite results, and the decisions' reasons in words. Registered into the `model`
group that `cli/models.py` owns.
"""

from __future__ import annotations

from typing import Annotated

import typer
from rich.markup import escape
from rich.table import Table

from benchwarmers.cli.context import console, with_core
from benchwarmers.cli.errors import as_text
from benchwarmers.cli.models import model_app, price_text
from benchwarmers.core import utc

# Whether it answers in JSON when its API is asked to (`model json`).
_JSON_WORD = {True: "yes", False: "no", None: "unknown"}


def register(_app: typer.Typer) -> None:
    model_app.command("show")(show)


def show(alias: Annotated[str, typer.Argument(help="The model's alias.")]) -> None:
    """Status, catalog facts, record per collection and shape, suite results, and the decisions' reasons."""
    facts = with_core(lambda core: core.ops.model_report(alias))
    model = facts["model"]
    status = model.status + (f" ({model.status_reason})" if model.status_reason else "")
    # The served id and a status's reason are a provider's words: shown, never obeyed by the terminal.
    served, status = escape(as_text(model.served)), escape(as_text(status))
    console.print(f"[bold]{escape(model.alias)}[/]: {served} on {escape(model.endpoint.name)}")
    console.print(f"  role {model.role}, status {status}" + (", ad hoc" if model.ad_hoc else ""))
    console.print(
        "  context "
        + (f"{model.context_window:,}" if model.context_window else "unknown")
        + ", output "
        + (f"{model.output_limit:,}" if model.output_limit else "unknown")
        + f", vision {'yes' if model.vision else 'no'}, tools {'yes' if model.tools else 'no'}, "
        + f"json {_JSON_WORD[model.structured_output]}"
    )
    console.print(f"  {escape(price_text(model))}")
    changes = with_core(lambda core: core.admin.price_history(alias))
    if len(changes) > 1:  # the first is its price since it joined: the line above says it
        for change in changes:
            console.print(
                f"    from {utc(change.at):%Y-%m-%d %H:%M} UTC: "
                + _price(change.price_in, change.price_out)
                + f" ({change.source})"
            )
    probes = facts["probes"]
    if probes:
        answered = [p for p in probes if p.answered]
        passed = sum(p.passed for p in answered)
        console.print(
            f"  probes: answered {len(answered)} of {len(probes)} recent ones"
            f" ({passed} of those passed their check), last {utc(probes[0].at):%Y-%m-%d %H:%M} UTC"
        )
    table = Table("collection", "shape", "score", "usefulness", "90% interval", "judged", title="Record")
    for row in facts["record"]:
        lo, hi = row["interval"]
        table.add_row(
            escape(row["collection"]),
            row["shape"],
            f"{row['score']:.2f}",
            f"{row['mean']:.0%}",
            f"{lo:.0%}-{hi:.0%}",
            str(row["judged"]),
        )
    console.print(table)
    suite = facts["suite"]
    if suite:
        parts = [
            f"{shape} {s['passed']}/{s['total']} ({s['confidently_wrong']} confidently wrong)"
            for shape, s in sorted(suite.items())
        ]
        console.print("  suite: " + ", ".join(parts))
    else:
        console.print("  suite: not run yet")
    console.print("[bold]Reasons[/]")
    for row in facts["record"]:
        console.print(f"  {escape(row['collection'])} / {row['shape']}:")
        for reason in row["reasons"]:
            console.print(f"    - {escape(as_text(reason))}")


def _price(price_in: float | None, price_out: float | None) -> str:
    if price_in is None and price_out is None:
        return "price unknown"
    if not price_in and not price_out:
        return "free"
    return f"${price_in or 0:g} in / ${price_out or 0:g} out per million tokens"
