"""Collections: the panels a client asks for as `bench/<name>`.

A collection names its members in seat order and how it answers: its reply
mode and merger, its seats (explorers, shadows), its quorum and deadline,
the text it keeps, its judge, its budgets' seating. Each setting is checked
here, so the CLI, the dashboard and the API refuse the same values in the
same words.

Reads (`list_collections`, `collections_by_name`, `get_collection`) come
from a cache every ask shares (`_COLLECTIONS`), as the bench's do
(`store/models.py`): dropped the moment a write to these tables commits in
this process, re-read after `changes.DEFAULT_TTL` seconds anyway, indexed
by name once, when loaded.

Errors: an unknown name raises `NotFound`, a duplicate `Conflict`, a bad
value `UserError`, each with a message fit to show the user as is.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from typing import Any

from sqlalchemy import delete, select
from sqlalchemy.ext.asyncio import AsyncSession
from sqlalchemy.orm import selectinload

from benchwarmers.errors import Conflict, NotFound, UserError
from benchwarmers.store import kept, schema
from benchwarmers.store.changes import Cached
from benchwarmers.store.db import Store
from benchwarmers.store.views import KEEP_DAYS, CollectionView, Indexed, collection_view, model_row
from benchwarmers.types import DEADLINE_MOST, ReplyMode

# Collections are asked as bench/<name>[:merged|:route], so no slash and no colon.
COLLECTION_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$")
REPLY_MODES: tuple[ReplyMode, ...] = ("panel", "merged")
# Whether an explorer's find clearly better than a record seat takes it (bench/decider.py).
PROMOTIONS = ("auto", "suggest", "never")
# What a quorum or deadline does to the seats still answering (`panel/quorum.py`).
ON_CUT = ("cancel", "finish")
# The longest a collection may keep its text, in days.
KEEP_DAYS_MOST = 3650
# The most seats (record, explorer, shadow) or quorum a collection may name: far
# past any panel, and below what SQLite's integer holds (a form's `1e300` read
# as a whole number overflowed it, a 500).
SEATS_MOST = 1000
# Every collection (with its members), as last read.
_COLLECTIONS: Cached[Indexed[CollectionView]] = Cached(("collections", "collection_members", "models"))


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
        row = schema.Collection(name=name, created_at=datetime.now(UTC), **fields)
        row.members = [
            schema.CollectionMember(model_id=model.id, position=index)
            for index, model in enumerate(model_rows)
        ]
        session.add(row)
        await session.flush()
        return collection_view(row, [model.alias for model in model_rows])


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
    `keep_text` off removes the text already kept; a new `keep_days` moves
    the expiry of what is kept already (`kept.redate`)."""
    async with store.write() as session:
        row = await _collection_row(session, name, lock=True)
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
        # Text deleted here (the setting off, a shorter retention) is erased once committed.
        forgets = row.keep_text and (not fields["keep_text"] or fields["keep_days"] < row.keep_days)
        if row.keep_text and not fields["keep_text"]:
            await session.execute(delete(schema.KeptText).where(schema.KeptText.collection == row.name))
        elif fields["keep_days"] != row.keep_days:  # what is kept follows the retention set now
            await kept.redate(session, row.name, row.keep_days, fields["keep_days"])
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
        view = await _collection_view_of(session, row)
    if forgets:
        await kept.erase(store)
    return view


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


async def _collections(store: Store) -> Indexed[CollectionView]:
    return await _COLLECTIONS.get(store, lambda: _read_collections(store))


async def _read_collections(store: Store) -> Indexed[CollectionView]:
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
        views = tuple(collection_view(row, members.get(row.id, [])) for row in rows)
    return Indexed.of(views, lambda collection: collection.name)


async def remove_collection(store: Store, name: str) -> None:
    """Its verdicts and call log stay (they name the collection as text);
    the text it kept (`keep_text`) goes with it, erased from the data folder."""
    async with store.write() as session:
        row = await _collection_row(session, name, lock=True)
        kept_text = row.keep_text
        await session.execute(delete(schema.KeptText).where(schema.KeptText.collection == row.name))
        await session.delete(row)
    if kept_text:
        await kept.erase(store)


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
    # Each refusal names its field, so the dashboard's form marks that box (not the name's).
    if reply not in REPLY_MODES:
        raise UserError(f"reply mode {reply!r} is not known; use panel or merged", field="reply")
    if promotion not in PROMOTIONS:
        raise UserError(
            f"promotion {promotion!r} is not known; use {', '.join(PROMOTIONS)}", field="promotion"
        )
    for key, label, count in (
        ("seats", "seats", seats),
        ("explorer_seats", "explorer seats", explorer_seats),
        ("shadow_seats", "shadow seats", shadow_seats),
    ):
        if count < 0:
            raise UserError(f"{label} cannot be negative ({count})", field=key)
        if count > SEATS_MOST:
            raise UserError(f"{label} must be at most {SEATS_MOST} ({_short(count)})", field=key)
    if not seat_timeout > 0:
        raise UserError(f"seat timeout must be more than 0 seconds ({seat_timeout})", field="seat_timeout")
    if not 1 <= keep_days <= KEEP_DAYS_MOST:
        raise UserError(f"keep days must be 1 to {KEEP_DAYS_MOST} ({keep_days})", field="keep_days")
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


def _short(number: int) -> str:
    """A number as an error repeats it: a form's `1e300` read whole is 301 digits."""
    text = str(number)
    return text if len(text) <= 15 else f"{text[:3]}... ({len(text)} digits)"


def quorum_fields(quorum: int, deadline: float, on_cut: str) -> dict[str, Any]:
    """A collection's quorum, deadline and what a cut does, checked (0: off)."""
    if isinstance(quorum, bool) or not isinstance(quorum, int) or quorum < 0:
        raise UserError(
            f"quorum must be a whole number of seats, 0 or more (0: every seat), not {quorum!r}",
            field="quorum",
        )
    if quorum > SEATS_MOST:
        raise UserError(f"quorum must be at most {SEATS_MOST} seats, not {_short(quorum)}", field="quorum")
    number = isinstance(deadline, int | float) and not isinstance(deadline, bool)
    if not number or not 0 <= deadline <= DEADLINE_MOST:
        raise UserError(
            f"deadline must be 0 to {DEADLINE_MOST:g} seconds (0: none; at most a day), not {deadline!r}",
            field="deadline",
        )
    if on_cut not in ON_CUT:
        raise UserError(f"on cut {on_cut!r} is not known; use {' or '.join(ON_CUT)}", field="on_cut")
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
        await model_row(session, merger)
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
    return collection_view(loaded, [m.model.alias for m in loaded.members])


async def _collection_row(session: AsyncSession, name: str, *, lock: bool = False) -> schema.Collection:
    """The collection's row; `lock`ed for a change (PostgreSQL's row lock;
    SQLite has one writer): a panel keeping text reads the setting under
    the same lock (`kept.keep`), so it sees the change or the change sees its text."""
    name = name.removeprefix("bench/")
    query = select(schema.Collection).where(schema.Collection.name == name).options(*_member_loads())
    row = await session.scalar(query.with_for_update() if lock else query)
    if row is None:
        raise NotFound(f"no collection named {name!r}")
    return row
