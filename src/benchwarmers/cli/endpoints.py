"""`benchwarmers endpoint add|list|remove`: connections to providers.

The list says where each key comes from (the environment variable or
keys.json) or that it is missing, never the key itself.
"""

from __future__ import annotations

from typing import Annotated

import typer
from rich.markup import escape
from rich.table import Table

from benchwarmers.cli.context import console, read_secret, with_core
from benchwarmers.core import (
    Core,
    EndpointView,
    check_endpoint,
    endpoint_key_source,
    endpoint_key_variable,
    set_endpoint_key,
)

endpoint_app = typer.Typer(help="Connections to providers: name, base URL, API kind.", no_args_is_help=True)


def register(app: typer.Typer) -> None:
    app.add_typer(endpoint_app, name="endpoint")


@endpoint_app.command("add")
def add(
    name: Annotated[str, typer.Argument(help="A short name, e.g. openrouter or my-hub.")],
    base_url: Annotated[str, typer.Argument(help="The API's base URL, e.g. https://openrouter.ai/api/v1.")],
    api: Annotated[str, typer.Option("--api", help="openai, anthropic, gemini or ollama.")] = "openai",
    ask_key: Annotated[
        bool, typer.Option("--key", help="Ask for the key (not echoed); it goes to llm's keys.json.")
    ] = False,
    keyless: Annotated[
        bool, typer.Option("--keyless", help="The endpoint needs no key (a local server).")
    ] = False,
) -> None:
    """Add an endpoint."""
    check_endpoint(name, base_url, api)
    key = read_secret(f"Key for {name}") if ask_key else None
    needs_key = False if keyless else None
    added = with_core(lambda core: core.admin.add_endpoint(name, base_url, api, needs_key=needs_key))
    console.print(f"Added endpoint [bold]{escape(added.name)}[/] ({added.api}, {escape(added.base_url)}).")
    if key is not None:
        path = set_endpoint_key(name, key)
        console.print(f"Key written to {escape(str(path))} (mode 0600).")
    elif added.needs_key and endpoint_key_source(name) is None:
        console.print(f"No key yet: set {endpoint_key_variable(name)} or run this again with --key.")


@endpoint_app.command("list")
def list_() -> None:
    """List endpoints, their models and where each key comes from."""

    async def load(core: Core) -> tuple[list[EndpointView], dict[str, int]]:
        return await core.admin.endpoints(), await core.admin.model_counts()

    endpoints, counts = with_core(load)
    if not endpoints:
        console.print("No endpoints yet: [bold]benchwarmers endpoint add NAME BASE_URL --api KIND --key[/]")
        return
    table = Table("name", "api", "base URL", "key", "models")
    for endpoint in endpoints:
        label = escape(endpoint.name) + (" [yellow](simulated)[/]" if endpoint.simulated else "")
        table.add_row(
            label,
            endpoint.api,
            escape(endpoint.base_url),
            _key_label(endpoint),
            str(counts.get(endpoint.name, 0)),
        )
    console.print(table)


@endpoint_app.command("remove")
def remove(name: Annotated[str, typer.Argument(help="The endpoint's name.")]) -> None:
    """Remove an endpoint that no model uses (its key stays in keys.json)."""
    with_core(lambda core: core.admin.remove_endpoint(name))
    console.print(f"Removed endpoint [bold]{escape(name)}[/].")


def _key_label(endpoint: EndpointView) -> str:
    if not endpoint.needs_key:
        return "not needed"
    source = endpoint_key_source(endpoint.name)
    if source == "env":
        return endpoint_key_variable(endpoint.name)
    if source == "keys.json":
        return "keys.json"
    return "[red]missing[/]"
