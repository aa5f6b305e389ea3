"""Deny by default (issue 36, attack 4): every route of the app declares who
may reach it; an undeclared route, or a gateway route outside the guard's
gateway paths, is refused, even on a server where keys are required."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from fastapi import APIRouter, Request
from starlette.routing import Mount, Route

from benchwarmers.assembly import ROUTERS
from benchwarmers.dashboard import api as dashboard_api
from benchwarmers.server.access import RouteTable, access_of, gateway, public
from benchwarmers.server.app import create_app
from benchwarmers.server.guard import is_gateway_path
from benchwarmers.store.settings import REQUIRE_KEY
from benchwarmers.testing.live_server import LiveServer

from .conftest import setting

pytestmark = pytest.mark.integration

# Throwaway routes a careless change might add: none of them declares, or one
# declares gateway keys on a path the guard does not check keys on.
careless = APIRouter()


@careless.get("/v2/throwaway")
async def undeclared_v2(request: Request) -> dict[str, str]:
    return {"served": "as the owner"}


@careless.post("/ui/api/throwaway")
async def undeclared_dashboard(request: Request) -> dict[str, str]:
    return {"served": "as the owner"}


@careless.get("/v2/keyed")
@gateway
async def gateway_off_the_list(request: Request) -> dict[str, str]:
    return {"served": "without a key check"}


@careless.get("/v2/open")
@public
async def declared_public(request: Request) -> dict[str, str]:
    return {"served": "to anyone"}


def _app_routes() -> RouteTable:
    app = create_app(lambda: None, routers=ROUTERS)  # type: ignore[arg-type, return-value]
    return RouteTable(app.routes)


def _sample_path(template: str) -> str:
    """A path a route's template matches (`{target:path}` as Gemini's generation)."""
    return re.sub(r"\{[^}]+\}", "m:generateContent", template)


def test_every_route_of_the_app_declares_who_may_reach_it() -> None:
    routes = _app_routes().routes
    paths = {getattr(r, "path", "") for r in routes}
    # The walk reaches the MCP routes, the static files, FastAPI's schema and the dashboard's routers.
    assert {"/mcp", "/v1/mcp", "/ui/static/{name}", "/openapi.json", "/ui/api/keys", "/healthz"} <= paths
    undeclared = sorted(
        f"{sorted(getattr(r, 'methods', None) or [])} {getattr(r, 'path', r)}"
        for r in routes
        if access_of(r) is None
    )
    assert undeclared == [], f"routes that declare no access (server/access.py): {undeclared}"


def test_every_gateway_route_lies_where_the_guard_checks_keys() -> None:
    """Else it would be refused (below) instead of served: the declaration and
    the guard's list of gateway paths must agree."""
    stray = [
        getattr(r, "path", "")
        for r in _app_routes().routes
        if access_of(r) is gateway and not is_gateway_path(_sample_path(getattr(r, "path", "")))
    ]
    assert stray == []


def test_the_walk_goes_into_mounted_apps() -> None:
    async def endpoint(scope: object, receive: object, send: object) -> None:
        return None

    inner = Route("/declared", public(endpoint)), Route("/bare", lambda request: None)
    table = RouteTable([Mount("/mounted", routes=list(inner))])
    found = {getattr(r, "path", ""): access_of(r) for r in table.routes}
    assert found == {"/mounted/declared": public, "/mounted/bare": None}


@pytest.fixture
def careless_server(home: Path) -> Iterator[LiveServer]:
    setting(home, REQUIRE_KEY, True)
    server = LiveServer(home, extra_routers=[careless]).start()
    yield server
    server.stop()


def test_a_route_that_declares_nothing_is_refused(careless_server: LiveServer) -> None:
    """On 3fd40b0 a throwaway route at `/v2/...` answered 200 as the owner on a
    server with keys required."""
    with httpx.Client(base_url=careless_server.url) as client:
        v2 = client.get("/v2/throwaway")
        assert v2.status_code == 403 and "declares no access" in v2.text
        client.get("/login")  # a page's CSRF token, as the attack read it
        dashboard = client.post("/ui/api/throwaway", headers={"x-csrf-token": client.cookies["bw_csrf"]})
        assert dashboard.status_code == 403 and "declares no access" in dashboard.text
        assert "as the owner" not in v2.text + dashboard.text


def test_a_gateway_route_off_the_guards_paths_is_refused_not_served_keyless(
    careless_server: LiveServer,
) -> None:
    keyed = httpx.get(f"{careless_server.url}/v2/keyed")
    assert keyed.status_code == 403 and "without a key check" not in keyed.text
    assert httpx.get(f"{careless_server.url}/v2/open").json() == {"served": "to anyone"}


def test_the_dashboards_routes_declare_the_dashboards_login() -> None:
    declared = {access_of(r) for r in dashboard_api.router.routes}
    assert declared == {dashboard_api.owner, dashboard_api.signed_in}
