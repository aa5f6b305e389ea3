"""The bench as the rest of the code holds it: frozen views of its rows.

The registry's functions (`store/endpoints.py`, `store/models.py`,
`store/collections.py`) take the `Store` and return these views, never ORM
objects, so callers cannot lazy-load outside a session or change a row
behind the writer's back. Both ends of that live here: a row made into its
view (`endpoint_view`, `model_view`, `collection_view`), and a row a write
changes found by the name a person gives it (`endpoint_row`, `model_row`:
a `NotFound` fit to show the user as is), so the three modules stand on this
one rather than on each other.

`Indexed` is the shape of the reads every ask shares from a cache (the
bench by alias, the collections by name): indexed once, when loaded, so an
ask looks its collection and members up by name instead of building a dict
or scanning a list of its own.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import datetime
from types import MappingProxyType
from typing import Generic, TypeVar, cast

from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession
from sqlalchemy.orm import selectinload

from benchwarmers.errors import NotFound
from benchwarmers.store import schema
from benchwarmers.store.times import utc
from benchwarmers.types import ApiKind, ModelRole, ModelStatus, ReplyMode

View = TypeVar("View")


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
class Indexed(Generic[View]):
    """One cached read: the views in order, and by name (read-only: every
    ask shares it)."""

    views: tuple[View, ...]
    by_name: Mapping[str, View]

    @classmethod
    def of(cls, views: tuple[View, ...], name: Callable[[View], str]) -> Indexed[View]:
        return cls(views, MappingProxyType({name(view): view for view in views}))


async def endpoint_row(session: AsyncSession, name: str) -> schema.Endpoint:
    row = await session.scalar(select(schema.Endpoint).where(schema.Endpoint.name == name))
    if row is None:
        raise NotFound(f"no endpoint named {name!r}")
    return row


async def model_row(session: AsyncSession, alias: str) -> schema.Model:
    row = await session.scalar(
        select(schema.Model).where(schema.Model.alias == alias).options(selectinload(schema.Model.endpoint))
    )
    if row is None:
        raise NotFound(f"no model with alias {alias!r} on the bench")
    return row


def endpoint_view(row: schema.Endpoint) -> EndpointView:
    return EndpointView(
        name=row.name,
        base_url=row.base_url,
        api=cast(ApiKind, row.api),
        simulated=row.simulated,
        needs_key=row.needs_key,
        created_at=utc(row.created_at),
        limit_scope=row.limit_scope,
    )


def model_view(row: schema.Model) -> ModelView:
    return ModelView(
        alias=row.alias,
        endpoint=endpoint_view(row.endpoint),
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


def collection_view(row: schema.Collection, members: list[str]) -> CollectionView:
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
