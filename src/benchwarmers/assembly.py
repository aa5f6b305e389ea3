"""The composition root: the one module that imports every front end served
on the port for real and builds the app from them.

The server's own routers (`server/routes`) and the dashboard's (pages, its
JSON API, sign-in) are listed here as imported objects, not dotted names,
so the import graph `lint-imports` checks sees every edge: the dashboard
sits above the server, so only a module above both may put them together.
Launchers (`benchwarmers serve`, `serve --demo`, the test suite's live
server) build their app here and nowhere else.

    app = app_for_home(home, bind_host="127.0.0.1")
"""

from __future__ import annotations

import os
from pathlib import Path

from fastapi import APIRouter

from benchwarmers.core import CoreHandle
from benchwarmers.dashboard import api as dashboard_api
from benchwarmers.dashboard import pages as dashboard_pages
from benchwarmers.dashboard import signin as dashboard_signin
from benchwarmers.server import BIND_HOST_ENV, DEFAULT_HOST
from benchwarmers.server.app import CoreFactory, Gateway, create_app
from benchwarmers.server.routes import SERVER_ROUTERS

ROUTERS: tuple[APIRouter, ...] = (
    *SERVER_ROUTERS,
    dashboard_pages.router,
    dashboard_api.router,
    dashboard_signin.router,
)
# What a `serve --workers N` worker imports to build its app (uvicorn's factory
# takes an import string; this module names itself, so the graph sees no new edge).
APP_FACTORY = f"{__name__}:app_from_env"


def build_app(open_core: CoreFactory, *, bind_host: str = DEFAULT_HOST) -> Gateway:
    """The whole app (every router above) over the core it opens, not yet started."""
    return create_app(open_core, bind_host=bind_host, routers=ROUTERS)


def app_for_home(home: Path, database_url: str | None = None, *, bind_host: str = DEFAULT_HOST) -> Gateway:
    """The app over a data folder (and optionally a database URL)."""
    return build_app(lambda: CoreHandle.open(home, database_url), bind_host=bind_host)


def app_from_env() -> Gateway:
    """The app a `serve --workers N` worker builds (uvicorn's factory): the data
    folder and database from the environment, as `CoreHandle.open` reads them."""
    from benchwarmers.config.home import resolve_home
    from benchwarmers.server.heap import settle_for_serving

    app = app_for_home(resolve_home(), bind_host=os.environ.get(BIND_HOST_ENV, DEFAULT_HOST))
    settle_for_serving()  # the worker's app is built; it serves from here on
    return app
