"""Endpoints: where the bench's models are served, and the rules for one.

Every surface that changes the bench (CLI, dashboard, onboarding) goes
through these functions, so the rules live in one place: an endpoint's name
(it becomes an environment variable name, BENCHWARMERS_KEY_<NAME>, and a
keys.json key, so no two endpoints may share one), its URL and API kind
checked, and no endpoint removed from under its models.

    from benchwarmers.store.endpoints import add_endpoint
    await add_endpoint(rt.store, "openrouter", "https://openrouter.ai/api/v1", "openai")

Errors: an unknown name raises `NotFound`, a duplicate `Conflict`, a bad
value `UserError`, each with a message fit to show the user as is.
"""

from __future__ import annotations

import re
from datetime import UTC, datetime
from urllib.parse import urlsplit

from sqlalchemy import func, select

from benchwarmers.config.keys import env_var_name
from benchwarmers.errors import Conflict, UserError
from benchwarmers.store import schema
from benchwarmers.store.db import Store
from benchwarmers.store.models import drop_model
from benchwarmers.store.views import EndpointView, endpoint_row, endpoint_view
from benchwarmers.types import API_KINDS, LIMIT_SCOPES, ApiKind

# Endpoint names become environment variable names (BENCHWARMERS_KEY_<NAME>) and keys.json keys.
ENDPOINT_NAME = re.compile(r"^[a-z0-9][a-z0-9_-]{0,63}$")


def check_endpoint_name(name: str) -> str:
    if not ENDPOINT_NAME.match(name):
        raise UserError(
            f"endpoint name {name!r} is not valid: use lowercase letters, digits, '-' or '_' (up to 64)"
        )
    return name


def check_base_url(url: str) -> str:
    """An http(s) URL with a host; returned without a trailing slash."""
    url = url.strip()
    try:
        parts = urlsplit(url)
        parts.port  # noqa: B018 - raises ValueError on a bad port
    except ValueError as exc:
        raise UserError(f"base URL {url!r} is not valid: {exc}") from None
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise UserError(f"base URL {url!r} is not valid: expected http:// or https:// and a host")
    if parts.query or parts.fragment:
        raise UserError(f"base URL {url!r} is not valid: no query or fragment")
    return url.rstrip("/")


def check_scope(scope: str) -> str:
    """A limit scope as stored: "" (auto: `limits/scope.py` decides) or one of
    `LIMIT_SCOPES`; the CLI's word "auto" is taken for ""."""
    value = "" if scope in ("", "auto") else scope
    if value and value not in LIMIT_SCOPES:
        raise UserError(f"unknown limit scope {scope!r}; use key, model or auto")
    return value


def check_api(api: str) -> ApiKind:
    if api not in API_KINDS:
        raise UserError(f"API kind {api!r} is not known; use one of: {', '.join(API_KINDS)}")
    return api


async def add_endpoint(
    store: Store,
    name: str,
    base_url: str,
    api: str = "openai",
    *,
    simulated: bool = False,
    needs_key: bool | None = None,
    limit_scope: str = "",
) -> EndpointView:
    """Register an endpoint. `needs_key` defaults to True except for Ollama,
    which usually runs locally without one; `limit_scope` "" lets the
    limiter decide (`limits/scope.py`)."""
    check_endpoint_name(name)
    scope = check_scope(limit_scope)
    url = check_base_url(base_url)
    kind = check_api(api)
    async with store.write() as session:
        existing = (await session.scalars(select(schema.Endpoint))).all()
        for other in existing:
            if other.name == name:
                raise Conflict(f"endpoint {name!r} already exists")
            if env_var_name(other.name) == env_var_name(name):
                raise Conflict(
                    f"endpoint {name!r} would share the key variable {env_var_name(name)} with {other.name!r}"
                )
        row = schema.Endpoint(
            name=name,
            base_url=url,
            api=kind,
            simulated=simulated,
            needs_key=(kind != "ollama") if needs_key is None else needs_key,
            limit_scope=scope,
            created_at=datetime.now(UTC),
        )
        session.add(row)
        await session.flush()
        return endpoint_view(row)


async def set_limit_scope(store: Store, name: str, scope: str) -> EndpointView:
    """Say whom the endpoint's provider limits count: "key", "model", or "auto"."""
    value = check_scope(scope)
    async with store.write() as session:
        row = await endpoint_row(session, name)
        row.limit_scope = value
        return endpoint_view(row)


async def list_endpoints(store: Store) -> list[EndpointView]:
    async with store.read() as session:
        rows = (await session.scalars(select(schema.Endpoint).order_by(schema.Endpoint.name))).all()
        return [endpoint_view(row) for row in rows]


async def get_endpoint(store: Store, name: str) -> EndpointView:
    async with store.read() as session:
        return endpoint_view(await endpoint_row(session, name))


async def remove_endpoint(store: Store, name: str, *, with_models: bool = False) -> None:
    """Refused while models use the endpoint, unless `with_models`: then its
    models go too (out of their collections; their calls and verdicts stay
    in the log under their aliases)."""
    async with store.write() as session:
        row = await endpoint_row(session, name)
        models = (
            await session.scalars(
                select(schema.Model).where(schema.Model.endpoint_id == row.id).order_by(schema.Model.alias)
            )
        ).all()
        if models and not with_models:
            aliases = [m.alias for m in models]
            shown = ", ".join(aliases[:5]) + (f" and {len(aliases) - 5} more" if len(aliases) > 5 else "")
            raise Conflict(
                f"endpoint {name!r} still serves {len(aliases)} model(s) ({shown}); remove them first"
            )
        for model in models:
            await drop_model(session, model)
        await session.delete(row)


async def count_models(store: Store) -> dict[str, int]:
    """Models per endpoint name (endpoints with none are absent)."""
    async with store.read() as session:
        rows = await session.execute(
            select(schema.Endpoint.name, func.count(schema.Model.id))
            .join(schema.Model, schema.Model.endpoint_id == schema.Endpoint.id)
            .group_by(schema.Endpoint.name)
        )
        return {name: count for name, count in rows.all()}
