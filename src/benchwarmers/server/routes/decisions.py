"""`GET /bench/decisions?collection=bench/<name>[&shape=<shape>]`: why who sits.

For each shape (or the one asked), the collection's members best first with
score, usefulness, its 90% credible interval, judged seats and the reasons
in words; the models next in line for its explorer seats; and the dated
history of who sat. Counts and reasons only: never a prompt, an answer or
a verdict's note. The rules live in `bench/decisions.py`.
"""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Request

from benchwarmers.bench import decisions
from benchwarmers.errors import Refused, UserError
from benchwarmers.server.callers import caller_may_call, caller_of
from benchwarmers.server.deps import runtime_of
from benchwarmers.store import registry

router = APIRouter()

FORM = "GET /bench/decisions?collection=bench/<name>[&shape=short|long|code|vision]"


@router.get("/bench/decisions")
async def collection_decisions(request: Request, collection: str = "", shape: str = "") -> dict[str, Any]:
    name = collection.strip()
    if not name:
        raise UserError(f"say which collection: {FORM}")
    if shape and shape not in decisions.SHAPES:
        raise UserError(f"shape {shape!r} is not known: {FORM}")
    if not caller_may_call(caller_of(request), name):
        raise Refused(f"this key may not read the decisions of {name}", status=403)
    store = runtime_of(request).store
    found = await registry.get_collection(store, name.removeprefix("bench/"))
    report = await decisions.decisions_report(
        store, found.name, list(found.members), shapes=(shape,) if shape else decisions.SHAPES
    )
    report["explorers"] = {
        s: await decisions.pick_explorers(
            store, found.name, s, max(found.explorer_seats, 1), exclude=found.members
        )
        for s in report["shapes"]
    }
    return report
