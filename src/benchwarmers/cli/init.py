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

from benchwarmers.cli.context import console, read_secret, with_runtime
from benchwarmers.cli.endpoints import add_or_keep, say_if_no_key, write_key
from benchwarmers.cli.errors import print_warning
from benchwarmers.config import home as home_config
from benchwarmers.errors import UserError
from benchwarmers.runtime import Runtime
from benchwarmers.store import registry
from benchwarmers.store.db import _redacted


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
        str, typer.Option("--api", help="The endpoint's API: openai, anthropic, gemini, ollama.")
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
        name, base_url = endpoint
        registry.check_endpoint_name(name)
        registry.check_base_url(base_url)
        registry.check_api(api)

    if directory is not None:
        folder = home_config.ensure_home(directory.expanduser().absolute())
        pointer = home_config.write_pointer(Path.cwd(), folder)
        console.print(f"Pointed {escape(str(pointer))} at the data folder.")
        overriding = os.environ.get(home_config.HOME_ENV, "").strip()
        if overriding and Path(overriding).expanduser().absolute() != folder:
            print_warning(f"{home_config.HOME_ENV} is set ({overriding}) and wins over {pointer.name}")
    else:
        folder = home_config.ensure_home(home_config.resolve_home())

    key = read_secret(f"Key for {endpoint[0]}") if endpoint and ask_key else None

    async def setup(rt: Runtime) -> registry.EndpointView | None:
        console.print(f"Data folder: [bold]{escape(str(rt.home))}[/]")
        console.print(f"Store: {escape(_redacted(rt.store.url))} (migrated)")
        return await add_or_keep(rt, endpoint[0], endpoint[1], api) if endpoint is not None else None

    added = with_runtime(setup, home=folder)
    if added is not None and key is not None:
        write_key(added.name, key)
    elif added is not None:
        say_if_no_key(added)
    console.print(
        "Next: [bold]benchwarmers serve[/] (or [bold]benchwarmers serve --demo[/] to try it offline)."
    )
