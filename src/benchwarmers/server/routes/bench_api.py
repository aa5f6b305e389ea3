"""`POST /bench/verdict`, `GET /bench/record`, `POST /bench/pending`: what a
person or an agent says about seats, and what it adds up to.

Thin on purpose: the rules live in `calls/verdicts.py`, which the CLI and
the MCP tools call in-process the same way.
"""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Request

from benchwarmers.calls import verdicts
from benchwarmers.calls.log import get_call
from benchwarmers.errors import Refused, UserError
from benchwarmers.server.callers import caller_may_call, caller_of
from benchwarmers.server.deps import runtime_of
from benchwarmers.server.errors import read_json

router = APIRouter()

RECORD_FORM = "GET /bench/record?collection=bench/<name>[&task=<words in the verdicts' notes>]"


@router.post("/bench/verdict")
async def verdict(request: Request) -> dict[str, Any]:
    call, useful, note = verdicts.check_verdict_body(await read_json(request))
    store = runtime_of(request).store
    logged = await get_call(store, call)
    if (
        logged is not None
        and logged.collection
        and not caller_may_call(caller_of(request), logged.collection)
    ):
        raise Refused(f"this key may not judge seats of bench/{logged.collection}", status=403)
    recorded = await verdicts.record_verdict(store, call, useful, note)
    return {"ok": True, "recorded": recorded.as_json()}


@router.get("/bench/record")
async def record(request: Request, collection: str = "", task: str = "") -> dict[str, Any]:
    if not collection.strip():
        raise UserError(f"say which collection: {RECORD_FORM}")
    if not caller_may_call(caller_of(request), collection.strip()):
        raise Refused(f"this key may not read the record of {collection.strip()}", status=403)
    return await verdicts.record(runtime_of(request).store, collection.strip(), task.strip())


@router.post("/bench/pending")
async def pending(request: Request) -> dict[str, Any]:
    calls = verdicts.check_pending_body(await read_json(request))
    return {"pending": await verdicts.pending(runtime_of(request).store, calls)}
