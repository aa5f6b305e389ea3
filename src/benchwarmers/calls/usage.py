"""Spend read back from the call log: calls, tokens and USD per gateway key,
collection, model or day over a span of days (`GET /bench/usage`,
`benchwarmers usage`, the Quotas page).

Each call's cost was fixed as it ended, at the price then in effect
(`calls/cost.py`), so a price change never re-prices what was already
spent. A call whose price was unknown is counted in `unpricedCalls` and
never as 0 USD: its USD sum leaves it out, and says so. Calls from before
costs were kept (revision 0009) are unpriced for the same reason.

Days are UTC dates, both ends included. Calls with no key (the owner's
asks, the bench's own probes) group under `OWNER`; calls with no
collection (probes, the suite) under `NO_COLLECTION`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, date, datetime, time, timedelta
from typing import Any, Literal, get_args

from sqlalchemy import case, func, select

from benchwarmers.calls.cost import DIGITS
from benchwarmers.errors import UserError
from benchwarmers.store.db import Store
from benchwarmers.store.schema import Call

UsageBy = Literal["key", "collection", "model", "day"]
USAGE_BY: tuple[UsageBy, ...] = get_args(UsageBy)
OWNER = "owner"
NO_COLLECTION = "(none)"


@dataclass(frozen=True, slots=True)
class UsageRow:
    """One group's spend (or the total's, `group` empty)."""

    group: str
    calls: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    cost_usd: float = 0.0
    unpriced_calls: int = 0

    def as_json(self, *, group: bool = True) -> dict[str, Any]:
        out: dict[str, Any] = {"group": self.group} if group else {}
        out.update(
            calls=self.calls,
            inputTokens=self.input_tokens,
            outputTokens=self.output_tokens,
            costUsd=round(self.cost_usd, DIGITS),
            unpricedCalls=self.unpriced_calls,
        )
        return out


def _column(by: UsageBy) -> Any:
    return {
        "key": Call.gateway_key,
        "collection": Call.collection,
        "model": Call.alias,
        "day": func.date(Call.at),
    }[by]


def _label(by: UsageBy, value: Any) -> str:
    if by == "day":
        return str(value)[:10]
    if not value:
        return OWNER if by == "key" else NO_COLLECTION if by == "collection" else ""
    return str(value)


async def usage(
    store: Store, by: UsageBy, since: date, until: date, *, key: str | None = None
) -> tuple[list[UsageRow], UsageRow]:
    """Each group's spend from `since` to `until` (UTC days, inclusive), the
    dearest first (days in order), and the total; `key`: only that gateway
    key's calls (a key reads its own spend, the owner everyone's)."""
    column = _column(by)
    start = datetime.combine(since, time(), UTC)
    end = datetime.combine(until + timedelta(days=1), time(), UTC)
    query = (
        select(
            column.label("grp"),
            func.count(),
            func.coalesce(func.sum(Call.tokens_in), 0),
            func.coalesce(func.sum(Call.tokens_out), 0),
            func.coalesce(func.sum(Call.cost_usd), 0.0),
            func.coalesce(func.sum(case((Call.cost_usd.is_(None), 1), else_=0)), 0),
        )
        .where(Call.at >= start, Call.at < end)
        .group_by(column)
    )
    if key is not None:
        query = query.where(Call.gateway_key == key)
    async with store.read() as session:
        found = (await session.execute(query)).all()
    merged: dict[str, UsageRow] = {}  # two raw values may share a label ("" and none)
    for value, calls, tokens_in, tokens_out, usd, unpriced in found:
        label = _label(by, value)
        before = merged.get(label, UsageRow(label))
        merged[label] = UsageRow(
            label,
            before.calls + int(calls),
            before.input_tokens + int(tokens_in),
            before.output_tokens + int(tokens_out),
            before.cost_usd + float(usd),
            before.unpriced_calls + int(unpriced),
        )
    rows = list(merged.values())
    if by == "day":
        rows.sort(key=lambda r: r.group)
    else:
        rows.sort(key=lambda r: (-r.cost_usd, -(r.input_tokens + r.output_tokens), r.group))
    return rows, _total(rows)


def _total(rows: Sequence[UsageRow]) -> UsageRow:
    return UsageRow(
        "",
        sum(r.calls for r in rows),
        sum(r.input_tokens for r in rows),
        sum(r.output_tokens for r in rows),
        sum(r.cost_usd for r in rows),
        sum(r.unpriced_calls for r in rows),
    )


def check_by(by: str) -> UsageBy:
    if by not in USAGE_BY:
        raise UserError(f"by must be one of {', '.join(USAGE_BY)}, got {by!r}")
    return by


def check_day(name: str, text: str) -> date:
    """A day as YYYY-MM-DD (a UTC date), else a 400 naming the parameter."""
    try:
        if len(text) != len("YYYY-MM-DD"):
            raise ValueError(text)
        return date.fromisoformat(text)
    except ValueError:
        raise UserError(f"{name} must be a date as YYYY-MM-DD, got {text!r}") from None


def check_span(since_text: str, until_text: str, today: date) -> tuple[date, date]:
    """`since` and `until` as given, else the first of this month and today;
    `since` after `until` is a 400."""
    since = check_day("since", since_text) if since_text else today.replace(day=1)
    until = check_day("until", until_text) if until_text else today
    if since > until:
        raise UserError(f"since ({since.isoformat()}) is after until ({until.isoformat()})")
    return since, until
