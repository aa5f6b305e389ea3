"""The bench's admin operations: endpoints, models and collections.

Every surface that changes the bench (CLI, dashboard, onboarding) goes
through these functions, so the rules live in one place: name patterns,
URL checks, one alias per model, no endpoint removed from under its models.
They take the `Store` and return frozen views, never ORM objects, so callers
cannot lazy-load outside a session or change a row behind the writer's back.

    from benchwarmers.store import registry
    await registry.add_endpoint(rt.store, "openrouter", "https://openrouter.ai/api/v1", "openai")
    model = await registry.get_model(rt.store, "gpt-4o")       # ModelView, .endpoint is an EndpointView

Errors: unknown names raise `NotFound`, duplicates `Conflict`, bad values
`UserError`, each with a message fit to show the user as is.

Reads of the bench and the collections (`list_models`, `get_model`,
`list_collections`, `get_collection`) come from a cache every ask shares:
dropped the moment a write to these tables commits in this process, and
re-read after `changes.DEFAULT_TTL` seconds anyway, so a change made by
another process (the CLI beside a server) shows within that time. Each
read is indexed once, when it is loaded (`models_by_alias`,
`collections_by_name`), so an ask looks its collection and members up by
name instead of building a dict or scanning a list of its own.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from types import MappingProxyType
from typing import Any, Generic, TypeVar, cast
from urllib.parse import urlsplit

from sqlalchemy import delete, func, select, update
from sqlalchemy.ext.asyncio import AsyncSession
from sqlalchemy.orm import joinedload, selectinload

from benchwarmers.config.keys import env_var_name
from benchwarmers.errors import Conflict, NotFound, UserError
from benchwarmers.store import schema
from benchwarmers.store.changes import Cached
from benchwarmers.store.db import Store
from benchwarmers.store.times import utc
from benchwarmers.types import (
    API_KINDS,
    LIMIT_SCOPES,
    MODEL_ROLES,
    MODEL_STATUSES,
    ApiKind,
    ModelRole,
    ModelStatus,
    ReplyMode,
)

# Endpoint names become environment variable names (BENCHWARMERS_KEY_<NAME>) and keys.json keys.
ENDPOINT_NAME = re.compile(r"^[a-z0-9][a-z0-9_-]{0,63}$")
# Collections are asked as bench/<name>[:merged|:route], so no slash and no colon.
COLLECTION_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$")
# Aliases show in headings and `--with` lists; served ids may hold slashes and colons, so aliases may too.
ALIAS = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._:/@+-]{0,127}$")
View = TypeVar("View")
REPLY_MODES: tuple[ReplyMode, ...] = ("panel", "merged")
# Whether an explorer's find clearly better than a record seat takes it (bench/decider.py).
PROMOTIONS = ("auto", "suggest", "never")
# What a quorum or deadline does to the seats still answering (`panel/quorum.py`).
ON_CUT = ("cancel", "finish")

# Every model (with its endpoint) and every collection (with its members), as last read.
_BENCH: Cached[_Indexed[ModelView]] = Cached(("endpoints", "models"))
_COLLECTIONS: Cached[_Indexed[CollectionView]] = Cached(("collections", "collection_members", "models"))


# ------------------------------------------------------------------ views


@dataclass(frozen=True, slots=True)
class EndpointView:
    name: str
    base_url: str
    api: ApiKind
    simulated: bool
    needs_key: bool
    created_at: datetime
    limit_scope: str = ""  # the user's choice; "" lets `limits/scope.py` decide


@dataclass(frozen=True, slots=True)
class ModelView:
    alias: str
    endpoint: EndpointView
    served: str
    role: ModelRole
    status: ModelStatus
    ad_hoc: bool
    context_window: int | None
    output_limit: int | None
    vision: bool
    tools: bool
    price_in: float | None
    price_out: float | None
    resting_until: datetime | None
    status_reason: str
    status_changed_at: datetime | None
    created_at: datetime
    # Answers in JSON when its API is asked to (None: unknown, asked natively).
    structured_output: bool | None = None
    # USD per million cached input tokens (None: the input price); who set the prices
    # ("catalog" | "user"); when the catalog found it, free before, priced (store/prices.py).
    price_cached: float | None = None
    price_source: str = "catalog"
    went_paid_at: datetime | None = None

    @property
    def simulated(self) -> bool:
        return self.endpoint.simulated


KEEP_DAYS = 30  # how long kept text stays, unless the collection says otherwise
KEEP_DAYS_MOST = 3650


@dataclass(frozen=True, slots=True)
class CollectionView:
    name: str
    members: tuple[str, ...]  # aliases, in seat order
    purpose: str
    seats: int
    explorer_seats: int
    free_only: bool  # explorer seats only for models that cost nothing
    promotion: str  # "auto", "suggest", "never": bench/decider.py
    reply: ReplyMode
    merger: str
    system_prompt: str
    seat_timeout: float
    shadow_seats: int
    created_at: datetime
    # Keep the question and answers of its asks for `keep_days` (`kept_texts`); off: none kept.
    keep_text: bool = False
    keep_days: int = KEEP_DAYS
    blind: bool = False  # the Ask page hides the names until judged
    # A judge model compares each panel's answers after the reply (`panel/judge.py`).
    judge_verdicts: bool = False
    # A member that cannot answer in JSON natively: "leave_off" or "prompt" (`panel/output.py`).
    output_fallback: str = "leave_off"
    # Answer once this many seats answered / this many seconds passed (0: off); the
    # seats still answering then: "cancel" or "finish" (`panel/quorum.py`).
    quorum: int = 0
    deadline: float = 0.0
    on_cut: str = "cancel"
    # budgets: which seats a budget that cannot pay for all keeps, "cheapest" first or by "record".
    budget_seating: str = "cheapest"


@dataclass(frozen=True, slots=True)
class _Indexed(Generic[View]):
    """One cached read: the views in order, and by name (read-only: every
    ask shares it)."""

    views: tuple[View, ...]
    by_name: Mapping[str, View]

    @classmethod
    def of(cls, views: tuple[View, ...], name: Callable[[View], str]) -> _Indexed[View]:
        return cls(views, MappingProxyType({name(view): view for view in views}))


# -------------------------------------------------------------- endpoints


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
            created_at=_now(),
        )
        session.add(row)
        await session.flush()
        return _endpoint_view(row)


async def set_limit_scope(store: Store, name: str, scope: str) -> EndpointView:
    """Say whom the endpoint's provider limits count: "key", "model", or "auto"."""
    value = check_scope(scope)
    async with store.write() as session:
        row = await _endpoint_row(session, name)
        row.limit_scope = value
        return _endpoint_view(row)


async def list_endpoints(store: Store) -> list[EndpointView]:
    async with store.read() as session:
        rows = (await session.scalars(select(schema.Endpoint).order_by(schema.Endpoint.name))).all()
        return [_endpoint_view(row) for row in rows]


async def get_endpoint(store: Store, name: str) -> EndpointView:
    async with store.read() as session:
        return _endpoint_view(await _endpoint_row(session, name))


async def remove_endpoint(store: Store, name: str, *, with_models: bool = False) -> None:
    """Refused while models use the endpoint, unless `with_models`: then its
    models go too (out of their collections; their calls and verdicts stay
    in the log under their aliases)."""
    async with store.write() as session:
        row = await _endpoint_row(session, name)
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
            await _drop_model(session, model)
        await session.delete(row)


async def _drop_model(session: AsyncSession, model: schema.Model) -> None:
    """The model row and its seats in collections (the log keeps its calls)."""
    await session.execute(delete(schema.CollectionMember).where(schema.CollectionMember.model_id == model.id))
    await session.delete(model)
    await session.flush()


async def count_models(store: Store) -> dict[str, int]:
    """Models per endpoint name (endpoints with none are absent)."""
    async with store.read() as session:
        rows = await session.execute(
            select(schema.Endpoint.name, func.count(schema.Model.id))
            .join(schema.Model, schema.Model.endpoint_id == schema.Endpoint.id)
            .group_by(schema.Endpoint.name)
        )
        return {name: count for name, count in rows.all()}


# ----------------------------------------------------------------- models


def check_alias(alias: str) -> str:
    if not ALIAS.match(alias):
        raise UserError(
            f"alias {alias!r} is not valid: letters, digits and . _ - : / @ + (up to 128), "
            "starting with a letter or digit"
        )
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
        endpoint_row = await _endpoint_row(session, endpoint)
        taken = await session.scalar(select(schema.Model).where(schema.Model.alias == alias))
        if taken is not None:
            raise Conflict(f"alias {alias!r} is already on the bench")
        same = await session.scalar(
            select(schema.Model.alias).where(
                schema.Model.endpoint_id == endpoint_row.id, schema.Model.served == served
            )
        )
        if same is not None:
            raise Conflict(f"{served!r} on endpoint {endpoint!r} is already on the bench as {same!r}")
        now = _now()
        row = schema.Model(
            alias=alias,
            endpoint=endpoint_row,
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
        return _model_view(row)


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
        return _model_view(await _model_row(session, alias))


async def _bench(store: Store) -> _Indexed[ModelView]:
    return await _BENCH.get(store, lambda: _read_models(store))


async def _read_models(store: Store) -> _Indexed[ModelView]:
    """One statement, the endpoints joined (the cache reads this again every
    few seconds under load: a second statement was a quarter of its CPU)."""
    async with store.read() as session:
        query = select(schema.Model).options(joinedload(schema.Model.endpoint)).order_by(schema.Model.alias)
        views = tuple(_model_view(row) for row in (await session.scalars(query)).all())
    return _Indexed.of(views, lambda model: model.alias)


async def set_status(
    store: Store, alias: str, status: str, *, reason: str = "", resting_until: datetime | None = None
) -> ModelView:
    """Change a model's status with the reason shown beside it (probes, limits, the user)."""
    check_status(status)
    if status == "resting" and resting_until is None:
        raise UserError("a resting model needs the time it rests until")
    async with store.write() as session:
        row = await _model_row(session, alias)
        row.status = status
        row.status_reason = reason
        row.resting_until = resting_until if status == "resting" else None
        row.status_changed_at = _now()
        await session.flush()
        return _model_view(row)


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
        row = await _model_row(session, alias)
        row.role = kind
        if kind == "vision":
            row.vision = True
        await session.flush()
        return _model_view(row)


async def set_structured_output(store: Store, alias: str, value: bool | None) -> ModelView:
    """The user's word on whether a model answers in JSON natively (None: unknown)."""
    async with store.write() as session:
        row = await _model_row(session, alias)
        row.structured_output = value
        await session.flush()
        return _model_view(row)


async def remove_model(store: Store, alias: str, *, from_collections: bool = False) -> None:
    """Take a model off the bench entirely (a mistyped `model add`). Its
    calls and verdicts stay in the log under its alias. Refused while a
    collection lists it, unless `from_collections` (it leaves them);
    retiring is the usual way to bench a model."""
    async with store.write() as session:
        row = await _model_row(session, alias)
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
        await _drop_model(session, row)


# ------------------------------------------------------------ collections


def check_collection_name(name: str) -> str:
    if not COLLECTION_NAME.match(name):
        raise UserError(
            f"collection name {name!r} is not valid: letters, digits, '.', '-' or '_' (up to 64), "
            "no '/' or ':'"
        )
    return name


async def add_collection(
    store: Store,
    name: str,
    members: Sequence[str],
    *,
    reply: str = "panel",
    merger: str = "",
    purpose: str = "",
    seats: int = 0,
    explorer_seats: int = 0,
    system_prompt: str = "",
    seat_timeout: float = 120.0,
    shadow_seats: int = 0,
    free_only: bool = False,
    promotion: str = "suggest",
    keep_text: bool = False,
    keep_days: int = KEEP_DAYS,
    blind: bool = False,
    judge_verdicts: bool = False,
    output_fallback: str = "leave_off",
    quorum: int = 0,
    deadline: float = 0.0,
    on_cut: str = "cancel",
    budget_seating: str = "cheapest",
) -> CollectionView:
    check_collection_name(name)
    fields = _collection_fields(
        reply=reply,
        purpose=purpose,
        seats=seats,
        explorer_seats=explorer_seats,
        free_only=free_only,
        system_prompt=system_prompt,
        seat_timeout=seat_timeout,
        shadow_seats=shadow_seats,
        promotion=promotion,
        keep_text=keep_text,
        keep_days=keep_days,
    )
    fields["blind"] = blind
    fields["judge_verdicts"] = bool(judge_verdicts)
    fields["output_fallback"] = check_output_fallback(output_fallback)
    fields.update(quorum_fields(quorum, deadline, on_cut))
    fields["budget_seating"] = _checked_budget_seating(budget_seating)
    async with store.write() as session:
        if await session.scalar(select(schema.Collection).where(schema.Collection.name == name)) is not None:
            raise Conflict(f"collection {name!r} already exists")
        model_rows = await _member_rows(session, members)
        fields["merger_alias"] = await _checked_merger(session, merger)
        row = schema.Collection(name=name, created_at=_now(), **fields)
        row.members = [
            schema.CollectionMember(model_id=model.id, position=index)
            for index, model in enumerate(model_rows)
        ]
        session.add(row)
        await session.flush()
        return _collection_view(row, [model.alias for model in model_rows])


async def update_collection(
    store: Store,
    name: str,
    *,
    members: Sequence[str] | None = None,
    reply: str | None = None,
    merger: str | None = None,
    purpose: str | None = None,
    seats: int | None = None,
    explorer_seats: int | None = None,
    system_prompt: str | None = None,
    seat_timeout: float | None = None,
    shadow_seats: int | None = None,
    free_only: bool | None = None,
    promotion: str | None = None,
    keep_text: bool | None = None,
    keep_days: int | None = None,
    blind: bool | None = None,
    judge_verdicts: bool | None = None,
    output_fallback: str | None = None,
    quorum: int | None = None,
    deadline: float | None = None,
    on_cut: str | None = None,
    budget_seating: str | None = None,
) -> CollectionView:
    """Change what is given (None leaves a field as it is). Turning
    `keep_text` off removes the text already kept."""
    async with store.write() as session:
        row = await _collection_row(session, name)
        fields = _collection_fields(
            reply=row.reply if reply is None else reply,
            purpose=row.purpose if purpose is None else purpose,
            seats=row.seats if seats is None else seats,
            explorer_seats=row.explorer_seats if explorer_seats is None else explorer_seats,
            free_only=row.free_only if free_only is None else free_only,
            system_prompt=row.system_prompt if system_prompt is None else system_prompt,
            seat_timeout=row.seat_timeout if seat_timeout is None else seat_timeout,
            shadow_seats=row.shadow_seats if shadow_seats is None else shadow_seats,
            promotion=row.promotion if promotion is None else promotion,
            keep_text=row.keep_text if keep_text is None else keep_text,
            keep_days=row.keep_days if keep_days is None else keep_days,
        )
        if row.keep_text and not fields["keep_text"]:
            await session.execute(delete(schema.KeptText).where(schema.KeptText.collection == row.name))
        if merger is not None:
            fields["merger_alias"] = await _checked_merger(session, merger)
        if blind is not None:
            fields["blind"] = blind
        if judge_verdicts is not None:
            fields["judge_verdicts"] = bool(judge_verdicts)
        if output_fallback is not None:
            fields["output_fallback"] = check_output_fallback(output_fallback)
        fields.update(
            quorum_fields(
                row.quorum if quorum is None else quorum,
                row.deadline if deadline is None else deadline,
                row.on_cut if on_cut is None else on_cut,
            )
        )
        if budget_seating is not None:
            fields["budget_seating"] = _checked_budget_seating(budget_seating)
        for key, value in fields.items():
            setattr(row, key, value)
        if members is not None:
            model_rows = await _member_rows(session, members)
            row.members.clear()
            await session.flush()
            row.members.extend(
                schema.CollectionMember(model_id=model.id, position=index)
                for index, model in enumerate(model_rows)
            )
        await session.flush()
        return await _collection_view_of(session, row)


async def list_collections(store: Store) -> list[CollectionView]:
    """By name; from the shared cache (see the module's docstring)."""
    return list((await _collections(store)).views)


async def collections_by_name(store: Store) -> Mapping[str, CollectionView]:
    """Every collection by name, in name order (read-only; from the same cache)."""
    return (await _collections(store)).by_name


async def get_collection(store: Store, name: str) -> CollectionView:
    """By name, with or without the `bench/` prefix."""
    collection = (await _collections(store)).by_name.get(name.removeprefix("bench/"))
    if collection is not None:
        return collection
    async with store.read() as session:  # not cached yet (added elsewhere), or not there at all
        return await _collection_view_of(session, await _collection_row(session, name))


async def _collections(store: Store) -> _Indexed[CollectionView]:
    return await _COLLECTIONS.get(store, lambda: _read_collections(store))


async def _read_collections(store: Store) -> _Indexed[CollectionView]:
    """Two statements and no member or model objects: the cache reads this
    again every few seconds under load, and loading the members' whole
    models to name them cost twice as much CPU (the refresh's share of the
    hot path)."""
    async with store.read() as session:
        rows = (await session.scalars(select(schema.Collection).order_by(schema.Collection.name))).all()
        members: dict[int, list[str]] = {}
        for collection_id, alias in await session.execute(
            select(schema.CollectionMember.collection_id, schema.Model.alias)
            .join(schema.Model, schema.Model.id == schema.CollectionMember.model_id)
            .order_by(schema.CollectionMember.position)
        ):
            members.setdefault(collection_id, []).append(alias)
        views = tuple(_collection_view(row, members.get(row.id, [])) for row in rows)
    return _Indexed.of(views, lambda collection: collection.name)


async def remove_collection(store: Store, name: str) -> None:
    """Its verdicts and call log stay (they name the collection as text);
    the text it kept (`keep_text`) goes with it."""
    async with store.write() as session:
        row = await _collection_row(session, name)
        await session.execute(delete(schema.KeptText).where(schema.KeptText.collection == row.name))
        await session.delete(row)


OUTPUT_FALLBACKS = ("leave_off", "prompt")


def check_output_fallback(value: str) -> str:
    if value not in OUTPUT_FALLBACKS:
        raise UserError(f"output fallback {value!r} is not known; use {' or '.join(OUTPUT_FALLBACKS)}")
    return value


def _collection_fields(
    *,
    reply: str,
    purpose: str,
    seats: int,
    explorer_seats: int,
    free_only: bool,
    system_prompt: str,
    seat_timeout: float,
    shadow_seats: int,
    promotion: str,
    keep_text: bool,
    keep_days: int,
) -> dict[str, Any]:
    if reply not in REPLY_MODES:
        raise UserError(f"reply mode {reply!r} is not known; use panel or merged")
    if promotion not in PROMOTIONS:
        raise UserError(f"promotion {promotion!r} is not known; use {', '.join(PROMOTIONS)}")
    for label, count in (
        ("seats", seats),
        ("explorer seats", explorer_seats),
        ("shadow seats", shadow_seats),
    ):
        if count < 0:
            raise UserError(f"{label} cannot be negative ({count})")
    if not seat_timeout > 0:
        raise UserError(f"seat timeout must be more than 0 seconds ({seat_timeout})")
    if not 1 <= keep_days <= KEEP_DAYS_MOST:
        raise UserError(f"keep days must be 1 to {KEEP_DAYS_MOST} ({keep_days})")
    return {
        "reply": reply,
        "purpose": purpose.strip(),
        "seats": seats,
        "explorer_seats": explorer_seats,
        "free_only": free_only,
        "system_prompt": system_prompt,
        "seat_timeout": float(seat_timeout),
        "shadow_seats": shadow_seats,
        "promotion": promotion,
        "keep_text": bool(keep_text),
        "keep_days": int(keep_days),
    }


def quorum_fields(quorum: int, deadline: float, on_cut: str) -> dict[str, Any]:
    """A collection's quorum, deadline and what a cut does, checked (0: off)."""
    if isinstance(quorum, bool) or not isinstance(quorum, int) or quorum < 0:
        raise UserError(f"quorum must be a whole number of seats, 0 or more (0: every seat), not {quorum!r}")
    if isinstance(deadline, bool) or not isinstance(deadline, int | float) or not 0 <= deadline < math.inf:
        raise UserError(f"deadline must be 0 or more seconds (0: none), not {deadline!r}")
    if on_cut not in ON_CUT:
        raise UserError(f"on cut {on_cut!r} is not known; use {' or '.join(ON_CUT)}")
    return {"quorum": quorum, "deadline": float(deadline), "on_cut": on_cut}


BUDGET_SEATINGS = ("cheapest", "record")


def _checked_budget_seating(value: str) -> str:
    if value not in BUDGET_SEATINGS:
        raise UserError(f"budget seating {value!r} is not known; use {', '.join(BUDGET_SEATINGS)}")
    return value


async def _member_rows(session: AsyncSession, aliases: Sequence[str]) -> list[schema.Model]:
    if not aliases:
        raise UserError("a collection needs at least one member")
    twice = sorted({alias for alias in aliases if list(aliases).count(alias) > 1})
    if twice:
        raise UserError(f"member(s) listed twice: {', '.join(twice)}")
    rows = {
        row.alias: row
        for row in (await session.scalars(select(schema.Model).where(schema.Model.alias.in_(aliases)))).all()
    }
    unknown = [alias for alias in aliases if alias not in rows]
    if unknown:
        raise NotFound(f"no model with alias {', '.join(repr(a) for a in unknown)} on the bench")
    return [rows[alias] for alias in aliases]


async def _checked_merger(session: AsyncSession, merger: str) -> str:
    merger = merger.strip()
    if merger:
        await _model_row(session, merger)
    return merger


def _member_loads() -> tuple[Any, ...]:
    return (selectinload(schema.Collection.members).selectinload(schema.CollectionMember.model),)


async def _collection_view_of(session: AsyncSession, row: schema.Collection) -> CollectionView:
    loaded = await session.scalar(
        select(schema.Collection)
        .where(schema.Collection.id == row.id)
        .options(*_member_loads())
        .execution_options(populate_existing=True)
    )
    assert loaded is not None  # the row is in this session
    return _collection_view(loaded, [m.model.alias for m in loaded.members])


# ---------------------------------------------------------------- helpers


async def _endpoint_row(session: AsyncSession, name: str) -> schema.Endpoint:
    row = await session.scalar(select(schema.Endpoint).where(schema.Endpoint.name == name))
    if row is None:
        raise NotFound(f"no endpoint named {name!r}")
    return row


async def _model_row(session: AsyncSession, alias: str) -> schema.Model:
    row = await session.scalar(
        select(schema.Model).where(schema.Model.alias == alias).options(selectinload(schema.Model.endpoint))
    )
    if row is None:
        raise NotFound(f"no model with alias {alias!r} on the bench")
    return row


async def _collection_row(session: AsyncSession, name: str) -> schema.Collection:
    name = name.removeprefix("bench/")
    row = await session.scalar(
        select(schema.Collection).where(schema.Collection.name == name).options(*_member_loads())
    )
    if row is None:
        raise NotFound(f"no collection named {name!r}")
    return row


def _now() -> datetime:
    return datetime.now(UTC)


def _endpoint_view(row: schema.Endpoint) -> EndpointView:
    return EndpointView(
        name=row.name,
        base_url=row.base_url,
        api=cast(ApiKind, row.api),
        simulated=row.simulated,
        needs_key=row.needs_key,
        created_at=utc(row.created_at),
        limit_scope=row.limit_scope,
    )


def _model_view(row: schema.Model) -> ModelView:
    return ModelView(
        alias=row.alias,
        endpoint=_endpoint_view(row.endpoint),
        served=row.served,
        role=cast(ModelRole, row.role),
        status=cast(ModelStatus, row.status),
        ad_hoc=row.ad_hoc,
        context_window=row.context_window,
        output_limit=row.output_limit,
        vision=row.vision,
        tools=row.tools,
        price_in=row.price_in,
        price_out=row.price_out,
        resting_until=None if row.resting_until is None else utc(row.resting_until),
        status_reason=row.status_reason,
        status_changed_at=None if row.status_changed_at is None else utc(row.status_changed_at),
        created_at=utc(row.created_at),
        structured_output=row.structured_output,
        price_cached=row.price_cached,
        price_source=row.price_source or "catalog",
        went_paid_at=None if row.went_paid_at is None else utc(row.went_paid_at),
    )


def _collection_view(row: schema.Collection, members: list[str]) -> CollectionView:
    return CollectionView(
        name=row.name,
        members=tuple(members),
        purpose=row.purpose,
        seats=row.seats,
        explorer_seats=row.explorer_seats,
        free_only=row.free_only,
        promotion=row.promotion,
        reply=cast(ReplyMode, row.reply),
        merger=row.merger_alias,
        system_prompt=row.system_prompt,
        seat_timeout=row.seat_timeout,
        shadow_seats=row.shadow_seats,
        created_at=utc(row.created_at),
        keep_text=row.keep_text,
        keep_days=row.keep_days,
        blind=row.blind,
        judge_verdicts=row.judge_verdicts,
        output_fallback=row.output_fallback,
        quorum=row.quorum,
        deadline=row.deadline,
        on_cut=row.on_cut,
        budget_seating=row.budget_seating,
    )
