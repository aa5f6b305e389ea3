"""`GET /bench/usage?by=key|collection|model|day&since=YYYY-MM-DD&until=YYYY-MM-DD`:
what the calls cost, grouped, as JSON (`benchwarmers usage` and the
Quotas page show the same). A gateway route: the owner reads every call's
spend, a gateway key its own (`core.Spend`). Bad input (an unknown `by`, a
date not YYYY-MM-DD, `since` after `until`) is a 400 naming it."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Request

from benchwarmers.server.access import gateway
from benchwarmers.server.deps import spend_of

router = APIRouter()


@router.get("/bench/usage")
@gateway
async def usage(request: Request, by: str = "model", since: str = "", until: str = "") -> dict[str, Any]:
    return await spend_of(request).usage(by, since, until)
