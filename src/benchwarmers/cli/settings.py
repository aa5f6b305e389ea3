"""`benchwarmers settings list|get|set`: the server's settings.

Who may reach the server (`allowed_hosts`, `require_key`), how big a request
may be (`max_body_mb`), whether the scheduler runs (`scheduler`) and the
dashboard login (`login_user`, `login_password`). They live in the store, so
a running server sees a change within seconds, without a restart.

The password is write-only: `settings set login_password` asks for it
without echo (or reads it from standard input), keeps only its hash, and
`list` shows only whether one is set. What each setting looks like from
outside is `core/settings.py` (through `core.Admin`), shared with
`/bench/settings`.
"""

from __future__ import annotations

import json
from typing import Annotated, Any

import typer
from rich.markup import escape
from rich.table import Table

from benchwarmers.cli.context import JsonFlag, console, print_json, read_secret, with_core
from benchwarmers.core import LOGIN_PASSWORD
from benchwarmers.errors import UserError

settings_app = typer.Typer(
    help="Server settings: allowed hosts, keys required, body size, scheduler, dashboard login.",
    no_args_is_help=True,
)


def register(app: typer.Typer) -> None:
    app.add_typer(settings_app, name="settings")


@settings_app.command("list")
def list_command(as_json: JsonFlag = False) -> None:
    """List every setting with its value, default and meaning."""
    rows = with_core(lambda core: core.admin.settings())
    if as_json:
        print_json([row.as_dict() for row in rows])
        return
    table = Table("name", "value", "default", "meaning")
    for row in rows:
        table.add_row(
            row.name, escape(_shown(row.value)), escape(_shown(row.default)), escape(row.description)
        )
    console.print(table)


@settings_app.command("get")
def get(name: Annotated[str, typer.Argument(help="The setting's name (see `settings list`).")]) -> None:
    """Print one setting's value as JSON."""
    row = with_core(lambda core: core.admin.setting(name))
    typer.echo(json.dumps(row.value))


@settings_app.command("set")
def set_command(
    name: Annotated[str, typer.Argument(help="The setting's name (see `settings list`).")],
    value: Annotated[
        str | None,
        typer.Argument(
            help="The new value: true/false, a number, host names separated by spaces or commas, or JSON. "
            "Leave it out for login_password, to be asked for it without echo."
        ),
    ] = None,
) -> None:
    """Change one setting; a running server sees it within seconds."""
    if value is None:
        if name != LOGIN_PASSWORD:
            raise UserError(f"give the new value: benchwarmers settings set {name} VALUE")
        value = read_secret("Dashboard password")
    new = value
    row = with_core(lambda core: core.admin.change_setting(name, new))
    console.print(f"{escape(row.name)} = {escape(_shown(row.value))}")


def _shown(value: Any) -> str:
    """A value as a person reads it: lists as comma-separated names, the rest as JSON."""
    if isinstance(value, list):
        return ", ".join(value) if value else "(none)"
    return json.dumps(value)
