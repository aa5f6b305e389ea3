"""Spend, for one identity: what the gateway's calls cost, grouped by key,
collection, model or day (`GET /bench/usage`, `benchwarmers usage`, the
Quotas page). Whoever may administer the bench (the owner, a key not
limited to some collections) reads every call; a key limited to some
collections reads only the calls it asked (its own spend: another key's,
or the bench's own probes, are not its business).
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from benchwarmers.calls import usage as usage_log
from benchwarmers.identity.scope import OWNER, Identity, may_administer
from benchwarmers.runtime import Runtime

USAGE_BY = usage_log.USAGE_BY


class Spend:
    def __init__(self, runtime: Runtime, identity: Identity = OWNER) -> None:
        self.runtime = runtime
        self.identity = identity

    async def usage(
        self, by: str, since: str = "", until: str = "", *, now: datetime | None = None
    ) -> dict[str, Any]:
        """`{"by", "since", "until", "rows": [{"group", "calls", "inputTokens",
        "outputTokens", "costUsd", "unpricedCalls"}], "total": {...}}`; `since`
        and `until` are YYYY-MM-DD (UTC, inclusive; by default this month up
        to today). Bad input is a `UserError` (400) before anything is read."""
        kind = usage_log.check_by(by)
        today = (now or datetime.now(UTC)).astimezone(UTC).date()
        first, last = usage_log.check_span(since, until, today)
        key = None if may_administer(self.identity) else self.identity.name
        rows, total = await usage_log.usage(self.runtime.store, kind, first, last, key=key)
        return {
            "by": kind,
            "since": first.isoformat(),
            "until": last.isoformat(),
            "rows": [row.as_json() for row in rows],
            "total": total.as_json(group=False),
        }


def usd_text(usd: float, unpriced: int, calls: int) -> str:
    """A usage row's USD as people read it (the CLI's table, the Quotas
    page): "$0.0123"; "unknown" when no call's price was known (never $0);
    or the known sum and how many calls it leaves out."""
    if calls and unpriced >= calls:
        return "unknown"
    text = f"${usd:,.4f}"
    return f"{text} + {unpriced:,} unpriced" if unpriced else text
