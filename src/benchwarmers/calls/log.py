"""The call log: one row per outbound model call, and the monthly usage
ledger beside it, written together in one transaction the moment a call
ends, so a crash after a seat finished cannot lose that seat, and the
ledger can never count a call the log does not have.

What a row holds is what decides the bench (who answered, how fast, with
how many tokens, with what error), never what was asked or answered: no
prompt text of a gateway request, no image, no key.
"""

from __future__ import annotations

import secrets
from dataclasses import dataclass
from datetime import UTC, datetime

from sqlalchemy import select
from sqlalchemy.dialects.postgresql import insert as pg_insert
from sqlalchemy.dialects.sqlite import insert as sqlite_insert

from benchwarmers.store.db import Store
from benchwarmers.store.schema import Call, UsageMonth
from benchwarmers.types import CallKind, SeatStatus

CALL_ID_PREFIX = "c_"
ASK_ID_PREFIX = "a_"
# Error text kept per call: enough to tell what went wrong, bounded so a
# provider's HTML error page cannot bloat the log.
ERROR_LIMIT = 500


def new_call_id() -> str:
    """Opaque and unique: `c_` and 20 URL-safe random characters (120 bits)."""
    return CALL_ID_PREFIX + secrets.token_urlsafe(15)


def new_ask_id() -> str:
    """Shared by every call of one gateway ask (its seats and its merge)."""
    return ASK_ID_PREFIX + secrets.token_urlsafe(15)


def panel_task(collection: str, shape: str, what: str = "panel seat") -> str:
    """A panel call's task, ending in "(bench/<name>, <shape>)" as SPEC says."""
    return f"{what} (bench/{collection}, {shape})"


@dataclass(frozen=True, slots=True)
class CallRow:
    """One finished call, as the log keeps it."""

    id: str
    kind: CallKind
    alias: str
    endpoint: str
    served: str
    status: SeatStatus
    seconds: float
    first_byte_seconds: float | None = None
    tokens_in: int = 0
    tokens_out: int = 0
    error: str = ""
    task: str = ""
    collection: str = ""
    shape: str = ""
    seat: str = ""
    ask_id: str = ""
    conversation: str = ""
    explorer: bool = False
    # False when our own limits refused the call before it went out: it is
    # in the log (the seat shows it) but the ledger counts no request.
    sent: bool = True
    at: datetime | None = None


async def record_call(store: Store, row: CallRow) -> None:
    """Write the call and add it to this month's ledger, in one transaction."""
    at = row.at or datetime.now(UTC)
    async with store.write() as session:
        session.add(
            Call(
                id=row.id,
                at=at,
                kind=row.kind,
                alias=row.alias,
                endpoint=row.endpoint,
                served=row.served,
                task=row.task,
                collection=row.collection,
                shape=row.shape,
                seat=row.seat,
                ask_id=row.ask_id,
                conversation=row.conversation,
                status=row.status,
                seconds=round(row.seconds, 4),
                first_byte_seconds=None
                if row.first_byte_seconds is None
                else round(row.first_byte_seconds, 4),
                tokens_in=row.tokens_in,
                tokens_out=row.tokens_out,
                error=row.error[:ERROR_LIMIT],
                explorer=row.explorer,
            )
        )
        insert = sqlite_insert if store.is_sqlite else pg_insert
        statement = insert(UsageMonth).values(
            month=at.strftime("%Y-%m"),
            endpoint=row.endpoint,
            served=row.served,
            requests=1 if row.sent else 0,
            tokens_in=row.tokens_in,
            tokens_out=row.tokens_out,
        )
        statement = statement.on_conflict_do_update(
            index_elements=["month", "endpoint", "served"],
            set_={
                "requests": UsageMonth.requests + statement.excluded.requests,
                "tokens_in": UsageMonth.tokens_in + statement.excluded.tokens_in,
                "tokens_out": UsageMonth.tokens_out + statement.excluded.tokens_out,
            },
        )
        await session.execute(statement)


async def get_call(store: Store, call_id: str) -> Call | None:
    async with store.read() as session:
        return await session.get(Call, call_id)


async def calls_of_ask(store: Store, ask_id: str) -> list[Call]:
    """Every call of one gateway ask, oldest first (seats, then the merge)."""
    async with store.read() as session:
        rows = await session.scalars(select(Call).where(Call.ask_id == ask_id).order_by(Call.at))
        return list(rows)
