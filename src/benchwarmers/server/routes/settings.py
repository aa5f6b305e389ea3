"""The server's settings over HTTP, for scripts (and the dashboard, once built).

    GET  /bench/settings     {"settings": [{"name", "value", "default", "description"}]}
    POST /bench/settings     {"name": "max_body_mb", "value": 50}  ->  {"setting": {...}}

What a setting looks like from outside (the write-only login password, the
checks) is `config/settings_view.py`, shared with `benchwarmers settings`.

These decide who may reach the server (allowed hosts, keys required, body
size), so only the owner and keys not limited to some collections may read
or change them; a scoped key gets 403. A change takes effect at once in
this replica (the guard forgets its cached policy, the scheduler
re-reads its switch); other replicas see it within seconds.
"""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Request

from benchwarmers.config.settings_view import change_setting, setting_rows
from benchwarmers.errors import Refused, UserError
from benchwarmers.server.callers import caller_may_administer, caller_of
from benchwarmers.server.deps import runtime_of
from benchwarmers.server.errors import read_json

router = APIRouter(prefix="/bench/settings")


def _administrator(request: Request) -> None:
    if not caller_may_administer(caller_of(request)):
        raise Refused("this key is limited to some collections and may not read or change settings")


@router.get("")
async def list_settings(request: Request) -> dict[str, Any]:
    _administrator(request)
    return {"settings": [row.as_dict() for row in await setting_rows(runtime_of(request).settings)]}


@router.post("")
async def set_setting(request: Request) -> dict[str, Any]:
    _administrator(request)
    body = await read_json(request)
    if not isinstance(body, dict) or not isinstance(body.get("name"), str) or "value" not in body:
        raise UserError('send a JSON object {"name": "...", "value": ...}')
    row = await change_setting(runtime_of(request).settings, body["name"], body["value"])
    await _apply_now(request)
    return {"setting": row.as_dict()}


async def _apply_now(request: Request) -> None:
    guard = getattr(request.app.state, "guard", None)
    if guard is not None:
        guard.forget()
    bench = getattr(request.app.state, "bench", None)  # the bench's services, when that router is mounted
    if bench is not None:
        await bench.clock.reconcile()
