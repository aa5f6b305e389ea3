"""The routers the app mounts, one line each.

To add routes: write a module that defines `router = APIRouter()` and add
its dotted name below, in any position (paths, not order, decide who
answers; keep paths from overlapping). That line is the whole registration.

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
`APIRouter`; FastAPI runs it inside the app's own lifespan, so the runtime
is already open (`app.state.runtime`) when it starts.

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

ROUTERS: tuple[str, ...] = (
    "benchwarmers.server.routes.health",
    "benchwarmers.server.routes.openai_chat",
    "benchwarmers.server.routes.responses",
    "benchwarmers.server.routes.anthropic",
    "benchwarmers.server.routes.gemini",
    "benchwarmers.server.routes.ollama",
    "benchwarmers.server.routes.bench_api",
    "benchwarmers.server.routes.quotas",
    "benchwarmers.server.routes.budgets",
    "benchwarmers.server.routes.bench_ops",
    "benchwarmers.server.routes.settings",
    "benchwarmers.server.routes.decisions",
    "benchwarmers.server.routes.mcp",
    "benchwarmers.server.routes.metrics",
    "benchwarmers.dashboard.pages",
    "benchwarmers.dashboard.api",
    "benchwarmers.dashboard.signin",
)
