"""`POST /bench/verdict`, `GET /bench/record`, `POST /bench/pending`: what a
person or an agent says about seats, and what it adds up to.

Thin on purpose: the rules (who may judge a seat, who may read a record)
live in the core API (`benchwarmers.gateway`), which the CLI and the MCP
tools call the same way, over `calls/verdicts.py`.
"""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Request

from benchwarmers.calls import verdicts
from benchwarmers.errors import UserError
from benchwarmers.server.deps import gateway_of
from benchwarmers.server.errors import read_json

router = APIRouter()

RECORD_FORM = "GET /bench/record?collection=bench/<name>[&task=<words in the verdicts' notes>]"


@router.post("/bench/verdict")
async def verdict(request: Request) -> dict[str, Any]:
    call, useful, note = verdicts.check_verdict_body(await read_json(request))
    recorded = await gateway_of(request).verdict(call, useful, note)
    return {"ok": True, "recorded": recorded.as_json()}


@router.get("/bench/record")
async def record(request: Request, collection: str = "", task: str = "") -> dict[str, Any]:
    if not collection.strip():
        raise UserError(f"say which collection: {RECORD_FORM}")
    return await gateway_of(request).record(collection.strip(), task.strip())


@router.post("/bench/pending")
async def pending(request: Request) -> dict[str, Any]:
    calls = verdicts.check_pending_body(await read_json(request))
    return {"pending": await gateway_of(request).pending(calls)}
