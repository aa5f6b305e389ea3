"""`benchwarmers endpoint add|list|remove` and `endpoint key set`:
connections to providers.

The list says where each key comes from (the environment variable or
keys.json) or that it is missing, never the key itself. `add` is safe to
run again: the same name, URL and API keep the endpoint (with `--key`, its
key is set), so "run this again with --key" works; `key set` does the same
for an endpoint however it was added.
"""

from __future__ import annotations

import dataclasses
from typing import Annotated

import typer
from rich.markup import escape
from rich.table import Table

from benchwarmers.cli.context import JsonFlag, console, print_json, read_secret, with_runtime
from benchwarmers.cli.errors import print_warning
from benchwarmers.config import keys
from benchwarmers.errors import Conflict
from benchwarmers.runtime import Runtime
from benchwarmers.store import registry

endpoint_app = typer.Typer(help="Connections to providers: name, base URL, API kind.", no_args_is_help=True)
key_app = typer.Typer(help="An endpoint's key (kept in llm's keys.json, never shown).", no_args_is_help=True)
endpoint_app.add_typer(key_app, name="key")


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
    """Add an endpoint (again with --key on an existing one: set its key)."""
    registry.check_endpoint_name(name)
    registry.check_base_url(base_url)
    registry.check_api(api)
    key = read_secret(f"Key for {name}") if ask_key else None
    needs_key = False if keyless else None
    endpoint = with_runtime(lambda rt: add_or_keep(rt, name, base_url, api, needs_key=needs_key))
    if key is not None:
        write_key(name, key)
    else:
        say_if_no_key(endpoint)


async def add_or_keep(
    rt: Runtime, name: str, base_url: str, api: str, *, needs_key: bool | None = None
) -> registry.EndpointView:
    """Add the endpoint, or keep it when one of that name is already there
    with this URL and API (so `add ... --key` again sets the key); another
    URL or API under the name is refused with how to change it."""
    for same in await registry.list_endpoints(rt.store):
        if same.name != name:
            continue
        if (same.base_url, same.api) != (registry.check_base_url(base_url), api):
            raise Conflict(
                f"endpoint {name!r} already exists with {same.api} at {same.base_url}; "
                f"remove it first to change it (`benchwarmers endpoint remove {name}`)"
            )
        console.print(
            f"Endpoint [bold]{escape(name)}[/] is already there ({same.api}, {escape(same.base_url)})."
        )
        return same
    added = await registry.add_endpoint(rt.store, name, base_url, api, needs_key=needs_key)
    console.print(f"Added endpoint [bold]{escape(added.name)}[/] ({added.api}, {escape(added.base_url)}).")
    return added


def write_key(name: str, key: str) -> None:
    path = keys.set_key(name, key)
    console.print(f"Key for [bold]{escape(name)}[/] written to {escape(str(path))} (mode 0600).")


def say_if_no_key(endpoint: registry.EndpointView) -> None:
    """The next step when an endpoint that needs a key has none."""
    name = endpoint.name
    if endpoint.needs_key and keys.key_source(name) is None:
        console.print(
            f"No key yet for {escape(name)}: set {keys.env_var_name(name)}, "
            f"or run [bold]benchwarmers endpoint key set {escape(name)}[/]."
        )


@key_app.command("set")
def key_set(name: Annotated[str, typer.Argument(help="The endpoint's name.")]) -> None:
    """Set an endpoint's key: typed without echo, or piped in (`pass show hub | ...`)."""
    endpoint = with_runtime(lambda rt: registry.get_endpoint(rt.store, name))
    write_key(endpoint.name, read_secret(f"Key for {endpoint.name}"))
    if keys.key_source(name) == "env":
        print_warning(f"{keys.env_var_name(name)} is set and wins over keys.json")


@endpoint_app.command("list")
def list_(as_json: JsonFlag = False) -> None:
    """List endpoints, their models and where each key comes from."""

    async def load(rt: Runtime) -> tuple[list[registry.EndpointView], dict[str, int]]:
        return await registry.list_endpoints(rt.store), await registry.count_models(rt.store)

    endpoints, counts = with_runtime(load)
    if as_json:
        print_json(
            [
                {**dataclasses.asdict(e), "key": _key_text(e), "models": counts.get(e.name, 0)}
                for e in endpoints
            ]
        )
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


@endpoint_app.command("remove")
def remove(name: Annotated[str, typer.Argument(help="The endpoint's name.")]) -> None:
    """Remove an endpoint that no model uses (its key stays in keys.json)."""
    with_runtime(lambda rt: registry.remove_endpoint(rt.store, name))
    console.print(f"Removed endpoint [bold]{escape(name)}[/].")


def _key_label(endpoint: registry.EndpointView) -> str:
    text = _key_text(endpoint)
    return "[red]missing[/]" if text == "missing" else text


def _key_text(endpoint: registry.EndpointView) -> str:
    """Where the key comes from (never the key): not needed, the variable, keys.json, missing."""
    if not endpoint.needs_key:
        return "not needed"
    source = keys.key_source(endpoint.name)
    if source == "env":
        return keys.env_var_name(endpoint.name)
    return "keys.json" if source == "keys.json" else "missing"
