"""The dashboard's pages: Jinja2 templates filled from `backend.Backend`.

    GET /                  Endpoints when there is none yet, else the Bench
    GET /endpoints         add (paste a key, or sign in), test, set a key, remove
    GET /models            the Bench: status, role, last probe, alerts; retire, restore, role
    GET /models/{alias}    one model: record with intervals and reasons, probes, suite
    GET /onboard           the endpoint's own list, Discover, modes, the live queue
    GET /collections       create and edit; recent asks with their seats, judged in place
    GET /ask               ask a panel, answers streamed; judge in place, in pairs; follow-ups
    GET /leaderboard       per collection and shape: scores with intervals, pairs, matrix, next panel
    GET /quotas            limits, budgets, usage, resets, and the month's chart
    GET /settings          scheduler, gateway keys, budgets, login, allowed hosts
    GET /login, POST /login, POST /logout, POST /logout/everywhere
    GET /ui/static/{file}  our JS and CSS, from the package

A page renders what it shows; its forms post JSON to `/ui/api/` (our
`app.js`), and its live parts poll those routes. Pages are not gateway
paths (README, "Dashboard"): each declares who may see it
(`server/access.py`): `auth.page`, the dashboard's own login, which sends
a visitor without one to `/login`; or `public` (the login page, `HEAD /`,
our static files).
"""

from __future__ import annotations

import re
from datetime import UTC, datetime
from importlib import resources
from typing import Any
from urllib.parse import quote, urlsplit

from fastapi import APIRouter, Request
from fastapi.responses import HTMLResponse, RedirectResponse, Response
from jinja2 import Environment, PackageLoader, select_autoescape
from markupsafe import Markup, escape

from benchwarmers import __version__
from benchwarmers.core import ONBOARDING_MODES as MODES
from benchwarmers.core import api_kinds, usd_text
from benchwarmers.dashboard import auth, board, chart, signin
from benchwarmers.dashboard.api import backend_of
from benchwarmers.errors import NotFound, UserError
from benchwarmers.server.access import public
from benchwarmers.types import MODEL_ROLES

router = APIRouter(include_in_schema=False)

NAV = (
    ("endpoints", "Endpoints"),
    ("models", "Bench"),
    ("onboard", "Onboard"),
    ("collections", "Collections"),
    ("ask", "Ask"),
    ("leaderboard", "Leaderboard"),
    ("quotas", "Quotas"),
    ("settings", "Settings"),
)
STATIC = {
    "app.js": "text/javascript",
    "app.css": "text/css",
    "markdown.js": "text/javascript",
    "judge.js": "text/javascript",
    "ask.js": "text/javascript",
    "recent.js": "text/javascript",
}
MODE_LABELS = {"full": "Full", "quick": "Quick", "quick_ad_hoc": "Quick + ad hoc"}

_env = Environment(
    loader=PackageLoader("benchwarmers.dashboard", "templates"),
    autoescape=select_autoescape(("html",)),
    trim_blocks=True,
    lstrip_blocks=True,
)


def when(value: str | None) -> str:
    """An ISO 8601 UTC time as people read it: `2026-12-01 09:10 UTC`."""
    if not value:
        return "—"
    try:
        moment = datetime.fromisoformat(value).astimezone(UTC)
    except ValueError:
        return value
    return f"{moment:%Y-%m-%d %H:%M} UTC"


def spend(row: dict[str, Any]) -> str:
    """A spend row's USD (`Spend.usage`): unknown is said, never $0."""
    return usd_text(row["costUsd"], row["unpricedCalls"], row["calls"])


_env.filters["when"] = when
_env.filters["spend"] = spend

_ISO_MOMENT = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d(?::\d\d(?:\.\d+)?)?(?:Z|[+-]\d\d:\d\d)?")


def humane(text: str | None) -> Markup:
    """ISO 8601 moments inside a text (a status's reason, an error) read as
    `when` shows them, each a `<time>` that does not wrap: a reason said its
    time three times in `T..+00:00` form, broken across lines."""
    pieces: list[Markup] = []
    at = 0
    for found in _ISO_MOMENT.finditer(text or ""):
        iso = found.group(0).replace("Z", "+00:00")
        pieces.append(Markup(escape((text or "")[at : found.start()])))
        pieces.append(Markup('<time datetime="{}">{}</time>').format(iso, when(iso)))
        at = found.end()
    pieces.append(Markup(escape((text or "")[at:])))
    return Markup("").join(pieces)


def breakable(url: str) -> Markup:
    """A URL that may wrap after `/`, `.`, `?`, `&` or `=` on a narrow
    screen, never inside a word."""
    return Markup("").join(
        Markup(escape(piece)) + (Markup("<wbr>") if piece in "/.?&=" else Markup(""))
        for piece in re.split(r"([/.?&=])", url)
        if piece
    )


def address_part(value: str) -> str:
    """A name (a model's alias) as one part of an address, every character
    that means something in a URL escaped, `/` too: an alias is one part
    however it is spelled (the routes take `{alias:path}` and read it back
    whole), and one stored before aliases were checked (`a/../b`, `x?y`)
    can never change the path it is put in. Jinja's `urlencode` keeps `/`."""
    return quote(value, safe="")


_env.filters["humane"] = humane
_env.filters["breakable"] = breakable
_env.filters["address_part"] = address_part


def render(request: Request, template: str, page: str, status: int = 200, **values: Any) -> HTMLResponse:
    """The page, with `status` (a page saying what was not found is a 404, as its JSON is)."""
    response = HTMLResponse("", status_code=status)
    token = auth.csrf_token(request, response)
    door: auth.Door | None = getattr(request.state, "door", None)
    body = _env.get_template(template).render(
        page=page,
        nav=NAV,
        csrf=token,
        version=__version__,
        user=door.user if door is not None else "",
        **values,
    )
    response.body = response.render(body)
    response.headers["content-length"] = str(len(response.body))
    response.headers.update(auth.PAGE_HEADERS)
    return response


@router.head("/")
@public
async def head_home() -> Response:
    """200 to anyone (Claude Code sends one on start: a redirect or a 404
    would look like a wrong base URL)."""
    return Response(media_type="text/html")


@router.get("/")
@auth.page
async def home(request: Request) -> Response:
    """The right page: Endpoints when there is none yet, else the Bench."""
    has = await backend_of(request).has_endpoints()
    return RedirectResponse("/models" if has else "/endpoints?add=1", status_code=303)


@router.get("/endpoints")
@auth.page
async def endpoints_page(request: Request) -> Response:
    backend = backend_of(request)
    rows = await backend.endpoints()
    return render(
        request,
        "endpoints.html",
        "endpoints",
        endpoints=rows,
        apis=api_kinds(),
        ollama=await backend.local_ollama(),
        providers=signin.PROVIDERS.values(),
        adding=not rows or request.query_params.get("add") == "1",
        signed_in=request.query_params.get("signed_in", ""),
    )


@router.get("/models")
@auth.page
async def models_page(request: Request) -> Response:
    backend = backend_of(request)
    return render(
        request,
        "models.html",
        "models",
        models=await backend.models(),
        alerts=await backend.alerts(),
        roles=MODEL_ROLES,
    )


@router.get("/models/{alias:path}")
@auth.page
async def model_page(request: Request, alias: str) -> Response:
    try:
        facts = await backend_of(request).model(alias)
    except NotFound as exc:
        return render(request, "missing.html", "models", status=exc.status, message=str(exc))
    return render(request, "model.html", "models", roles=MODEL_ROLES, **facts)


@router.get("/onboard")
@auth.page
async def onboard_page(request: Request) -> Response:
    return render(
        request,
        "onboard.html",
        "onboard",
        endpoints=await backend_of(request).endpoints(),
        modes=[(m, MODE_LABELS[m]) for m in MODES],
    )


@router.get("/collections")
@auth.page
async def collections_page(request: Request) -> Response:
    backend = backend_of(request)
    collections = await backend.collections()
    records = {c["name"]: await backend.collection_record(c["name"]) for c in collections}
    return render(
        request,
        "collections.html",
        "collections",
        collections=collections,
        records=records,
        models=await backend.models(),
    )


@router.get("/ask")
@auth.page
async def ask_page(request: Request) -> Response:
    return render(request, "ask.html", "ask", collections=await backend_of(request).collections())


@router.get("/leaderboard")
@auth.page
async def leaderboard_page(request: Request, collection: str = "", shape: str = "") -> Response:
    backend = backend_of(request)
    collections = await backend.collections()
    chosen = collection.removeprefix("bench/") or (collections[0]["name"] if collections else "")
    drawn, refused = None, None
    try:
        drawn = await backend.leaderboard(chosen, shape) if chosen else None
    except UserError as exc:  # said on the page, its picker kept: a bookmark of a removed collection
        refused = exc
    return render(
        request,
        "leaderboard.html",
        "leaderboard",
        status=refused.status if refused else 200,
        error=str(refused or ""),
        collections=collections,
        chosen=chosen,
        board=drawn,
        interval=board.interval,
        sparkline=board.sparkline,
        trend_label=board.trend_label,
        matrix_cell=board.matrix_cell,
        bar_width=board.BAR_WIDTH,
        spark_width=board.SPARK_WIDTH,
    )


@router.get("/quotas")
@auth.page
async def quotas_page(request: Request, measure: str = "usd") -> Response:
    """`?measure=usd` (the default) or `tokens`: what the chart's bars add up."""
    view = await backend_of(request).quotas()
    shown: chart.Measure = "tokens" if measure == "tokens" else "usd"
    drawn = chart.usage_chart(view["days"], shown)
    return render(request, "quotas.html", "quotas", view=view, chart=drawn, measure=shown)


@router.get("/settings")
@auth.page
async def settings_page(request: Request) -> Response:
    backend = backend_of(request)
    return render(
        request,
        "settings.html",
        "settings",
        settings=await backend.settings(),
        scheduler=await backend.scheduler(),
        keys=await backend.gateway_keys(),
        collections=await backend.collections(),
        budgets=await backend.budgets(),
    )


# ------------------------------------------------------------------ login


@router.get("/login")
@public
async def login_page(request: Request) -> Response:
    door = await auth.door(request)
    return render(
        request,
        "login.html",
        "login",
        door=door,
        next=_local(request.query_params.get("next", "/")),
        error="",
        changed=request.query_params.get("changed") == "1",  # the settings' password form sends here
    )


@router.post("/login")
@public
async def login(request: Request) -> Response:
    submitted = await request.form()
    name, password = str(submitted.get("user", "")), str(submitted.get("password", ""))
    target = _local(str(submitted.get("next", "/")))
    try:
        auth.check_csrf(request, str(submitted.get(auth.CSRF_FIELD, "")))
        response = RedirectResponse(target, status_code=303)
        await auth.log_in(request, response, name, password)
        return response
    except UserError as exc:
        page = render(
            request, "login.html", "login", door=await auth.door(request), next=target, error=str(exc)
        )
        page.status_code = exc.status
        return page


@router.post("/logout")
@public
async def logout(request: Request) -> Response:
    """End this session (in the store: a copy of its cookie opens nothing after)."""
    submitted = await request.form()
    auth.check_csrf(request, str(submitted.get(auth.CSRF_FIELD, "")))
    response = RedirectResponse("/login", status_code=303)
    await auth.log_out(request, response)
    return response


@router.post("/logout/everywhere")
@auth.page
async def logout_everywhere(request: Request) -> Response:
    """Sign out everywhere: every session of every browser ends, this one too."""
    submitted = await request.form()
    auth.check_csrf(request, str(submitted.get(auth.CSRF_FIELD, "")))
    response = RedirectResponse("/login", status_code=303)
    await auth.log_out(request, response, everywhere=True)
    return response


def _local(target: str) -> str:
    """Only a path on this server is a place to go after the login."""
    parts = urlsplit(target)
    if parts.scheme or parts.netloc or not target.startswith("/") or target.startswith("//"):
        return "/"
    return target


# ----------------------------------------------------------------- static


@router.get("/ui/static/{name}")
@public
async def static(name: str) -> Response:
    if name not in STATIC:
        raise NotFound(f"no file {name!r} here; the dashboard serves {', '.join(STATIC)}")
    body = resources.files("benchwarmers.dashboard").joinpath("static", name).read_bytes()
    return Response(body, media_type=STATIC[name], headers={"cache-control": "no-cache"})
