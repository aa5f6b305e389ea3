"""The server's settings over HTTP, for scripts (and the dashboard, once built).

    GET  /bench/settings     {"settings": [{"name", "value", "default", "description"}]}
    POST /bench/settings     {"name": "max_body_mb", "value": 50}  ->  {"setting": {...}}

What a setting looks like from outside (the write-only login password, the
checks) is `core/settings.py`, behind `core.Admin`, shared with `benchwarmers settings`.

These decide who may reach the server (allowed hosts, keys required, body
size), so only the owner and keys not limited to some collections may read
or change them; a scoped key gets 403. A change takes effect at once in
this replica (the guard forgets its cached policy, the scheduler
re-reads its switch); other replicas see it within seconds.
"""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Request

from benchwarmers.errors import UserError
from benchwarmers.server.access import gateway
from benchwarmers.server.deps import admin_of, operations_of
from benchwarmers.server.errors import read_json

router = APIRouter(prefix="/bench/settings")


@router.get("")
@gateway
async def list_settings(request: Request) -> dict[str, Any]:
    return {"settings": [row.as_dict() for row in await admin_of(request).settings()]}


@router.post("")
@gateway
async def set_setting(request: Request) -> dict[str, Any]:
    admin = admin_of(request)
    admin.check_allowed()  # a scoped key is refused before its body is read
    body = await read_json(request)
    if not isinstance(body, dict) or not isinstance(body.get("name"), str) or "value" not in body:
        raise UserError('send a JSON object {"name": "...", "value": ...}')
    row = await admin.change_setting(body["name"], body["value"])
    guard = getattr(request.app.state, "guard", None)
    if guard is not None:
        guard.forget()  # the guard's cached policy
    await operations_of(request).settings_changed()
    return {"setting": row.as_dict()}
