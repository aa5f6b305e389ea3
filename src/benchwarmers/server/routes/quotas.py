"""`GET /bench/quotas`: every limit with what is used, left and when it
resets, this month's usage ledger and the resting models, as JSON (the
Quotas page and `benchwarmers quotas` show the same view). It spends no
model calls."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Request

from benchwarmers.errors import Refused
from benchwarmers.limits.quotas import as_json, quotas_view
from benchwarmers.server.callers import caller_may_administer, caller_of
from benchwarmers.server.deps import runtime_of

router = APIRouter()


@router.get("/bench/quotas")
async def quotas(request: Request) -> dict[str, Any]:
    """Every endpoint's limits and usage: the owner's view, so a key limited
    to some collections (which would learn every endpoint's use) gets 403."""
    if not caller_may_administer(caller_of(request)):
        raise Refused(
            "quotas show every endpoint's usage: a key limited to some collections may not read them"
        )
    return as_json(await quotas_view(runtime_of(request).store))
