"""What a route gets from the app besides its request: the core the app's
lifespan opened (`core.CoreHandle`, never the runtime under it), the
identity the guard admitted, and the core services as that identity sees
them.

    panels = panels_of(request)        # core.Panels for this request's identity
    admin = admin_of(request)          # core.Admin
    await core_of(request).health()    # what is the core's and no identity's
"""

from __future__ import annotations

from typing import Any

from fastapi import Request

from benchwarmers.core import NOBODY, Admin, CoreHandle, Identity, Operations, Panels, RouteMode, Spend
from benchwarmers.errors import StoreError


def core_of(request: Request) -> CoreHandle:
    """The core the app's lifespan opened (`server/app.py`), once for the app."""
    core: CoreHandle | None = getattr(request.app.state, "core", None)
    if core is None:
        raise StoreError("the server is not started")
    return core


def identity_of(request: Any) -> Identity:
    """The identity the guard put on this request (a Starlette `Request` or a
    raw ASGI scope). A request the guard never saw (an app built without it)
    gets no rights rather than all of them."""
    scope = request if isinstance(request, dict) else request.scope
    identity = scope.get("state", {}).get("identity")
    return identity if isinstance(identity, Identity) else NOBODY


def headers_of(request: Request, names: tuple[str, ...]) -> dict[str, str]:
    """Of the headers named (lower-case), those the request has, each with
    its first value: read in one pass off the raw scope, where
    `request.headers` would build a `Headers` and scan all of it for each
    one asked, on every ask (docs/benchmarks.md)."""
    raw: dict[bytes, bytes] = dict(reversed(request.scope["headers"]))  # a header given twice: its first
    return {name: raw[key].decode("latin-1") for name in names if (key := name.encode("latin-1")) in raw}


def panels_of(request: Request) -> Panels:
    """The gateway's panels: one no seat answered is an error in the caller's format."""
    return core_of(request).panels(identity_of(request), unanswered_is_error=True)


def route_mode_of(request: Request) -> RouteMode:
    return core_of(request).route_mode(identity_of(request))


def admin_of(request: Request) -> Admin:
    return core_of(request).admin(identity_of(request))


def spend_of(request: Request) -> Spend:
    return core_of(request).spend(identity_of(request))


def operations_of(request: Request) -> Operations:
    """With the bench's background services when the app runs them."""
    return core_of(request).operations(identity_of(request))
