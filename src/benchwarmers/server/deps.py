"""What a route gets from the app besides its request: the open runtime."""

from __future__ import annotations

from typing import TYPE_CHECKING

from fastapi import Request

from benchwarmers.errors import StoreError

if TYPE_CHECKING:
    from benchwarmers.runtime import Runtime


def runtime_of(request: Request) -> Runtime:
    """The runtime the app's lifespan opened (store, http client, settings)."""
    runtime = getattr(request.app.state, "runtime", None)
    if runtime is None:
        raise StoreError("the server is not started")
    return runtime
