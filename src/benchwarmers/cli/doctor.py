"""`benchwarmers doctor`: is this install ready to answer, and if not, what
to run.

The checks are the core's (`core.diagnose`: the data folder, the store and
its migration, each endpoint reached with its key found or missing, the
models, Redis when configured); this command adds the server at
`BENCHWARMERS_URL`, a client's setting, and prints one line each: green, or
red with the command that fixes it. Any red line makes the exit code 1, so
a script can gate on it. No model call is made, and no key is shown.
"""

from __future__ import annotations

import asyncio

import httpx
import typer
from rich.markup import escape

from benchwarmers import client_env
from benchwarmers.cli.context import console
from benchwarmers.core import Check, diagnose, local_store, tunables
from benchwarmers.errors import BenchwarmersError

SERVER_TIMEOUT = tunables.DOCTOR_SERVER_TIMEOUT.value


def register(app: typer.Typer) -> None:
    app.command("doctor")(doctor)


def doctor() -> None:
    """Check the data folder, store, endpoints and keys, models, server and Redis: one line each."""
    checks = asyncio.run(diagnose())
    checks.insert(len(checks) - (checks[-1].what == "Redis"), asyncio.run(_server()))
    for check in checks:
        console.print(_line(check), soft_wrap=True)
    if not all(check.ok for check in checks):
        raise typer.Exit(1)


def _line(check: Check) -> str:
    mark = "[green]✓[/]" if check.ok else "[red]✗[/]"
    fix = f" [bold]→ {escape(check.fix)}[/]" if check.fix and not check.ok else ""
    return f"{mark} {escape(check.what)}: {escape(check.said)}{fix}"


async def _server() -> Check:
    try:
        url = client_env.server_url()
    except BenchwarmersError as exc:
        return Check(False, "server", str(exc), f"unset {client_env.URL_ENV} or fix it")
    try:
        async with httpx.AsyncClient(timeout=SERVER_TIMEOUT) as http:
            reply = await http.get(url + "/healthz")
    except httpx.HTTPError:
        return Check(
            False, "server", f"nothing answers at {url}", f"benchwarmers serve, or set {client_env.URL_ENV}"
        )
    if reply.status_code != 200:
        return Check(
            False, "server", f"{url}/healthz answered {reply.status_code}", "is it a Benchwarmers server?"
        )
    folder, fingerprint = local_store()
    theirs = reply.json().get("store") if "json" in reply.headers.get("content-type", "") else None
    if theirs != fingerprint:
        return Check(
            False,
            "server",
            f"answers at {url}, but uses another store than the data folder {folder}",
            f"stop it and run benchwarmers serve here, or set {client_env.URL_ENV} to this folder's server",
        )
    return Check(True, "server", f"answers at {url}, on the data folder {folder}")
