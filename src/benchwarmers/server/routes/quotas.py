"""`GET /bench/quotas`: every limit with what is used, left and when it
resets, this month's usage ledger and the resting models, as JSON (the
Quotas page and `benchwarmers quotas` show the same view). It spends no
model calls."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Request

from benchwarmers.core import quotas_json
from benchwarmers.server.access import gateway
from benchwarmers.server.deps import admin_of

router = APIRouter()


@router.get("/bench/quotas")
@gateway
async def quotas(request: Request) -> dict[str, Any]:
    return quotas_json(await admin_of(request).quotas())
