"""`benchwarmers model add|list|set|retire|restore|role|json|remove`: the bench.

`model set` sets a model's prices from now on (each change dated, so past
calls keep the price they ran at) or accepts the price of a free model that
went paid (`--paid-ok`), which free-only collections otherwise leave off.

`model add` registers without probing (onboarding probes; see `onboard`).
Retiring keeps a model's evidence and restoring is one command; `remove`
is for a mistyped `add`.
"""

from __future__ import annotations

from typing import Annotated

import typer
from rich.markup import escape
from rich.table import Table

from benchwarmers.cli.context import JsonFlag, console, print_json, with_core
from benchwarmers.cli.errors import as_text
from benchwarmers.core import ModelView, model_json
from benchwarmers.errors import UserError
from benchwarmers.types import MODEL_ROLES

model_app = typer.Typer(
    help="Models on the bench: add, list, retire, restore, set role.", no_args_is_help=True
)

_STATUS_STYLE = {
    "available": "green",
    "onboarding": "cyan",
    "resting": "yellow",
    "unavailable": "red",
    "retired": "dim",
}


def register(app: typer.Typer) -> None:
    app.add_typer(model_app, name="model")


@model_app.command("add")
def add(
    alias: Annotated[str, typer.Argument(help="The name the bench knows it by (unique).")],
    endpoint: Annotated[str, typer.Option("--endpoint", "-e", help="The endpoint serving it.")],
    served: Annotated[str, typer.Option("--served", "-s", help="The provider's model id.")],
    role: Annotated[str, typer.Option("--role", help=", ".join(MODEL_ROLES))] = "general",
) -> None:
    """Register a model without probing it."""
    model = with_core(lambda core: core.admin.add_model(alias, endpoint, served, role))
    console.print(
        f"Added [bold]{escape(model.alias)}[/] ({escape(model.served)} on {escape(model.endpoint.name)}, "
        f"role {model.role})."
    )


@model_app.command("list")
def list_(
    endpoint: Annotated[
        str | None, typer.Option("--endpoint", "-e", help="Only this endpoint's models.")
    ] = None,
    as_json: JsonFlag = False,
) -> None:
    """List the bench: alias, endpoint, served id, role, status."""

    models = with_core(lambda core: core.admin.models(endpoint=endpoint))
    if as_json:
        print_json([model_json(m) for m in models])
        return
    if not models:
        console.print("No models yet: [bold]benchwarmers model add ALIAS --endpoint E --served ID[/]")
        return
    table = Table("alias", "endpoint", "served", "role", "status", "note")
    for model in models:
        style = _STATUS_STYLE.get(model.status, "")
        notes = [model.status_reason] if model.status != "available" and model.status_reason else []
        if model.status == "resting" and model.resting_until:
            notes.append(f"until {model.resting_until:%Y-%m-%d %H:%M} UTC")
        if model.ad_hoc:
            notes.append("ad hoc")
        if model.simulated:
            notes.append("[yellow]simulated[/]")
        table.add_row(
            escape(model.alias),
            escape(model.endpoint.name),
            escape(as_text(model.served)),
            model.role,
            f"[{style}]{model.status}[/]" if style else model.status,
            "; ".join(n if n.startswith("[yellow]") else escape(as_text(n)) for n in notes),
        )
    console.print(table)


@model_app.command("retire")
def retire(
    alias: Annotated[str, typer.Argument(help="The model's alias.")],
    reason: Annotated[str, typer.Option("--reason", help="Why, shown beside it.")] = "retired by the user",
) -> None:
    """Bench a model for good (its evidence stays; `restore` undoes it)."""
    with_core(lambda core: core.ops.retire(alias, reason))
    console.print(f"Retired [bold]{escape(alias)}[/].")


@model_app.command("restore")
def restore(alias: Annotated[str, typer.Argument(help="The model's alias.")]) -> None:
    """Make a retired, resting or unavailable model available again."""
    with_core(lambda core: core.ops.restore(alias))
    console.print(f"Restored [bold]{escape(alias)}[/]: available.")


@model_app.command("role")
def role(
    alias: Annotated[str, typer.Argument(help="The model's alias.")],
    new_role: Annotated[str, typer.Argument(metavar="ROLE", help=", ".join(MODEL_ROLES))],
) -> None:
    """Set a model's role."""
    model = with_core(lambda core: core.ops.set_role(alias, new_role))
    console.print(f"[bold]{escape(model.alias)}[/] is now {model.role}.")


_JSON_WORDS = {"yes": True, "no": False, "unknown": None}


@model_app.command("json")
def json_output(
    alias: Annotated[str, typer.Argument(help="The model's alias.")],
    can: Annotated[str, typer.Argument(metavar="yes|no|unknown", help="Whether it answers in JSON.")],
) -> None:
    """Say whether a model answers in JSON (against a schema) when its API is
    asked to. `no`: an ask for structured output leaves it off, or asks it in
    its prompt (the collection's --output-fallback); `unknown` asks it natively."""
    if can not in _JSON_WORDS:
        raise UserError(f"say yes, no or unknown, not {can!r}")
    model = with_core(lambda core: core.ops.set_structured_output(alias, _JSON_WORDS[can]))
    console.print(f"[bold]{escape(model.alias)}[/] structured output: {can}.")


@model_app.command("set")
def set_(
    alias: Annotated[str, typer.Argument(help="The model's alias.")],
    price_in: Annotated[
        float | None, typer.Option("--price-in", help="USD per million input tokens, from now on.")
    ] = None,
    price_out: Annotated[
        float | None, typer.Option("--price-out", help="USD per million output tokens, from now on.")
    ] = None,
    price_cached: Annotated[
        float | None,
        typer.Option(
            "--price-cached", help="USD per million cached input tokens (default: the input price)."
        ),
    ] = None,
    paid_ok: Annotated[
        bool,
        typer.Option(
            "--paid-ok",
            help="Accept the price of a model that went paid: free-only collections seat it again.",
        ),
    ] = False,
    catalog_price: Annotated[
        bool, typer.Option("--catalog-price", help="Hand its prices back to the catalog's refresh.")
    ] = False,
) -> None:
    """Set a model's prices (the catalog's refresh leaves them) or accept a price it went to."""
    if price_in is None and price_out is None and price_cached is None and not paid_ok and not catalog_price:
        raise UserError("give --price-in, --price-out, --price-cached, --paid-ok or --catalog-price")
    model = with_core(
        lambda core: core.admin.set_model_prices(
            alias,
            price_in=price_in,
            price_out=price_out,
            price_cached=price_cached,
            paid_ok=paid_ok,
            catalog=catalog_price,
        )
    )
    console.print(f"[bold]{escape(model.alias)}[/]: {escape(price_text(model))}.")


def price_text(model: ModelView) -> str:
    """ "$3 in / $15 out per million tokens (set by you)", "free", "price unknown"."""
    if model.price_in is None or model.price_out is None:
        known = "price unknown"
    elif model.price_in == 0 and model.price_out == 0:
        known = "free"
    else:
        cached = "" if model.price_cached is None else f" / ${model.price_cached:g} cached"
        known = f"${model.price_in:g} in / ${model.price_out:g} out{cached} per million tokens"
    who = "set by you" if model.price_source == "user" else "from the catalog"
    paid = "" if model.went_paid_at is None else "; went paid: free-only collections leave it off (--paid-ok)"
    return f"{known} ({who}){paid}"


@model_app.command("remove")
def remove(alias: Annotated[str, typer.Argument(help="The model's alias.")]) -> None:
    """Take a model off the bench entirely (its past calls stay in the log)."""
    with_core(lambda core: core.admin.remove_model(alias))
    console.print(f"Removed [bold]{escape(alias)}[/].")
