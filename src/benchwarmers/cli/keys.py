"""`benchwarmers key add|list|set|rotate|revoke`: gateway keys.

A key is printed once, by `add` (or `rotate`, its new secret), and cannot be
shown again (only its hash is kept); lose it and you rotate it or revoke it
and make another. A key may expire (`--expires 2027-01-31`, `30d`; changed
with `key set`); `rotate --grace 1h` keeps the old secret working that long
so clients can move over. A running server sees a new key at once and a
revoked, rotated or changed one within a few seconds.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Annotated, Any

import typer
from rich.markup import escape
from rich.table import Table

from benchwarmers.cli.context import JsonFlag, console, print_json, with_core
from benchwarmers.cli.errors import print_warning
from benchwarmers.core import KeyInfo
from benchwarmers.core import show_moment as show

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
    expires: Annotated[
        str, typer.Option("--expires", help="When it stops working: 2027-01-31, 30d, 12h (default: never).")
    ] = "",
) -> None:
    """Make a gateway key and print it (once)."""
    info, secret, unknown = with_core(
        lambda core: core.admin.create_key(
            name, collections=collections or (), requests_per_minute=rate, expires=expires
        )
    )
    console.print(
        f"Gateway key [bold]{escape(info.name)}[/]: {_scope(info)}, {_rate(info)}, {_expiry(info)}."
    )
    console.print(f"  {secret}")
    console.print("Shown once: copy it now. Clients send it as 'Authorization: Bearer <key>'.")
    if unknown:
        print_warning(f"no collection named {', '.join(unknown)} yet; the key will work once one exists")


@key_app.command("list")
def list_command(as_json: JsonFlag = False) -> None:
    """List gateway keys (their first characters, never the keys)."""
    keys = with_core(lambda core: core.admin.keys())
    now = datetime.now(UTC)
    if as_json:
        print_json([_json(info, now) for info in keys])
        return
    if not keys:
        console.print("No gateway keys. Make one with: benchwarmers key add NAME")
        return
    table = Table("name", "key", "collections", "rate", "created", "state")
    for info in keys:
        state = info.state(now)
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


@key_app.command("set")
def set_command(
    name: Annotated[str, typer.Argument(help="The key's name.")],
    expires: Annotated[
        str, typer.Option("--expires", help="When it stops working: 2027-01-31, 30d, 12h, or never.")
    ],
) -> None:
    """Change when a gateway key expires."""
    info = with_core(lambda core: core.admin.set_key_expiry(name, expires))
    console.print(f"Gateway key [bold]{escape(info.name)}[/]: {_expiry(info)}.")


@key_app.command("rotate")
def rotate(
    name: Annotated[str, typer.Argument(help="The key's name.")],
    grace: Annotated[
        str,
        typer.Option("--grace", help="How long the old secret keeps working: 1h, 30m, 2d, or 0 (stops now)."),
    ] = "0",
) -> None:
    """Give a gateway key a new secret and print it (once); the old one works for the grace period."""
    info, old, secret = with_core(lambda core: core.admin.rotate_key(name, grace))
    console.print(f"Gateway key [bold]{escape(info.name)}[/] has a new secret:")
    console.print(f"  {secret}")
    console.print("Shown once: copy it now.")
    assert old.revoked_at is not None  # rotation set the end of its grace
    if old.revoked_at > datetime.now(UTC):
        console.print(f"The old secret ({escape(old.prefix)}…) works until {show(old.revoked_at)}.")
    else:
        console.print(f"The old secret ({escape(old.prefix)}…) stopped working now.")


def _json(info: KeyInfo, now: datetime) -> dict[str, Any]:
    return {
        "name": info.name,
        "prefix": info.prefix,
        "collections": list(info.collections),
        "requests_per_minute": info.requests_per_minute,
        "created_at": info.created_at.isoformat(),
        "revoked_at": info.revoked_at.isoformat() if info.revoked_at else None,
        "expires_at": info.expires_at.isoformat() if info.expires_at else None,
        "rotated_at": info.rotated_at.isoformat() if info.rotated_at else None,
        "active": info.active,
        "works": info.works(now.timestamp()),
        "state": info.state(now),
    }


def _expiry(info: KeyInfo) -> str:
    return f"expires {show(info.expires_at)}" if info.expires_at else "never expires"


def _scope(info: KeyInfo) -> str:
    if not info.collections:
        return "all collections"
    return ", ".join(f"bench/{c}" for c in info.collections)  # stored as bare names


def _rate(info: KeyInfo) -> str:
    return f"{info.requests_per_minute}/min" if info.requests_per_minute else "no rate limit"
