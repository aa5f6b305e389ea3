"""The `benchwarmers` command (alias `bench`).

Each command group lives in its own module under `benchwarmers.cli`, which
exposes `register(app: typer.Typer) -> None` and adds its commands there,
e.g. `app.add_typer(endpoint_app, name="endpoint")` or
`app.command("serve")(serve)`. Registering a new module is its import and
one entry in `COMMAND_MODULES` below (imported, not named in a string, so
the import graph and `lint-imports` see it).

Commands open the core services through `cli.context.with_core`, print with
`cli.context.console`, and raise our errors (`errors.UserError`, ...):
`cli.errors.OneLineErrors` turns anything that escapes into one line on
stderr and a non-zero exit.
"""

from __future__ import annotations

from typing import Annotated

import typer

from benchwarmers import __version__
from benchwarmers.cli import (
    ask,
    budgets,
    collections,
    doctor,
    endpoints,
    fake_provider,
    init,
    keys,
    limits,
    mcp,
    model_show,
    models,
    onboard,
    quickstart,
    serve,
    settings,
    suite,
    usage,
)
from benchwarmers.cli.context import Verbosity
from benchwarmers.cli.errors import OneLineErrors
from benchwarmers.cli.help import use_plain_metavars

# In the order their commands are listed.
COMMAND_MODULES = (
    init,
    quickstart,
    doctor,
    endpoints,
    models,
    model_show,
    collections,
    serve,
    keys,
    settings,
    fake_provider,
    limits,
    usage,
    budgets,
    onboard,
    ask,
    suite,
    mcp,
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


for _module in COMMAND_MODULES:
    _module.register(app)


def run() -> None:
    """Entry point of the `benchwarmers` and `bench` scripts."""
    app()
