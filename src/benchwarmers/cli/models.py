"""`benchwarmers model add|list|retire|restore|role|json|remove`: the bench.

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
from benchwarmers.core import model_json
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
            escape(model.served),
            model.role,
            f"[{style}]{model.status}[/]" if style else model.status,
            "; ".join(n if n.startswith("[yellow]") else escape(n) for n in notes),
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


@model_app.command("remove")
def remove(alias: Annotated[str, typer.Argument(help="The model's alias.")]) -> None:
    """Take a model off the bench entirely (its past calls stay in the log)."""
    with_core(lambda core: core.admin.remove_model(alias))
    console.print(f"Removed [bold]{escape(alias)}[/].")
