"""`benchwarmers endpoint add|list|remove`: connections to providers.

The list says where each key comes from (the environment variable or
keys.json) or that it is missing, never the key itself.
"""

from __future__ import annotations

from typing import Annotated

import typer
from rich.markup import escape
from rich.table import Table

from benchwarmers.cli.context import console, read_secret, with_runtime
from benchwarmers.config import keys
from benchwarmers.limits.scope import scopes_in_words
from benchwarmers.runtime import Runtime
from benchwarmers.store import registry

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
    limit_scope: Annotated[
        str,
        typer.Option(
            "--limit-scope",
            help="Whom its rate limits count: key, model, or auto (known providers, headers).",
        ),
    ] = "auto",
) -> None:
    """Add an endpoint."""
    registry.check_endpoint_name(name)
    registry.check_base_url(base_url)
    registry.check_api(api)
    registry.check_scope(limit_scope)
    key = read_secret(f"Key for {name}") if ask_key else None
    needs_key = False if keyless else None
    added = with_runtime(
        lambda rt: registry.add_endpoint(
            rt.store, name, base_url, api, needs_key=needs_key, limit_scope=limit_scope
        )
    )
    console.print(f"Added endpoint [bold]{escape(added.name)}[/] ({added.api}, {escape(added.base_url)}).")
    if key is not None:
        path = keys.set_key(name, key)
        console.print(f"Key written to {escape(str(path))} (mode 0600).")
    elif added.needs_key and keys.key_source(name) is None:
        console.print(f"No key yet: set {keys.env_var_name(name)} or run this again with --key.")


@endpoint_app.command("scope")
def scope_(
    name: Annotated[str, typer.Argument(help="The endpoint's name.")],
    scope: Annotated[str, typer.Argument(help="key (models share limits), model (each its own), auto.")],
) -> None:
    """Say whom the endpoint's rate limits count (a server picks it up within seconds)."""
    registry.check_scope(scope)
    changed = with_runtime(lambda rt: registry.set_limit_scope(rt.store, name, scope))
    console.print(f"[bold]{escape(changed.name)}[/]: limits per {changed.limit_scope or 'auto'}.")


@endpoint_app.command("list")
def list_() -> None:
    """List endpoints, their models, where each key comes from and whom its limits count."""

    async def load(rt: Runtime) -> tuple[list[registry.EndpointView], dict[str, int], dict[str, str]]:
        return (
            await registry.list_endpoints(rt.store),
            await registry.count_models(rt.store),
            await scopes_in_words(rt.store),
        )

    endpoints, counts, scopes = with_runtime(load)
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
    words = ", ".join(f"{escape(name)} per {scopes[name]}" for name in sorted(scopes))
    console.print(f"Rate limits count: {words}.")


@endpoint_app.command("remove")
def remove(name: Annotated[str, typer.Argument(help="The endpoint's name.")]) -> None:
    """Remove an endpoint that no model uses (its key stays in keys.json)."""
    with_runtime(lambda rt: registry.remove_endpoint(rt.store, name))
    console.print(f"Removed endpoint [bold]{escape(name)}[/].")


def _key_label(endpoint: registry.EndpointView) -> str:
    if not endpoint.needs_key:
        return "not needed"
    source = keys.key_source(endpoint.name)
    if source == "env":
        return keys.env_var_name(endpoint.name)
    if source == "keys.json":
        return "keys.json"
    return "[red]missing[/]"
