"""`GET /bench/budgets`: every budget with what its period spent, what is
left and when it resets; `PUT /bench/budgets`: set (or, with both amounts
null, remove) one budget, answered with its row. Who may: the owner or a
gateway key not limited to some collections (`core.Admin`)."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Request

from benchwarmers.core import budget_json
from benchwarmers.server.access import gateway
from benchwarmers.server.deps import admin_of
from benchwarmers.server.errors import read_json

router = APIRouter()


@router.get("/bench/budgets")
@gateway
async def budgets(request: Request) -> dict[str, Any]:
    return {"budgets": [budget_json(status) for status in await admin_of(request).budgets()]}


@router.put("/bench/budgets")
@gateway
async def put_budget(request: Request) -> dict[str, Any]:
    return budget_json(await admin_of(request).set_budget(await read_json(request)))
