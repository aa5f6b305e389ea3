"""Diagnostics, for `benchwarmers doctor`: is this install ready to answer,
and if not, what to run.

One `Check` per thing a panel depends on, in the order they depend on each
other: the data folder, the store and its schema migration, each endpoint
(reached by listing its models, never a model call; its key found or
missing, never shown), the models on the bench, and Redis when `BENCHWARMERS_REDIS_URL` names it
(PostgreSQL, when configured, is the store's check). Each is ok, or not
with the command that fixes it. The owner's view of their own install: the
CLI is its only caller (and adds the server at `BENCHWARMERS_URL`, a
client's setting).
"""

from __future__ import annotations

import asyncio
import os
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

from benchwarmers.config import home as home_config
from benchwarmers.config import keys as endpoint_keys
from benchwarmers.config import tunables
from benchwarmers.errors import ProviderError
from benchwarmers.providers.kinds import EndpointAt, listed_models
from benchwarmers.runtime import DATABASE_URL_ENV, REDIS_URL_ENV, Runtime
from benchwarmers.store import space
from benchwarmers.store.db import Store, redacted_url, sqlite_url, store_fingerprint
from benchwarmers.store.endpoints import list_endpoints
from benchwarmers.store.migrate import current_revision, head_revision, migrate
from benchwarmers.store.models import list_models
from benchwarmers.store.views import EndpointView
from benchwarmers.types import ApiKind

TIMEOUT = tunables.DOCTOR_TIMEOUT.value


@dataclass(frozen=True, slots=True)
class Check:
    ok: bool
    what: str
    said: str
    fix: str = ""


async def diagnose() -> list[Check]:
    """Every check, in order; the store and bench only when the folder is usable."""
    found: list[Check] = []
    folder = home_config.resolve_home()
    if not folder.is_dir():
        found.append(
            Check(
                False,
                "data folder",
                f"{folder} does not exist",
                "benchwarmers init (or benchwarmers quickstart)",
            )
        )
    elif not os.access(folder, os.R_OK | os.W_OK | os.X_OK):
        found.append(
            Check(
                False, "data folder", f"{folder} is not readable and writable by you", f"chmod u+rwx {folder}"
            )
        )
    else:
        found.append(Check(True, "data folder", str(folder)))
        found.append(_disk(folder))
        store = await _store(folder)
        found.append(store)
        if store.ok:
            async with Runtime.open(home=folder) as runtime:
                found += await _bench(runtime)
    redis_url = os.environ.get(REDIS_URL_ENV, "").strip()
    if redis_url:
        found.append(await _redis(redis_url))
    return found


async def serving_store(runtime: Runtime) -> str:
    """The store answers and can take a call now, for `/healthz`: its
    fingerprint (a digest `doctor` compares with the data folder it checks);
    `StoreError` when it does not answer, `StoreFull` when its disk is full."""
    await runtime.store.check()
    space.ensure_room(runtime.store)
    return runtime.store.fingerprint


def _disk(folder: Path) -> Check:
    free = space.free_on(folder)
    if free is None:
        return Check(True, "disk", f"free space on {folder} unknown")
    megabytes = free // (1024 * 1024)
    if free < space.MIN_FREE_BYTES:
        return Check(
            False,
            "disk",
            f"the disk is full: {megabytes} MB free on {folder}; asks are refused (507) "
            f"under {space.MIN_FREE_BYTES // (1024 * 1024)} MB",
            f"free some space on {folder}'s disk",
        )
    return Check(True, "disk", f"{megabytes} MB free on {folder}")


async def endpoint_models(runtime: Runtime, endpoint: EndpointView) -> list[str]:
    """The ids an endpoint lists now, asked with its key; its ProviderError when it cannot say."""
    async with asyncio.timeout(TIMEOUT):
        return await listed_models(runtime.outbound, endpoint)


async def listed_at(runtime: Runtime, name: str, api: ApiKind, base_url: str, key: str | None) -> list[str]:
    """The ids a server lists now, registered or not (so `endpoint add`
    checks one before keeping it, with the key it was given); its
    ProviderError when it cannot say."""
    unsaved = EndpointAt(name, api, base_url, needs_key=key is not None)
    async with asyncio.timeout(TIMEOUT):
        return await listed_models(runtime.outbound, unsaved, key=key)


def url_hint(endpoint: EndpointView) -> str:
    """The usual cause of "Not Found" from an OpenAI-compatible endpoint ("" otherwise)."""
    if missing_v1(endpoint.api, endpoint.base_url):
        return (
            f"OpenAI-compatible base URLs usually end in /v1 ({endpoint.base_url}/v1?): "
            f"`benchwarmers endpoint remove {endpoint.name}` and add it again with that URL"
        )
    return ""


def missing_v1(api: str, base_url: str) -> bool:
    return api == "openai" and not base_url.rstrip("/").endswith("/v1")


def local_store() -> tuple[Path, str]:
    """This data folder, and the fingerprint of the store a server started
    here would use (`/healthz` says a running one's)."""
    folder = home_config.resolve_home()
    return folder, store_fingerprint(_store_url(folder))


def _store_url(folder: Path) -> str:
    return os.environ.get(DATABASE_URL_ENV, "").strip() or sqlite_url(folder)


async def _store(folder: Path) -> Check:
    """Open the store, read its schema revision, migrate it to the newest."""
    configured = os.environ.get(DATABASE_URL_ENV, "").strip()
    url = _store_url(folder)
    what = f"store ({'PostgreSQL' if url.startswith('postgres') else 'SQLite'})"
    shown = redacted_url(url)
    store = Store(url)
    try:
        before = await current_revision(store)
        await migrate(store)
        after = await current_revision(store)
    except Exception as exc:  # any failure to open or migrate is this check's answer
        fix = f"check {DATABASE_URL_ENV} and that the database answers" if configured else "check the folder"
        return Check(False, what, f"{shown}: {exc}", fix)
    finally:
        await store.close()
    state = "at the newest schema" if before == after else f"migrated from {before or 'empty'}"
    return Check(after == head_revision(), what, f"{shown}, {state} ({after})", "benchwarmers init")


async def _bench(runtime: Runtime) -> list[Check]:
    endpoints = await list_endpoints(runtime.store)
    found = [await _endpoint(runtime, endpoint) for endpoint in endpoints]
    if not found:
        fix = "benchwarmers quickstart, or benchwarmers endpoint add NAME URL --key"
        found.append(Check(False, "endpoints", "none yet", fix))
    models = await list_models(runtime.store)
    by_status = Counter(m.status for m in models)
    summary = ", ".join(f"{count} {status}" for status, count in sorted(by_status.items())) or "none"
    fix = f"benchwarmers onboard MODEL_ID -e {endpoints[0].name if endpoints else 'ENDPOINT'}"
    found.append(
        Check(by_status.get("available", 0) > 0, "models", f"{len(models)} on the bench ({summary})", fix)
    )
    return found


async def _endpoint(runtime: Runtime, endpoint: EndpointView) -> Check:
    what = f"endpoint {endpoint.name}"
    variable = endpoint_keys.env_var_name(endpoint.name)
    source = endpoint_keys.key_source(endpoint.name) if endpoint.needs_key else None
    if endpoint.needs_key and source is None:
        return Check(
            False,
            what,
            f"{endpoint.base_url}: key missing ({variable} or keys.json)",
            f"benchwarmers endpoint key set {endpoint.name}",
        )
    key_said = {None: "no key needed", "env": f"key from {variable}"}.get(source, "key from keys.json")
    try:
        listed = await endpoint_models(runtime, endpoint)
    except (ProviderError, TimeoutError) as exc:
        fix = (
            url_hint(endpoint)
            or f"check the URL, and the key (benchwarmers endpoint key set {endpoint.name})"
        )
        said = str(exc) or "no answer in time"
        return Check(False, what, f"{endpoint.base_url} not reached ({said}); {key_said}", fix)
    return Check(True, what, f"{endpoint.base_url} reached, {len(listed)} models listed; {key_said}")


async def _redis(url: str) -> Check:
    from redis.asyncio import Redis

    client = Redis.from_url(url, socket_connect_timeout=TIMEOUT, socket_timeout=TIMEOUT)
    try:
        await client.ping()
    except Exception as exc:  # any failure to reach it is this check's answer
        return Check(False, "Redis", f"{redacted_url(url)}: {exc}", f"start Redis, or unset {REDIS_URL_ENV}")
    finally:
        await client.aclose()
    return Check(True, "Redis", f"{redacted_url(url)} answers (shared rate-limit counters)")
