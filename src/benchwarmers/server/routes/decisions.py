"""`GET /bench/decisions?collection=bench/<name>[&shape=<shape>]`: why who sits;
`GET /bench/leaderboard?collection=bench/<name>[&shape=<shape>]`: the same
standing as a board (the Leaderboard page's JSON, `bench/leaderboard.py`).

For each shape (or the one asked), the collection's members best first with
score, usefulness, its 90% credible interval, judged seats and the reasons
in words; the models next in line for its explorer seats; and the dated
history of who sat. Counts and reasons only: never a prompt, an answer or
a verdict's note. The rules live in `bench/decisions.py`, the
access rule in `core.Panels.decisions`.
"""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Request

from benchwarmers.core import DECISION_SHAPES
from benchwarmers.errors import UserError
from benchwarmers.server.access import gateway
from benchwarmers.server.deps import panels_of

router = APIRouter()

FORM = "GET /bench/decisions?collection=bench/<name>[&shape=short|long|code|vision]"
BOARD_FORM = "GET /bench/leaderboard?collection=bench/<name>[&shape=short|long|code|vision]"


@router.get("/bench/decisions")
@gateway
async def collection_decisions(request: Request, collection: str = "", shape: str = "") -> dict[str, Any]:
    name = collection.strip()
    if not name:
        raise UserError(f"say which collection: {FORM}")
    if shape and shape not in DECISION_SHAPES:
        raise UserError(f"shape {shape!r} is not known: {FORM}")
    return await panels_of(request).decisions(name, shape)


@router.get("/bench/leaderboard")
@gateway
async def collection_leaderboard(request: Request, collection: str = "", shape: str = "") -> dict[str, Any]:
    name = collection.strip()
    if not name:
        raise UserError(f"say which collection: {BOARD_FORM}")
    if shape and shape not in DECISION_SHAPES:
        raise UserError(f"shape {shape!r} is not known: {BOARD_FORM}")
    return await panels_of(request).leaderboard(name, shape)
