"""`benchwarmers key add|list|revoke`: gateway keys.

A key is printed once, by `add`, and cannot be shown again (only its hash
is kept); lose it and you revoke it and make another. A running server
sees a new or revoked key within a few seconds.
"""

from __future__ import annotations

import dataclasses
from typing import Annotated

import typer
from rich.markup import escape
from rich.table import Table

from benchwarmers.cli.context import JsonFlag, console, print_json, with_core
from benchwarmers.cli.errors import print_warning
from benchwarmers.core import KeyInfo

key_app = typer.Typer(
    help="Gateway keys: who may call the gateway, which collections, how often.", no_args_is_help=True
)


def register(app: typer.Typer) -> None:
    app.add_typer(key_app, name="key")


@key_app.command("add")
def add(
    name: Annotated[str, typer.Argument(help="A name for the key, e.g. laptop or ci.")],
    collections: Annotated[
        list[str] | None,
        typer.Option("--collection", "-c", help="A collection it may call (repeat; none = all)."),
    ] = None,
    rate: Annotated[
        int | None, typer.Option("--rate", min=1, help="Requests per minute it may make (default: no limit).")
    ] = None,
) -> None:
    """Make a gateway key and print it (once)."""
    info, secret, unknown = with_core(
        lambda core: core.admin.create_key(name, collections=collections or (), requests_per_minute=rate)
    )
    console.print(f"Gateway key [bold]{escape(info.name)}[/]: {_scope(info)}, {_rate(info)}.")
    console.print(f"  {secret}")
    console.print("Shown once: copy it now. Clients send it as 'Authorization: Bearer <key>'.")
    if unknown:
        print_warning(f"no collection named {', '.join(unknown)} yet; the key will work once one exists")


@key_app.command("list")
def list_command(as_json: JsonFlag = False) -> None:
    """List gateway keys (their first characters, never the keys)."""
    keys = with_core(lambda core: core.admin.keys())
    if as_json:
        print_json([{**dataclasses.asdict(info), "active": info.active} for info in keys])
        return
    if not keys:
        console.print("No gateway keys. Make one with: benchwarmers key add NAME")
        return
    table = Table("name", "key", "collections", "rate", "created", "state")
    for info in keys:
        state = "active" if info.active else f"revoked {info.revoked_at:%Y-%m-%d %H:%M}"
        table.add_row(
            escape(info.name),
            escape(info.prefix) + "…",
            escape(_scope(info)),
            _rate(info),
            f"{info.created_at:%Y-%m-%d %H:%M}",
            state,
        )
    console.print(table)


@key_app.command("revoke")
def revoke(name: Annotated[str, typer.Argument(help="The key's name.")]) -> None:
    """Revoke a gateway key: clients using it are refused from now on."""
    info = with_core(lambda core: core.admin.revoke_key(name))
    console.print(f"Revoked gateway key [bold]{escape(info.name)}[/] ({escape(info.prefix)}…).")


def _scope(info: KeyInfo) -> str:
    if not info.collections:
        return "all collections"
    return ", ".join(f"bench/{c}" for c in info.collections)  # stored as bare names


def _rate(info: KeyInfo) -> str:
    return f"{info.requests_per_minute}/min" if info.requests_per_minute else "no rate limit"
