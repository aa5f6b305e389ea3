"""The hot lane: the gateway's model routes served ahead of FastAPI's machinery.

A model call (`POST /v1/chat/completions`, `/v1/messages`, `/v1/responses`,
Gemini's `...:generateContent`, Ollama's `/api/chat` and `/api/generate`) is
the request the gateway exists for, and its endpoint takes only the request
(and a path parameter) and returns a `Response`. For such an endpoint
FastAPI's per-request work serves nothing: its telemetry check (which reads
the environment on every request), `ServerErrorMiddleware`, the exception
middleware, the `AsyncExitStack`s for dependencies with `yield`, the walk
over every route of every router (the dashboard's included), dependency
resolution with no dependencies. Profiled under wrk (py-spy `--gil`) that
was 5-15% of a passthrough's CPU (docs/benchmarks.md).

So an endpoint marked `@hot` (under its usual `@router.post`, which keeps
it in `/openapi.json` and in FastAPI's router) is answered by `Gateway`
through the same `CatchAll` and `Guard` as every route, then straight to
the endpoint:

    CatchAll -> Guard -> the route's access -> endpoint(request, **path_params) -> response

What the app's stack did for it is kept: errors become replies in the
caller's format through the app's own exception handlers
(`server.errors.HANDLERS`, looked up by the exception's class as
Starlette does), a bug is CatchAll's 500 with an id, the metrics count the
reply under the route's template (`scope["route"]`), and a method the route
does not take falls through to FastAPI (its 405). What it skips is only
FastAPI's OpenTelemetry instrumentation, which this server never
configures.

A marked endpoint that asks FastAPI for anything (a query parameter, a
body model, a dependency) is refused when the app is built, since nothing
here would supply it; so is one not declared `@gateway` (`server/access.py`):
the lane serves model calls only, and a request the guard applied the key
rule to needs no further check (a dict lookup, not a call).
"""

from __future__ import annotations

import inspect
from collections.abc import Awaitable, Callable, Iterable, Mapping
from typing import Any, TypeGuard, TypeVar

from fastapi.routing import APIRoute
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Match, Route

from benchwarmers.server.access import access_of, gateway, refusal_for
from benchwarmers.server.errors import CatchAll, handler_for
from benchwarmers.server.guard import KEY_CHECKED, ASGIApp, Guard, GuardState, Receive, Scope, Send

HOT_MARK = "_benchwarmers_hot"

Endpoint = TypeVar("Endpoint", bound=Callable[..., Awaitable[Response]])
Handler = Callable[[Request, Any], Awaitable[Response]]


def hot(endpoint: Endpoint) -> Endpoint:
    """Mark a route's endpoint for the hot lane (put it under `@router.post`)."""
    setattr(endpoint, HOT_MARK, True)
    return endpoint


def is_hot(route: object) -> TypeGuard[APIRoute]:
    return isinstance(route, APIRoute) and getattr(route.endpoint, HOT_MARK, False)


class HotLane:
    """The marked routes, matched and served in front of FastAPI."""

    def __init__(
        self, routes: Iterable[APIRoute], guard: GuardState, handlers: Mapping[type[Exception], Handler]
    ) -> None:
        matchers = [(_matcher(route), route) for route in routes]
        # A path without parameters (all but Gemini's) is one dict lookup by
        # (path, method); the rest, and any path under a root path, are
        # matched as a router would.
        self._exact: dict[tuple[str, str], APIRoute] = {}
        for matcher, route in matchers:
            if route.param_convertors:
                continue
            for method in matcher.methods or ():
                self._exact.setdefault((route.path, method), route)  # the first listed wins, as in a router
        self._routes = matchers
        self._handlers = dict[type, Handler](handlers)
        # What serves a request `take` matched; `Gateway` awaits it directly, not through
        # `__call__`: one coroutine fewer a model call.
        self.stack: ASGIApp = CatchAll(Guard(self._serve, state=guard))

    def take(self, scope: Scope) -> bool:
        """Whether a hot route answers this request; if so the scope now
        names it (`endpoint`, `path_params`, `route`), as a router would."""
        if not scope.get("root_path"):  # else the route's path is not the scope's
            route = self._exact.get((scope["path"], scope["method"]))
            if route is not None:
                scope["endpoint"] = route.endpoint
                scope["path_params"] = dict(scope.get("path_params", {}))
                scope["route"] = route
                return True
        for matcher, route in self._routes:
            match, child = matcher.matches(scope)
            if match is Match.FULL:
                scope.update(child)
                scope["route"] = route
                return True
        return False

    async def _serve(self, scope: Scope, receive: Receive, send: Send) -> None:
        request = Request(scope, receive, send)
        if not scope["state"].get(KEY_CHECKED):  # a gateway route (checked at build) the guard did not key
            refusal = await refusal_for(scope["route"], request)
            if refusal is not None:
                await refusal(scope, receive, send)
                return
        try:
            response = await scope["endpoint"](request, **scope["path_params"])
        except Exception as exc:
            handler = self._handler_for(exc)
            if handler is None:
                raise  # a bug: CatchAll answers it
            response = await handler(request, exc)
        await response(scope, receive, send)

    def _handler_for(self, exc: Exception) -> Handler | None:
        return handler_for(exc, self._handlers)


def _matcher(route: APIRoute) -> Route:
    """A plain Starlette route over the same path, methods and endpoint,
    after checking the endpoint needs nothing FastAPI would have solved."""
    dependant = route.dependant
    asks_more = (
        dependant.query_params,
        dependant.header_params,
        dependant.cookie_params,
        dependant.body_params,
        dependant.dependencies,
    )
    params = inspect.signature(route.endpoint).parameters
    others = [name for name in params if name != dependant.request_param_name]
    if any(asks_more) or dependant.request_param_name is None or set(others) - set(route.param_convertors):
        raise TypeError(
            f"{route.path} is marked @hot but its endpoint takes more than the request and path "
            "parameters: the hot lane would not supply it (drop @hot or the parameter)"
        )
    if access_of(route) is not gateway:
        raise TypeError(
            f"{route.path} is marked @hot but not declared @gateway: the hot lane serves model calls"
        )
    return Route(route.path, route.endpoint, methods=list(route.methods or ()))
