"""`GET /healthz`: up, the store answers, and its disk has room for calls. For load balancers, Docker's
HEALTHCHECK and `testing.live_server`; it spends no model calls. It names
the answering process (`pid`), so under `serve --workers N` one can see
which worker answered, and its store (`store`: a digest, so `doctor` can
tell whether it uses the data folder it checks)."""

from __future__ import annotations

import os
from typing import Any

from fastapi import APIRouter, Request

from benchwarmers import __version__
from benchwarmers.server.access import public
from benchwarmers.server.deps import core_of

router = APIRouter()


@router.head("/healthz", include_in_schema=False)  # one operation in /openapi.json
@router.get("/healthz")
@public
async def healthz(request: Request) -> dict[str, Any]:
    """200 when the store answers and can take calls; a store that cannot be
    reached is a 503, one whose disk is full a 507 saying so."""
    store = await core_of(request).health()
    return {"ok": True, "version": __version__, "pid": os.getpid(), "store": store}
