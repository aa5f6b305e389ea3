"""`benchwarmers init [DIR] [--endpoint NAME BASE_URL [--api KIND] [--key]]`:
create the data folder and its store, optionally the first endpoint and its
key.

With DIR, the folder is created there and a `.benchwarmers-home` file in
the working directory points at it, so this checkout keeps its own bench.
The key is read without echo and written to llm's `keys.json` (mode 0600),
never to the data folder; what is printed names where it went, never the key.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Annotated

import typer
from rich.markup import escape

from benchwarmers.cli.context import console, read_secret, with_core
from benchwarmers.cli.endpoints import add_or_keep, say_if_no_key, write_key
from benchwarmers.cli.errors import print_warning
from benchwarmers.core import (
    HOME_ENV,
    Core,
    EndpointView,
    api_kinds,
    check_endpoint,
    ensure_home,
    resolve_home,
    write_pointer,
)
from benchwarmers.errors import UserError


def register(app: typer.Typer) -> None:
    app.command("init")(init)


def init(
    directory: Annotated[
        Path | None, typer.Argument(help="Data folder to create (and point this directory at).")
    ] = None,
    endpoint: Annotated[
        tuple[str, str] | None,
        typer.Option("--endpoint", metavar="NAME BASE_URL", help="Also add a first endpoint."),
    ] = None,
    api: Annotated[
        str, typer.Option("--api", help=f"The endpoint's API: {', '.join(api_kinds())}.")
    ] = "openai",
    ask_key: Annotated[
        bool,
        typer.Option("--key", help="Ask for the endpoint's key (not echoed); it goes to llm's keys.json."),
    ] = False,
) -> None:
    """Create the data folder and its store; optionally add a first endpoint and its key."""
    if ask_key and endpoint is None:
        raise UserError("--key needs --endpoint NAME BASE_URL")
    if endpoint is not None:
        check_endpoint(*endpoint, api)

    if directory is not None:
        folder = ensure_home(directory.expanduser().absolute())
        pointer = write_pointer(Path.cwd(), folder)
        console.print(f"Pointed {escape(str(pointer))} at the data folder.")
        overriding = os.environ.get(HOME_ENV, "").strip()
        if overriding and Path(overriding).expanduser().absolute() != folder:
            print_warning(f"{HOME_ENV} is set ({overriding}) and wins over {pointer.name}")
    else:
        folder = ensure_home(resolve_home())

    key = read_secret(f"Key for {endpoint[0]}") if endpoint and ask_key else None

    async def setup(core: Core) -> EndpointView | None:
        console.print(f"Data folder: [bold]{escape(str(core.home))}[/]")
        console.print(f"Store: {escape(core.store_url)} (migrated)")
        return await add_or_keep(core, endpoint[0], endpoint[1], api) if endpoint is not None else None

    added = with_core(setup, home=folder)
    if added is not None and key is not None:
        write_key(added.name, key)
    elif added is not None:
        say_if_no_key(added)
    console.print(
        "Next: [bold]benchwarmers serve[/] (or [bold]benchwarmers serve --demo[/] to try it offline)."
    )
