"""Who may reach a route, declared where the route is defined; a route that
declares nothing is refused (deny by default).

    @router.get("/healthz")
    @public
    async def healthz(request: Request) -> dict[str, Any]: ...

    @router.post("/v1/chat/completions")
    @gateway
    @hot
    async def chat(request: Request) -> Response: ...

An `Access` names who may come in and how that is checked (`admit`: None
to let the request through, else the refusal to send):

- `public`: whoever passed the guard (Host, Origin, body limits): the
  health check, the login page, our static files;
- `gateway`: the guard's gateway-key rule (`server/guard.py`): a key where
  keys are required, a revoked key never, the key's rate. The guard applies
  that rule to its gateway paths, before it reads a body, and marks the
  request (`KEY_CHECKED`); a gateway route reached on a path the guard did
  not check (one outside its list) is refused, never served as the owner;
- the dashboard's login (`dashboard/auth.py` and `dashboard/api.py` declare
  theirs): a session when a login is asked, the CSRF token for a change.

The mark is an attribute of the endpoint (or of a mounted app), so it
survives `include_router`'s copies and does not depend on how the guard's
list of gateway paths is built. `Admission` (a middleware behind
the guard, `create_app`) finds the route a router would pick and lets the
request through only as that route declares, walking into included routers
and mounted apps; an undeclared route answers 403 saying so, and
`tests/server/test_access.py` fails on any undeclared route of the app. The
hot lane (`server/hot.py`) asks `refusal_for` before it calls an endpoint.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass
from typing import Any, TypeVar

from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import BaseRoute, Match, Mount

from benchwarmers.errors import StoreError, UserError
from benchwarmers.formats.errors import error_bytes, format_for_path
from benchwarmers.server.guard import KEY_CHECKED, Receive, Scope, Send

ACCESS_MARK = "_benchwarmers_access"

Admit = Callable[[Request], Awaitable[Response | None]]
Marked = TypeVar("Marked")


@dataclass(frozen=True, slots=True)
class Access:
    """A declaration: `who` in words (for messages and the route test), and
    the check a request must pass (None: none beyond the guard's)."""

    who: str
    admit: Admit | None = None

    def __call__(self, endpoint: Marked) -> Marked:
        """Declare it on an endpoint (a decorator) or on an app to be mounted."""
        setattr(endpoint, ACCESS_MARK, self)
        return endpoint


def refused(path: str, status: int, message: str) -> Response:
    """A refusal in the path's API format, as the guard answers."""
    return Response(
        error_bytes(format_for_path(path), status, message), status, media_type="application/json"
    )


async def _gateway_admit(request: Request) -> Response | None:
    if request.scope.get("state", {}).get(KEY_CHECKED):
        return None
    return refused(
        request.url.path,
        403,
        "this route is for gateway keys, but its path is not one the guard checks keys on: refused",
    )


public = Access("public")
gateway = Access("gateway key", _gateway_admit)


def access_of(route: BaseRoute) -> Access | None:
    """A route's declaration: on its endpoint, or on a mount's app."""
    target = route.app if isinstance(route, Mount) else getattr(route, "endpoint", None)
    found = getattr(target, ACCESS_MARK, None)
    return found if isinstance(found, Access) else None


async def refusal_for(route: BaseRoute, request: Request) -> Response | None:
    """None when the request may reach `route`, else the refusal."""
    access = access_of(route)
    if access is None:
        return _undeclared(request.url.path)
    if access.admit is None:
        return None
    try:
        return await access.admit(request)
    except UserError as exc:
        return refused(request.url.path, exc.status, str(exc))
    except StoreError:
        return refused(request.url.path, 503, "the server's store is not available; try again shortly")


class RouteTable:
    """Which route a router would pick for a request, to ask its declaration
    first: the first that matches in full, as Starlette's router decides
    (one that matches the path but not the method is the router's 405, no
    endpoint; none is its 404). A path without parameters is one dict lookup
    when no earlier route could take it; the rest are tried in order."""

    def __init__(self, routes: Iterable[BaseRoute]) -> None:
        self._routes = _matchable(routes)
        self._exact: dict[tuple[str, str], BaseRoute] = {}
        for route in self._routes:
            path = getattr(route, "path", "")
            if isinstance(route, Mount) or getattr(route, "param_convertors", None):
                continue
            for method in getattr(route, "methods", None) or ():
                probe = {"type": "http", "path": path, "root_path": "", "method": method}
                if self._walk(probe) is route:  # no earlier route takes it
                    self._exact.setdefault((path, method), route)

    def route_for(self, scope: Scope) -> BaseRoute | None:
        if not scope.get("root_path"):
            found = self._exact.get((scope["path"], scope["method"]))
            if found is not None:
                return found
        return self._walk(scope)

    def _walk(self, scope: Scope) -> BaseRoute | None:
        for route in self._routes:
            if route.matches(scope)[0] is Match.FULL:
                return route
        return None

    @property
    def routes(self) -> list[BaseRoute]:
        """Every route that answers requests, in the order a router tries them."""
        return list(self._routes)


def _matchable(routes: Iterable[BaseRoute]) -> list[BaseRoute]:
    """The routes as a router matches them: a mount that does not declare is
    matched through its own routes, under its path."""
    found: list[BaseRoute] = []
    for route in routes:
        included = getattr(route, "original_router", None)  # FastAPI keeps an included router whole
        if included is not None:
            found.extend(_matchable(included.routes))
        elif isinstance(route, Mount) and route.routes and access_of(route) is None:
            found.extend(_MountedRoute(route, child) for child in _matchable(route.routes))
        else:
            found.append(route)
    return found


class _MountedRoute(BaseRoute):
    """A route of a mounted app, matched under the mount's path (only
    matched: the mount's own app answers)."""

    def __init__(self, mount: Mount, route: BaseRoute) -> None:
        self.mount = mount
        self.route = route

    @property
    def path(self) -> str:
        return self.mount.path + getattr(self.route, "path", "")

    @property
    def endpoint(self) -> Any:
        return self.route.app if isinstance(self.route, Mount) else getattr(self.route, "endpoint", None)

    def matches(self, scope: Scope) -> tuple[Match, Scope]:
        match, child = self.mount.matches(scope)
        if match is not Match.FULL:
            return match, child
        return self.route.matches({**scope, **child})


class Admission:
    """ASGI middleware behind the guard: a request reaches a route only
    through that route's declaration (the hot lane asks `refusal_for` itself)."""

    def __init__(self, app: Callable[[Scope, Receive, Send], Awaitable[None]], table: RouteTable) -> None:
        self.app = app
        self.table = table

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            route = self.table.route_for(scope)
            if route is not None:
                refusal = await refusal_for(route, Request(scope, receive, send))
                if refusal is not None:
                    await refusal(scope, receive, send)
                    return
        await self.app(scope, receive, send)


def _undeclared(path: str) -> Response:
    return refused(
        path,
        403,
        "this route declares no access (public, gateway key or dashboard login: server/access.py), "
        "so it is refused",
    )
