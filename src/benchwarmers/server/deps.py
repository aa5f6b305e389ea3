"""What a route gets from the app besides its request: the open runtime,
the identity the guard admitted, and the core services as that identity
sees them.

    panels = panels_of(request)        # core.Panels for this request's identity
    admin = admin_of(request)          # core.Admin
"""

from __future__ import annotations

from typing import Any

from fastapi import Request

from benchwarmers.core import NOBODY, Admin, Identity, Operations, Panels, RouteMode, Runtime, Spend
from benchwarmers.errors import StoreError


def runtime_of(request: Request) -> Runtime:
    """The runtime the app's lifespan opened (store, http client, settings)."""
    runtime: Runtime | None = getattr(request.app.state, "runtime", None)
    if runtime is None:
        raise StoreError("the server is not started")
    return runtime


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
    return Panels(runtime_of(request), identity_of(request), unanswered_is_error=True)


def route_mode_of(request: Request) -> RouteMode:
    return RouteMode(runtime_of(request), identity_of(request))


def admin_of(request: Request) -> Admin:
    return Admin(runtime_of(request), identity_of(request))


def spend_of(request: Request) -> Spend:
    return Spend(runtime_of(request), identity_of(request))


def operations_of(request: Request) -> Operations:
    """With the bench's background services when the app runs them."""
    return Operations(runtime_of(request), identity_of(request), getattr(request.app.state, "bench", None))
