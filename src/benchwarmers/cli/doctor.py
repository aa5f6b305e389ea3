"""`benchwarmers doctor`: is this install ready to answer, and if not, what
to run.

One line per thing a panel depends on, in the order they depend on each
other: the data folder, the store and its schema migration, each endpoint
(reached, how many models it lists, its key found or missing, never shown),
the models on the bench, the server at `BENCHWARMERS_URL`, and Redis when
`BENCHWARMERS_REDIS_URL` names it (PostgreSQL, when configured, is the store
line). Each line is green, or red with the command that fixes it; any red
line makes the exit code 1, so a script can gate on it. It sends no model
call: an endpoint is reached by listing its models.
"""

from __future__ import annotations

import asyncio
import os
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

import httpx
import typer
from rich.markup import escape

from benchwarmers import client_env
from benchwarmers.cli.context import console, with_runtime
from benchwarmers.cli.onboard import url_hint
from benchwarmers.config import home as home_config
from benchwarmers.config import keys
from benchwarmers.errors import BenchwarmersError, ProviderError
from benchwarmers.providers.base import Target, adapter_for
from benchwarmers.runtime import DATABASE_URL_ENV, REDIS_URL_ENV, Runtime
from benchwarmers.store import registry
from benchwarmers.store.db import Store, _redacted, sqlite_url
from benchwarmers.store.migrate import current_revision, head_revision, migrate

HTTP_TIMEOUT = 5.0


@dataclass(frozen=True, slots=True)
class Check:
    ok: bool
    what: str
    said: str
    fix: str = ""

    def line(self) -> str:
        mark = "[green]✓[/]" if self.ok else "[red]✗[/]"
        fix = f" [bold]→ {escape(self.fix)}[/]" if self.fix and not self.ok else ""
        return f"{mark} {escape(self.what)}: {escape(self.said)}{fix}"


def register(app: typer.Typer) -> None:
    app.command("doctor")(doctor)


def doctor() -> None:
    """Check the data folder, store, endpoints and keys, models, server and Redis: one line each."""
    checks: list[Check] = []

    def show(check: Check) -> None:
        checks.append(check)
        console.print(check.line(), soft_wrap=True)

    folder = home_config.resolve_home()
    if not folder.is_dir():
        show(
            Check(
                False,
                "data folder",
                f"{folder} does not exist",
                "benchwarmers init (or benchwarmers quickstart)",
            )
        )
    elif not os.access(folder, os.R_OK | os.W_OK | os.X_OK):
        show(
            Check(
                False, "data folder", f"{folder} is not readable and writable by you", f"chmod u+rwx {folder}"
            )
        )
    else:
        show(Check(True, "data folder", str(folder)))
        store_check = asyncio.run(_store(folder))
        show(store_check)
        if store_check.ok:
            for check in with_runtime(_bench):
                show(check)
    show(asyncio.run(_server()))
    redis_url = os.environ.get(REDIS_URL_ENV, "").strip()
    if redis_url:
        show(asyncio.run(_redis(redis_url)))
    if not all(check.ok for check in checks):
        raise typer.Exit(1)


async def _store(folder: Path) -> Check:
    """Open the store, read its schema revision, migrate it to the newest."""
    configured = os.environ.get(DATABASE_URL_ENV, "").strip()
    url = configured or sqlite_url(folder)
    kind = "PostgreSQL" if url.startswith("postgres") else "SQLite"
    shown = _redacted(url)
    store = Store(url)
    try:
        before = await current_revision(store)
        await migrate(store)
        after = await current_revision(store)
    except Exception as exc:  # any failure to open or migrate is this line's red
        fix = f"check {DATABASE_URL_ENV} and that the database answers" if configured else "check the folder"
        return Check(False, f"store ({kind})", f"{shown}: {exc}", fix)
    finally:
        await store.close()
    head = head_revision()
    state = "at the newest schema" if before == after else f"migrated from {before or 'empty'}"
    return Check(after == head, f"store ({kind})", f"{shown}, {state} ({after})", "benchwarmers init")


async def _bench(rt: Runtime) -> list[Check]:
    checks = [await _endpoint(rt, endpoint) for endpoint in await registry.list_endpoints(rt.store)]
    if not checks:
        checks.append(
            Check(
                False,
                "endpoints",
                "none yet",
                "benchwarmers quickstart, or benchwarmers endpoint add NAME URL --key",
            )
        )
    models = await registry.list_models(rt.store)
    by_status = Counter(m.status for m in models)
    summary = ", ".join(f"{count} {status}" for status, count in sorted(by_status.items())) or "none"
    usable = by_status.get("available", 0)
    first = next(iter(await registry.list_endpoints(rt.store)), None)
    fix = f"benchwarmers onboard MODEL_ID -e {first.name if first else 'ENDPOINT'}"
    checks.append(Check(usable > 0, "models", f"{len(models)} on the bench ({summary})", fix))
    return checks


async def _endpoint(rt: Runtime, endpoint: registry.EndpointView) -> Check:
    what = f"endpoint {endpoint.name}"
    source = keys.key_source(endpoint.name) if endpoint.needs_key else None
    if endpoint.needs_key and source is None:
        return Check(
            False,
            what,
            f"{endpoint.base_url}: key missing ({keys.env_var_name(endpoint.name)} or keys.json)",
            f"benchwarmers endpoint key set {endpoint.name}",
        )
    key_said = {None: "no key needed", "env": f"key from {keys.env_var_name(endpoint.name)}"}.get(
        source, "key from keys.json"
    )
    target = Target(
        endpoint=endpoint.name,
        api=endpoint.api,
        base_url=endpoint.base_url,
        served="",
        key=keys.endpoint_key(endpoint.name) if endpoint.needs_key else None,
    )
    try:
        async with asyncio.timeout(HTTP_TIMEOUT):
            listed = await adapter_for(endpoint.api, rt.outbound).list_models(target)
    except (ProviderError, TimeoutError) as exc:
        said = str(exc) or "no answer in time"
        hint = url_hint(endpoint).lstrip("; ")
        fix = hint or f"check the URL, and the key (benchwarmers endpoint key set {endpoint.name})"
        return Check(False, what, f"{endpoint.base_url} not reached ({said}); {key_said}", fix)
    return Check(True, what, f"{endpoint.base_url} reached, {len(listed)} models listed; {key_said}")


async def _server() -> Check:
    try:
        url = client_env.server_url()
    except BenchwarmersError as exc:
        return Check(False, "server", str(exc), f"unset {client_env.URL_ENV} or fix it")
    try:
        async with httpx.AsyncClient(timeout=HTTP_TIMEOUT) as http:
            reply = await http.get(url + "/healthz")
    except httpx.HTTPError:
        return Check(
            False, "server", f"nothing answers at {url}", f"benchwarmers serve, or set {client_env.URL_ENV}"
        )
    if reply.status_code != 200:
        return Check(
            False, "server", f"{url}/healthz answered {reply.status_code}", "is it a Benchwarmers server?"
        )
    return Check(True, "server", f"answers at {url}")


async def _redis(url: str) -> Check:
    from redis.asyncio import Redis

    client = Redis.from_url(url, socket_connect_timeout=HTTP_TIMEOUT, socket_timeout=HTTP_TIMEOUT)
    try:
        await client.ping()
    except Exception as exc:  # any failure to reach it is this line's red
        return Check(False, "Redis", f"{_redacted(url)}: {exc}", f"start Redis, or unset {REDIS_URL_ENV}")
    finally:
        await client.aclose()
    return Check(True, "Redis", f"{_redacted(url)} answers (shared rate-limit counters)")
