"""`POST /bench/verdict`, `GET /bench/record`, `POST /bench/pending`: what a
person or an agent says about seats, and what it adds up to.

Thin on purpose: the rules (who may judge a seat, who may read a record)
live in `core.Panels`, which the CLI and the MCP tools call the same way,
over `calls/verdicts.py`; the body is checked there, once.
"""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Request

from benchwarmers.errors import UserError
from benchwarmers.server.access import gateway
from benchwarmers.server.deps import panels_of
from benchwarmers.server.errors import read_json

router = APIRouter()

RECORD_FORM = "GET /bench/record?collection=bench/<name>[&task=<words in the verdicts' notes>]"


@router.post("/bench/verdict")
@gateway
async def verdict(request: Request) -> dict[str, Any]:
    recorded = await panels_of(request).verdict(await read_json(request))
    return {"ok": True, "recorded": recorded.as_json()}


@router.get("/bench/record")
@gateway
async def record(request: Request, collection: str = "", task: str = "") -> dict[str, Any]:
    if not collection.strip():
        raise UserError(f"say which collection: {RECORD_FORM}")
    return await panels_of(request).record(collection.strip(), task.strip())


@router.post("/bench/pending")
@gateway
async def pending(request: Request) -> dict[str, Any]:
    return {"pending": await panels_of(request).pending(await read_json(request))}
