"""The `benchwarmers` command (alias `bench`).

Each command group lives in its own module under `benchwarmers.cli`, which
exposes `register(app: typer.Typer) -> None` and adds its commands there,
e.g. `app.add_typer(endpoint_app, name="endpoint")` or
`app.command("serve")(serve)`. Registering a new module is one line in
`COMMAND_MODULES` below.

Commands open the core services through `cli.context.with_core`, print with
`cli.context.console`, and raise our errors (`errors.UserError`, ...):
`cli.errors.OneLineErrors` turns anything that escapes into one line on
stderr and a non-zero exit.
"""

from __future__ import annotations

import importlib
from typing import Annotated

import typer

from benchwarmers import __version__
from benchwarmers.cli.context import Verbosity
from benchwarmers.cli.errors import OneLineErrors
from benchwarmers.cli.help import use_plain_metavars

COMMAND_MODULES = (
    "benchwarmers.cli.init",
    "benchwarmers.cli.quickstart",
    "benchwarmers.cli.doctor",
    "benchwarmers.cli.endpoints",
    "benchwarmers.cli.models",
    "benchwarmers.cli.model_show",
    "benchwarmers.cli.collections",
    "benchwarmers.cli.serve",
    "benchwarmers.cli.keys",
    "benchwarmers.cli.settings",
    "benchwarmers.cli.fake_provider",
    "benchwarmers.cli.limits",
    "benchwarmers.cli.onboard",
    "benchwarmers.cli.ask",
    "benchwarmers.cli.suite",
    "benchwarmers.cli.mcp",
)

use_plain_metavars()
app = typer.Typer(
    cls=OneLineErrors,
    name="benchwarmers",
    help="Ask a panel of LLMs at once, judge the answers, and let the verdicts pick the next panel.",
    no_args_is_help=True,
    add_completion=True,  # --install-completion / --show-completion (bash, zsh, fish, PowerShell)
    pretty_exceptions_enable=False,
    context_settings={"help_option_names": ["-h", "--help"]},
)


def _print_version(value: bool) -> None:
    if value:
        typer.echo(f"benchwarmers {__version__}")
        raise typer.Exit()


@app.callback()
def main(
    version: Annotated[
        bool, typer.Option("--version", callback=_print_version, is_eager=True, help="Show the version.")
    ] = False,
    verbose: Annotated[
        bool, typer.Option("--verbose", "-v", help="Say on stderr which data folder the command uses.")
    ] = False,
) -> None:
    """Benchwarmers: a self-hosted gateway that asks a panel of LLMs at once.

    The data folder is BENCHWARMERS_HOME, else the folder a .benchwarmers-home
    file in this directory names, else your user-data folder. A command that
    follows a .benchwarmers-home file says so on stderr; --verbose says it always.
    """
    Verbosity.on, Verbosity.home_said = verbose, False


for _name in COMMAND_MODULES:
    importlib.import_module(_name).register(app)


def run() -> None:
    """Entry point of the `benchwarmers` and `bench` scripts."""
    app()
