"""What a route gets from the app besides its request: the open runtime,
and the core API as the request's caller sees it."""

from __future__ import annotations

from typing import TYPE_CHECKING

from fastapi import Request

from benchwarmers.errors import StoreError
from benchwarmers.gateway import Gateway
from benchwarmers.server.callers import caller_of

if TYPE_CHECKING:
    from benchwarmers.runtime import Runtime


def runtime_of(request: Request) -> Runtime:
    """The runtime the app's lifespan opened (store, http client, settings)."""
    runtime = getattr(request.app.state, "runtime", None)
    if runtime is None:
        raise StoreError("the server is not started")
    return runtime


def gateway_of(request: Request) -> Gateway:
    """The core API for this request's caller (the guard admitted it)."""
    return Gateway(runtime_of(request), caller_of(request))
