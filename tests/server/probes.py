"""The probe routes the server tests mount beside the app's own
(`conftest.py`'s `server` and `start`): a gateway route in each API
format's path space that reads its body every way a route does, says who
called, raises a bug of ours, or breaks mid-stream; and `OWN_ROUTERS`, the
server package's own routes beside them."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Request
from fastapi.responses import StreamingResponse
from pydantic import BaseModel

from benchwarmers.formats.base import require_object
from benchwarmers.identity.scope import may_call
from benchwarmers.server.access import gateway
from benchwarmers.server.deps import identity_of
from benchwarmers.server.errors import read_json
from benchwarmers.server.routes import health

# Only this package's routes beside the probes: other packages' routes are
# tested by their owners, and are not what these tests are about.
OWN_ROUTERS = (health.router,)

probe = APIRouter()


class Order(BaseModel):
    name: str
    count: int


@probe.post("/v1/probe/typed")
@gateway
async def typed(order: Order) -> dict[str, Any]:
    return {"name": order.name, "count": order.count}


@probe.post("/v1beta/probe/raw")
@probe.post("/api/probe/raw")
@probe.post("/v1/messages/probe/raw")
@gateway
async def raw(request: Request) -> dict[str, Any]:
    body = require_object(await read_json(request))
    return {"keys": sorted(body)}


@probe.post("/v1/probe/parse")
@gateway
async def parse(request: Request) -> dict[str, Any]:
    """A route that reads JSON the short way (request.json())."""
    return {"type": type(await request.json()).__name__}


# Out of the schema: its two methods would share one operation id.
@probe.api_route("/bench/probe/caller", methods=["GET", "POST"], include_in_schema=False)
@gateway
async def who(request: Request, collection: str = "trio") -> dict[str, Any]:
    caller = identity_of(request)
    return {"name": caller.name, "owner": caller.owner, "may": may_call(caller, collection)}


@probe.post("/api/probe/bug")
@probe.post("/v1/messages/probe/bug")
@gateway
async def bug() -> None:
    raise RuntimeError("a bug of ours, with a secret path /srv/secret.py in it")


@probe.get("/v1/probe/cut")
@gateway
async def cut() -> StreamingResponse:
    async def pieces() -> Any:
        yield b"data: one\n\n"
        raise RuntimeError("broke mid-stream")

    return StreamingResponse(pieces(), media_type="text/event-stream")
