"""The models on the bench: each served by an endpoint, under one alias.

A model is registered without a probe (onboarding probes; this only
records it), under one alias, and once per served id on its endpoint; its
status says why it is benched and until when (retired, resting); it leaves
the bench outright only when no collection lists it (retiring is the usual
way to bench a model), its calls and verdicts staying in the log under its
alias.

Reads of the bench (`list_models`, `models_by_alias`, `get_model`) come from
a cache every ask shares (`_BENCH`): dropped the moment a write to these
tables commits in this process, and re-read after `changes.DEFAULT_TTL`
seconds anyway, so a change made by another process (the CLI beside a
server) shows within that time; indexed by alias once, when loaded.

    model = await get_model(rt.store, "gpt-4o")   # a ModelView; .endpoint is an EndpointView

Errors: an unknown alias raises `NotFound`, a duplicate `Conflict`, a bad
value `UserError`, each with a message fit to show the user as is.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from datetime import UTC, datetime

from sqlalchemy import delete, select, update
from sqlalchemy.ext.asyncio import AsyncSession
from sqlalchemy.orm import joinedload

from benchwarmers.errors import Conflict, UserError
from benchwarmers.store import schema
from benchwarmers.store.changes import Cached
from benchwarmers.store.db import Store
from benchwarmers.store.views import Indexed, ModelView, endpoint_row, model_row, model_view
from benchwarmers.types import MODEL_ROLES, MODEL_STATUSES, ModelRole, ModelStatus

# Aliases show in headings and `--with` lists; served ids may hold slashes and colons, so aliases may too.
# An alias is also part of addresses (`/models/<alias>`, the Bench page's buttons): no character that
# means something there (`?`, `#`, `%`, a space), and each `/`-part a name, never empty, `.` or `..`
# (which a browser or a proxy resolves, changing the path).
ALIAS = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._:/@+-]{0,127}$")
ALIAS_RULE = (
    "letters, digits and . _ - : / @ + (up to 128), starting with a letter or digit; "
    "each part between slashes a name (not empty, . or ..)"
)

# Every model (with its endpoint), as last read.
_BENCH: Cached[Indexed[ModelView]] = Cached(("endpoints", "models"))


def check_alias(alias: str) -> str:
    """The one rule an alias is held to, wherever one is typed (CLI, API, dashboard, onboarding)."""
    if not ALIAS.match(alias) or any(part in ("", ".", "..") for part in alias.split("/")):
        raise UserError(f"alias {alias!r} is not valid: {ALIAS_RULE}")
    return alias


def check_role(role: str) -> ModelRole:
    if role not in MODEL_ROLES:
        raise UserError(f"role {role!r} is not known; use one of: {', '.join(MODEL_ROLES)}")
    return role


def check_status(status: str) -> ModelStatus:
    if status not in MODEL_STATUSES:
        raise UserError(f"status {status!r} is not known; use one of: {', '.join(MODEL_STATUSES)}")
    return status


def check_served(served: str) -> str:
    """A served model id, stripped, or a UserError (no spaces or control
    characters, up to 256 characters): what an endpoint could be asked for."""
    served = served.strip()
    if not served or any(ch.isspace() or not ch.isprintable() for ch in served) or len(served) > 256:
        raise UserError(f"served model id {served[:300]!r} is not valid: no spaces, up to 256 characters")
    return served


async def add_model(
    store: Store,
    alias: str,
    endpoint: str,
    served: str,
    role: str = "general",
    *,
    status: str = "available",
    ad_hoc: bool = False,
    context_window: int | None = None,
    output_limit: int | None = None,
    vision: bool | None = None,
    tools: bool = True,
    price_in: float | None = None,
    price_out: float | None = None,
    structured_output: bool | None = None,
) -> ModelView:
    """Register a model without probing it (onboarding probes; this only records)."""
    check_alias(alias)
    served = check_served(served)
    kind = check_role(role)
    check_status(status)
    async with store.write() as session:
        serving = await endpoint_row(session, endpoint)
        taken = await session.scalar(select(schema.Model).where(schema.Model.alias == alias))
        if taken is not None:
            raise Conflict(f"alias {alias!r} is already on the bench")
        same = await session.scalar(
            select(schema.Model.alias).where(
                schema.Model.endpoint_id == serving.id, schema.Model.served == served
            )
        )
        if same is not None:
            raise Conflict(f"{served!r} on endpoint {endpoint!r} is already on the bench as {same!r}")
        now = datetime.now(UTC)
        row = schema.Model(
            alias=alias,
            endpoint=serving,
            served=served,
            role=kind,
            status=status,
            ad_hoc=ad_hoc,
            context_window=context_window,
            output_limit=output_limit,
            vision=(kind == "vision") if vision is None else vision,
            tools=tools,
            price_in=price_in,
            price_out=price_out,
            structured_output=structured_output,
            resting_until=None,
            status_reason="",
            status_changed_at=now,
            created_at=now,
        )
        session.add(row)
        session.add(
            schema.ModelPrice(alias=alias, at=now, price_in=price_in, price_out=price_out, source="catalog")
        )
        await session.flush()
        return model_view(row)


async def list_models(
    store: Store, *, endpoint: str | None = None, include_retired: bool = True
) -> list[ModelView]:
    """By alias; from the shared cache (see the module's docstring)."""
    return [
        model
        for model in (await _bench(store)).views
        if (endpoint is None or model.endpoint.name == endpoint)
        and (include_retired or model.status != "retired")
    ]


async def models_by_alias(store: Store) -> Mapping[str, ModelView]:
    """Every model by alias, retired ones too (read-only; from the same cache)."""
    return (await _bench(store)).by_name


async def get_model(store: Store, alias: str) -> ModelView:
    model = (await _bench(store)).by_name.get(alias)
    if model is not None:
        return model
    async with store.read() as session:  # not cached yet (added elsewhere), or not there at all
        return model_view(await model_row(session, alias))


async def _bench(store: Store) -> Indexed[ModelView]:
    return await _BENCH.get(store, lambda: _read_models(store))


async def _read_models(store: Store) -> Indexed[ModelView]:
    """One statement, the endpoints joined (the cache reads this again every
    few seconds under load: a second statement was a quarter of its CPU)."""
    async with store.read() as session:
        query = select(schema.Model).options(joinedload(schema.Model.endpoint)).order_by(schema.Model.alias)
        views = tuple(model_view(row) for row in (await session.scalars(query)).all())
    return Indexed.of(views, lambda model: model.alias)


async def set_status(
    store: Store, alias: str, status: str, *, reason: str = "", resting_until: datetime | None = None
) -> ModelView:
    """Change a model's status with the reason shown beside it (probes, limits, the user)."""
    check_status(status)
    if status == "resting" and resting_until is None:
        raise UserError("a resting model needs the time it rests until")
    async with store.write() as session:
        row = await model_row(session, alias)
        row.status = status
        row.status_reason = reason
        row.resting_until = resting_until if status == "resting" else None
        row.status_changed_at = datetime.now(UTC)
        await session.flush()
        return model_view(row)


async def retire(store: Store, alias: str, reason: str = "retired by the user") -> ModelView:
    return await set_status(store, alias, "retired", reason=reason)


# Alert kinds that only say a model is benched (bench/retirement.py raises them).
BENCHED_ALERT_KINDS = ("retired", "unlisted")


async def restore(store: Store, alias: str) -> ModelView:
    """Back to available, whatever benched it; its evidence (calls, probes) stays,
    while the alerts that only said it was benched are dismissed."""
    view = await set_status(store, alias, "available", reason="restored")
    async with store.write() as session:
        await session.execute(
            update(schema.Alert)
            .where(schema.Alert.subject == alias, schema.Alert.kind.in_(BENCHED_ALERT_KINDS))
            .values(dismissed=True)
        )
    return view


async def set_role(store: Store, alias: str, role: str) -> ModelView:
    kind = check_role(role)
    async with store.write() as session:
        row = await model_row(session, alias)
        row.role = kind
        if kind == "vision":
            row.vision = True
        await session.flush()
        return model_view(row)


async def set_structured_output(store: Store, alias: str, value: bool | None) -> ModelView:
    """The user's word on whether a model answers in JSON natively (None: unknown)."""
    async with store.write() as session:
        row = await model_row(session, alias)
        row.structured_output = value
        await session.flush()
        return model_view(row)


async def remove_model(store: Store, alias: str, *, from_collections: bool = False) -> None:
    """Take a model off the bench entirely (a mistyped `model add`). Its
    calls and verdicts stay in the log under its alias. Refused while a
    collection lists it, unless `from_collections` (it leaves them);
    retiring is the usual way to bench a model."""
    async with store.write() as session:
        row = await model_row(session, alias)
        used_by = (
            await session.scalars(
                select(schema.Collection.name)
                .join(schema.CollectionMember)
                .where(schema.CollectionMember.model_id == row.id)
                .order_by(schema.Collection.name)
            )
        ).all()
        if used_by and not from_collections:
            raise Conflict(f"model {alias!r} is a member of {', '.join(used_by)}; take it out of those first")
        await drop_model(session, row)


async def drop_model(session: AsyncSession, model: schema.Model) -> None:
    """The model row and its seats in collections (the log keeps its calls)."""
    await session.execute(delete(schema.CollectionMember).where(schema.CollectionMember.model_id == model.id))
    await session.delete(model)
    await session.flush()
