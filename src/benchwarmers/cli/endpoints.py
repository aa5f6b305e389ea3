"""`benchwarmers endpoint add|list|remove` and `endpoint key set`:
connections to providers.

The list says where each key comes from (the environment variable or
keys.json) or that it is missing, never the key itself. `add` is safe to
run again: the same name, URL and API keep the endpoint (with `--key`, its
key is set), so "run this again with --key" works; `key set` does the same
for an endpoint however it was added.
"""

from __future__ import annotations

from typing import Annotated

import typer
from rich.markup import escape
from rich.table import Table

from benchwarmers.cli.context import JsonFlag, console, print_json, read_secret, with_core
from benchwarmers.cli.errors import print_warning
from benchwarmers.core import (
    Core,
    EndpointView,
    api_kinds,
    check_endpoint,
    check_scope,
    endpoint_json,
    endpoint_key_source,
    endpoint_key_variable,
    key_label,
    set_endpoint_key,
)

endpoint_app = typer.Typer(help="Connections to providers: name, base URL, API kind.", no_args_is_help=True)
key_app = typer.Typer(help="An endpoint's key (kept in llm's keys.json, never shown).", no_args_is_help=True)
endpoint_app.add_typer(key_app, name="key")


def register(app: typer.Typer) -> None:
    app.add_typer(endpoint_app, name="endpoint")


@endpoint_app.command("add")
def add(
    name: Annotated[str, typer.Argument(help="A short name, e.g. openrouter or my-hub.")],
    base_url: Annotated[str, typer.Argument(help="The API's base URL, e.g. https://openrouter.ai/api/v1.")],
    api: Annotated[str, typer.Option("--api", help=", ".join(api_kinds()) + ".")] = "openai",
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
    no_check: Annotated[
        bool, typer.Option("--no-check", help="Keep it without asking the server for its model list first.")
    ] = False,
) -> None:
    """Add an endpoint, once it lists its models (again with --key on an existing one: set its key)."""
    check_endpoint(name, base_url, api)
    check_scope(limit_scope)
    key = read_secret(f"Key for {name}") if ask_key else None
    needs_key = not keyless and api != "ollama"

    async def check_and_add(core: Core) -> EndpointView:
        if not no_check:
            await _check_server(core, name, base_url, api, key, needs_key)
        return await add_or_keep(
            core, name, base_url, api, needs_key=False if keyless else None, limit_scope=limit_scope
        )

    endpoint = with_core(check_and_add)
    if key is not None:
        write_key(name, key)
    else:
        say_if_no_key(endpoint)


async def _check_server(
    core: Core, name: str, base_url: str, api: str, key: str | None, needs_key: bool
) -> None:
    """The server lists its models with this key, or the command stops (nothing kept)."""
    count = await core.admin.check_server(name, base_url, api, key=key, needs_key=needs_key)
    if count is None:
        console.print(f"Not checked yet: {escape(name)} needs a key to list its models.")
    else:
        console.print(f"{escape(base_url)} answers: {count} models listed.")


async def add_or_keep(
    core: Core, name: str, base_url: str, api: str, *, needs_key: bool | None = None, limit_scope: str = ""
) -> EndpointView:
    """Add the endpoint, or keep it when one of that name is already there
    with this URL and API (so `add ... --key` again sets the key), saying which."""
    endpoint, added = await core.admin.add_or_keep_endpoint(
        name, base_url, api, needs_key=needs_key, limit_scope=limit_scope
    )
    where = f"({endpoint.api}, {escape(endpoint.base_url)})"
    if added:
        console.print(f"Added endpoint [bold]{escape(endpoint.name)}[/] {where}.")
    else:
        console.print(f"Endpoint [bold]{escape(name)}[/] is already there {where}.")
    return endpoint


def write_key(name: str, key: str) -> None:
    path = set_endpoint_key(name, key)
    console.print(f"Key for [bold]{escape(name)}[/] written to {escape(str(path))} (mode 0600).")


def say_if_no_key(endpoint: EndpointView) -> None:
    """The next step when an endpoint that needs a key has none."""
    name = endpoint.name
    if endpoint.needs_key and endpoint_key_source(name) is None:
        console.print(
            f"No key yet for {escape(name)}: set {endpoint_key_variable(name)}, "
            f"or run [bold]benchwarmers endpoint key set {escape(name)}[/]."
        )


@key_app.command("set")
def key_set(name: Annotated[str, typer.Argument(help="The endpoint's name.")]) -> None:
    """Set an endpoint's key: typed without echo, or piped in (`pass show hub | ...`)."""
    endpoint = with_core(lambda core: core.admin.endpoint(name))
    write_key(endpoint.name, read_secret(f"Key for {endpoint.name}"))
    if endpoint_key_source(name) == "env":
        print_warning(f"{endpoint_key_variable(name)} is set and wins over keys.json")


@endpoint_app.command("scope")
def scope_(
    name: Annotated[str, typer.Argument(help="The endpoint's name.")],
    scope: Annotated[str, typer.Argument(help="key (models share limits), model (each its own), auto.")],
) -> None:
    """Say whom the endpoint's rate limits count (a server picks it up within seconds)."""
    check_scope(scope)
    changed = with_core(lambda core: core.admin.set_limit_scope(name, scope))
    console.print(f"[bold]{escape(changed.name)}[/]: limits per {changed.limit_scope or 'auto'}.")


@endpoint_app.command("list")
def list_(as_json: JsonFlag = False) -> None:
    """List endpoints, their models, where each key comes from and whom its limits count."""

    async def load(core: Core) -> tuple[list[EndpointView], dict[str, int], dict[str, str]]:
        return await core.admin.endpoints(), await core.admin.model_counts(), await core.admin.limit_scopes()

    endpoints, counts, scopes = with_core(load)
    if as_json:
        print_json([endpoint_json(e, counts.get(e.name, 0)) for e in endpoints])
        return
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
    with_core(lambda core: core.admin.remove_endpoint(name))
    console.print(f"Removed endpoint [bold]{escape(name)}[/].")


def _key_label(endpoint: EndpointView) -> str:
    text = key_label(endpoint)
    return "[red]missing[/]" if text == "missing" else text
