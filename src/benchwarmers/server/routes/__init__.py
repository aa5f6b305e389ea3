"""The server's own routers, one line each (the composition root,
`benchwarmers/assembly.py`, mounts them beside the dashboard's).

To add routes: write a module that defines `router = APIRouter()`, import
it below and add its router to `SERVER_ROUTERS`, in any position (paths,
not order, decide who answers; keep paths from overlapping). Those two
lines are the whole registration; the import is a real one, so
`lint-imports` sees the edge.

In a route:

- declare who may reach it under its `@router.<method>` (`server/access.py`):
  `@gateway` (a gateway key where keys are required), `@public`, or the
  dashboard's own (`dashboard/auth.page`, `dashboard/api.owner`). A route
  that declares nothing is refused, and `tests/server/test_access.py`
  fails on it;
- everything a route does goes through a core service for the request's
  identity: `panels_of(request)`, `route_mode_of`, `admin_of`,
  `operations_of` (`server/deps.py`); each service enforces its own access
  rule. The guard has already checked Host, Origin, the key, its rate and
  the body's size and depth. A route imports `core`, `formats`, `types`,
  `errors` and the server's own helpers only (`lint-imports` holds it);
- read a raw JSON body with `read_json(request)` (`server/errors.py`); raise
  `UserError` (or `NotFound`, `Conflict`, `Refused`) for anything the caller
  got wrong: it becomes a 4xx in the caller's API format, never a 500.

A model route whose endpoint takes only the request (and path parameters)
and returns a `Response` is marked `@hot` (`server/hot.py`) under its
`@router.post`: the app then answers it ahead of FastAPI's own stack, with
the same guard, error handlers and metrics.

A router that needs start-up and shut-down work passes `lifespan=` to its
`APIRouter`; FastAPI runs it inside the app's own lifespan, so the core
is already open (`app.state.core`, a `core.CoreHandle`) when it starts.

An inbound format is registered in `formats/builtin.py`, not here: a
format that answers only asks needs no router (the app builds its route,
`inbound.py`); one with more to it lists its router here and registers
with `has_router`.

Paths a registered format owns (`/v1/`, `/v1beta/`, `/api/`, `/mcp`, and
Gemini generation without a version, `/models/...:generateContent`) and
`/bench/` are gateway paths: the guard asks those for a gateway key where
keys are required, so the dashboard must live elsewhere (it has its own
login).
"""

from fastapi import APIRouter

from benchwarmers.server.routes import (
    anthropic,
    bench_api,
    bench_ops,
    budgets,
    decisions,
    gemini,
    health,
    mcp,
    metrics,
    ollama,
    openai_chat,
    quotas,
    responses,
    settings,
    usage,
)

SERVER_ROUTERS: tuple[APIRouter, ...] = (
    health.router,
    openai_chat.router,
    responses.router,
    anthropic.router,
    gemini.router,
    ollama.router,
    bench_api.router,
    quotas.router,
    usage.router,
    budgets.router,
    bench_ops.router,
    settings.router,
    decisions.router,
    mcp.router,
    metrics.router,
)
