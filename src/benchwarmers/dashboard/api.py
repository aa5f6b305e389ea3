"""The dashboard's JSON routes, under `/ui/api/` (listed in docs/http-api.md).

Each is a few lines over `backend.Backend`, and declares who may reach it
(`server/access.py`, deny by default):

- `owner`: the dashboard's door (`auth.door`): a login when one is asked
  (beyond loopback, with `require_key` on, or once a login is set: 401
  otherwise) and, for anything but GET, the CSRF token in `X-CSRF-Token`
  (403 otherwise);
- `signed_in`: the same, and a login must exist and the caller be signed
  in even where none is asked (a first run on loopback): minting or
  revoking gateway keys, switching the scheduler and changing allowed
  hosts. Setting the login itself (`/ui/api/login`) is `owner`, so the
  page can ask for one first.

A refusal is `{"error": {"message", "field"}}` with its 4xx status,
`field` naming the form field it is about ("" for none), so the page can
put the message beside that field (`DoorRoute`).

These are not gateway paths: a gateway key opens nothing here, the login does.
"""

from __future__ import annotations

import functools
import json
from collections.abc import AsyncIterator, Callable, Coroutine
from typing import Any

from fastapi import APIRouter, Request, Response
from fastapi.responses import JSONResponse, StreamingResponse
from fastapi.routing import APIRoute

from benchwarmers.core import OWNER
from benchwarmers.dashboard import auth
from benchwarmers.dashboard.backend import Backend
from benchwarmers.dashboard.fields import FieldError, field, text
from benchwarmers.errors import Refused, UserError
from benchwarmers.server.access import Access
from benchwarmers.server.deps import core_of
from benchwarmers.server.errors import read_json


async def _admit(request: Request, *, signed_in: bool) -> Response | None:
    """None when the door lets this request through, else its refusal."""
    try:
        door = await auth.door(request)
        request.state.door = door
        if not door.open:
            raise Refused("sign in first (the dashboard asks a login here)", status=401)
        if signed_in and not door.user:
            if not door.possible:
                raise Refused(
                    "set a login password first (Settings, Login): the dashboard makes gateway keys and "
                    "changes settings only behind a login",
                    status=403,
                )
            raise Refused("sign in first: this change needs the login", status=401)
        if request.method not in auth.SAFE_METHODS:
            auth.check_csrf(request, request.headers.get(auth.CSRF_HEADER, ""))
    except UserError as exc:
        return refusal(exc)
    return None


owner = Access("dashboard login", functools.partial(_admit, signed_in=False))
signed_in = Access("dashboard login, signed in", functools.partial(_admit, signed_in=True))


class DoorRoute(APIRoute):
    """A dashboard JSON route: a refusal beside its field."""

    def get_route_handler(self) -> Callable[[Request], Coroutine[Any, Any, Response]]:
        handler = super().get_route_handler()

        async def guarded(request: Request) -> Response:
            try:
                return await handler(request)
            except UserError as exc:
                return refusal(exc)

        return guarded


def refusal(exc: UserError) -> JSONResponse:
    body = {"error": {"message": str(exc), "field": exc.field}}
    headers = exc.headers if isinstance(exc, Refused) else {}
    return JSONResponse(body, status_code=exc.status, headers=headers)


router = APIRouter(prefix="/ui/api", route_class=DoorRoute)


def backend_of(request: Request) -> Backend:
    return Backend(core_of(request).core(OWNER))


async def form(request: Request) -> dict[str, Any]:
    body = await read_json(request) if (await request.body()).strip() else {}
    if not isinstance(body, dict):
        raise UserError("send a JSON object")
    return body


# ------------------------------------------------------------ endpoints


@router.get("/endpoints")
@owner
async def endpoints(request: Request) -> dict[str, Any]:
    backend = backend_of(request)
    return {
        "endpoints": await backend.endpoints(),
        "ollama": await backend.local_ollama(),
    }


@router.post("/endpoints")
@owner
async def add_endpoint(request: Request) -> dict[str, Any]:
    return {"endpoint": await backend_of(request).add_endpoint(await form(request))}


@router.post("/endpoints/{name}/key")
@owner
async def set_key(request: Request, name: str) -> dict[str, Any]:
    return {"endpoint": await backend_of(request).set_endpoint_key(name, await form(request))}


@router.post("/endpoints/{name}/remove")
@owner
async def remove_endpoint(request: Request, name: str) -> dict[str, Any]:
    await backend_of(request).remove_endpoint(name, await form(request))
    return {"ok": True}


@router.get("/endpoints/{name}/models")
@owner
async def endpoint_models(request: Request, name: str) -> dict[str, Any]:
    return await backend_of(request).endpoint_models(name)


# --------------------------------------------------------------- models


@router.get("/models")
@owner
async def models(request: Request) -> dict[str, Any]:
    backend = backend_of(request)
    return {"models": await backend.models(), "alerts": await backend.alerts()}


@router.get("/models/{alias:path}")
@owner
async def model(request: Request, alias: str) -> dict[str, Any]:
    return await backend_of(request).model(alias)


@router.post("/models/{alias:path}/retire")
@owner
async def retire(request: Request, alias: str) -> dict[str, Any]:
    return {"model": await backend_of(request).retire(alias)}


@router.post("/models/{alias:path}/restore")
@owner
async def restore(request: Request, alias: str) -> dict[str, Any]:
    return {"model": await backend_of(request).restore(alias)}


@router.post("/models/{alias:path}/paid-ok")
@owner
async def accept_price(request: Request, alias: str) -> dict[str, Any]:
    return {"model": await backend_of(request).accept_price(alias)}


@router.post("/models/{alias:path}/role")
@owner
async def set_role(request: Request, alias: str) -> dict[str, Any]:
    return {"model": await backend_of(request).set_role(alias, await form(request))}


@router.post("/models/{alias:path}/remove")
@owner
async def remove_model(request: Request, alias: str) -> dict[str, Any]:
    await backend_of(request).remove_model(alias)
    return {"ok": True}


@router.post("/models/{alias:path}/probe")
@owner
async def probe(request: Request, alias: str) -> dict[str, Any]:
    return {"model": await backend_of(request).probe(alias)}


# ----------------------------------------------------------- onboarding


@router.get("/discover")
@owner
async def discover(request: Request) -> dict[str, Any]:
    return await backend_of(request).discover()


@router.post("/discover/dismiss")
@owner
async def dismiss(request: Request) -> dict[str, Any]:
    return {"dismissed": await backend_of(request).dismiss(await form(request))}


@router.post("/discover/restore")
@owner
async def undismiss(request: Request) -> dict[str, Any]:
    return {"dismissed": await backend_of(request).dismiss(await form(request), undo=True)}


@router.post("/onboard")
@owner
async def onboard(request: Request) -> dict[str, Any]:
    return {"queued": await backend_of(request).onboard(await form(request))}


@router.get("/queue")
@owner
async def queue(request: Request) -> dict[str, Any]:
    return await backend_of(request).queue()


@router.post("/limits")
@owner
async def set_limit(request: Request) -> dict[str, Any]:
    return {"limit": await backend_of(request).set_limit(await form(request))}


@router.post("/limits/clear")
@owner
async def clear_limit(request: Request) -> dict[str, Any]:
    return await backend_of(request).clear_limit(await form(request))


@router.post("/limits/learned/clear")
@owner
async def forget_learned_limit(request: Request) -> dict[str, Any]:
    return await backend_of(request).forget_learned_limit(await form(request))


@router.post("/endpoints/{name}/scope")
@owner
async def set_limit_scope(request: Request, name: str) -> dict[str, Any]:
    return await backend_of(request).set_limit_scope(name, await form(request))


@router.post("/queue/{item_id}/cancel")
@owner
async def cancel_onboarding(request: Request, item_id: int) -> dict[str, Any]:
    return {"item": await backend_of(request).cancel_onboarding(item_id)}


# ---------------------------------------------------------- collections


@router.get("/collections")
@owner
async def collections(request: Request) -> dict[str, Any]:
    return {"collections": await backend_of(request).collections()}


@router.post("/collections")
@owner
async def add_collection(request: Request) -> dict[str, Any]:
    return {"collection": await backend_of(request).save_collection(await form(request))}


@router.post("/collections/{name}")
@owner
async def edit_collection(request: Request, name: str) -> dict[str, Any]:
    return {"collection": await backend_of(request).save_collection(await form(request), existing=name)}


@router.post("/collections/{name}/remove")
@owner
async def remove_collection(request: Request, name: str) -> dict[str, Any]:
    await backend_of(request).remove_collection(name)
    return {"ok": True}


@router.get("/collections/{name}/record")
@owner
async def collection_record(request: Request, name: str) -> dict[str, Any]:
    return await backend_of(request).collection_record(name)


@router.get("/asks")
@owner
async def asks(
    request: Request, collection: str = "", before: str = "", limit: str = "20", head: str = "0"
) -> Response:
    """Recent asks, newest first, a page at a time: `before` is the `next` of the page before
    (an ask id), `limit` the page's size (1 to 100); `head` cuts each kept text to that many
    characters (`content_chars` its whole length; 0, the default, whole), as the dashboard reads
    its lists; any of them wrong is refused with a 400 naming it. Tagged (`ETag`): a poll that
    sends the tag it has (`If-None-Match`) of a page that has not changed gets a 304 with no
    body, and its kept text is not even read."""
    if not (limit.isascii() and limit.isdigit()):
        raise FieldError("limit", "limit must be a whole number of asks, 1 to 100")
    if not (head.isascii() and head.isdigit()):
        raise FieldError("head", "head must be a whole number of characters, 0 for the whole text")
    had = request.headers.get("if-none-match", "").strip().removeprefix("W/").strip('"')
    name = collection.removeprefix("bench/")
    page, tag = await backend_of(request).recent_asks(name, int(limit), before, had, int(head))
    headers = {"etag": f'"{tag}"', "cache-control": "no-cache"}
    if page is None:
        return Response(status_code=304, headers=headers)
    return JSONResponse(page, headers=headers)


@router.get("/asks/{ask}")
@owner
async def one_ask(request: Request, ask: str) -> dict[str, Any]:
    """One ask as the list has it, its kept text whole: Recent asks' view of an ask opened."""
    return {"ask": await backend_of(request).recent_ask(ask)}


@router.get("/leaderboard")
@owner
async def leaderboard(request: Request, collection: str = "", shape: str = "") -> dict[str, Any]:
    """CONTRACTS §5: per model score, interval, verdicts, pairs, suite, trend; the matrix; the next panel."""
    if not collection:
        raise FieldError("collection", "name the collection: ?collection=bench/<name>")
    return await backend_of(request).leaderboard(collection, shape)


@router.post("/ask")
@owner
async def ask(request: Request) -> StreamingResponse:
    """The playground's stream: one JSON object per line, as the panel sends events."""
    events = await backend_of(request).ask(await form(request))

    async def lines() -> AsyncIterator[bytes]:
        async for event in events:
            yield json.dumps(event).encode() + b"\n"

    return StreamingResponse(
        lines(), media_type="application/x-ndjson", headers={"cache-control": "no-cache"}
    )


@router.post("/verdict")
@owner
async def verdict(request: Request) -> dict[str, Any]:
    return await backend_of(request).verdict(await form(request))


@router.post("/names")
@owner
async def judged_names(request: Request) -> dict[str, Any]:
    """A blind ask's models, once it is judged (`dashboard/blind.py`)."""
    return await backend_of(request).judged_names(await form(request))


# --------------------------------------------------------------- quotas


@router.get("/quotas")
@owner
async def quotas(request: Request) -> dict[str, Any]:
    return await backend_of(request).quotas()


# ------------------------------------------------------------- settings


@router.get("/settings")
@owner
async def settings(request: Request) -> dict[str, Any]:
    backend = backend_of(request)
    return {
        "settings": await backend.settings(),
        "scheduler": await backend.scheduler(),
        "keys": await backend.gateway_keys(),
        "budgets": await backend.budgets(),
    }


@router.post("/settings")
@signed_in
async def change_settings(request: Request) -> dict[str, Any]:
    """`{"name", "value"}`: one setting, checked by the settings' own rules."""
    return await _change(request, ("allowed_hosts",))


@router.post("/login")
@owner
async def change_login(request: Request) -> dict[str, Any]:
    """`{"name", "value"}`: the login's name or password (a new password ends every session)."""
    return await _change(request, ("login_user", "login_password"))


async def _change(request: Request, names: tuple[str, ...]) -> dict[str, Any]:
    body = await form(request)
    name = body.get("name")
    if not isinstance(name, str) or name not in names:
        raise UserError(f"{request.url.path} changes {' and '.join(names)}")
    if name == "login_password":
        await _current_password(request, body)
    await backend_of(request).change(name, body.get("value", ""))
    apply_now(request)
    return {"settings": await backend_of(request).settings()}


async def _current_password(request: Request, body: dict[str, Any]) -> None:
    """Changing a set password asks for the current one (checked and counted
    as a sign-in attempt is): a session left open is not the password."""
    settings = await backend_of(request).settings()
    if not settings["login_password_set"]:
        return
    client = request.client.host if request.client else "unknown"
    with field("current"):
        current = text(body, "current", required=True, label="the current password")
        try:
            await core_of(request).login.check(client, settings["login_user"], current)
        except Refused as exc:
            if exc.status != 401:
                raise
            raise UserError("the current password is not right") from None  # a 401 sends the page to sign in


@router.post("/scheduler")
@signed_in
async def scheduler(request: Request) -> dict[str, Any]:
    enabled = (await form(request)).get("enabled")
    if not isinstance(enabled, bool):
        raise FieldError("enabled", "the scheduler is on or off")
    return await backend_of(request).switch_scheduler(enabled)


@router.post("/budgets")
@signed_in
async def set_budget(request: Request) -> dict[str, Any]:
    """`{"for": "install"|"key:NAME"|"collection:NAME", "period", "usd", "tokens"}`:
    one budget set (both amounts empty: removed); its row, as `GET /bench/budgets` gives it."""
    return {"budget": await backend_of(request).set_budget(await form(request))}


@router.post("/keys")
@signed_in
async def create_key(request: Request) -> dict[str, Any]:
    return await backend_of(request).create_gateway_key(await form(request))


@router.post("/keys/{name}/revoke")
@signed_in
async def revoke_key(request: Request, name: str) -> dict[str, Any]:
    revoked = await backend_of(request).revoke_gateway_key(name)
    apply_now(request)
    return {"key": revoked}


@router.post("/keys/{name}/expiry")
@signed_in
async def set_key_expiry(request: Request, name: str) -> dict[str, Any]:
    changed = await backend_of(request).set_gateway_key_expiry(name, await form(request))
    apply_now(request)
    return {"key": changed}


@router.post("/keys/{name}/rotate")
@signed_in
async def rotate_key(request: Request, name: str) -> dict[str, Any]:
    """A new secret, in this reply only; the old one works for the grace asked."""
    rotated = await backend_of(request).rotate_gateway_key(name, await form(request))
    apply_now(request)
    return rotated


def apply_now(request: Request) -> None:
    """The guard forgets the settings and keys it read, so a change (an
    allowed host, a revoked key) holds from the next request on."""
    guard = getattr(request.app.state, "guard", None)
    if guard is not None:
        guard.forget()
