"""Every error the server answers, in the caller's API format.

A caller's mistake is a 4xx that says what was wrong, in the shape of the
API the caller speaks (`formats.errors`): our `UserError` tree keeps its
status; FastAPI's validation errors and malformed JSON are 400s; unknown
paths and methods keep Starlette's 404/405. An outbound failure that
escapes an engine is a 502 (the provider failed, not the caller), a store
that cannot be reached a 503. Only a genuine bug of ours is a 500, and even
then the reply is one line with an id to find the logged traceback by,
never the traceback itself (`CatchAll`).
"""

from __future__ import annotations

import json
import logging
import math
import re
import secrets
import time
from collections.abc import Awaitable, Callable, Mapping
from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import Response
from starlette.exceptions import HTTPException as StarletteHTTPException

from benchwarmers import jsontext, metrics
from benchwarmers.config import tunables
from benchwarmers.errors import (
    LimitExceeded,
    NoAnswer,
    ProviderError,
    Refused,
    StoreError,
    StoreFull,
    UserError,
)
from benchwarmers.formats.errors import error_body, format_for_path
from benchwarmers.server.guard import BODY_STATE, ASGIApp, Message, Receive, Scope, Send
from benchwarmers.server.json_response import JSONResponse

log = logging.getLogger(__name__)
UNKNOWN_RETRY_SECONDS = tunables.UNKNOWN_RETRY_SECONDS.value


def error_response(
    request: Request,
    status: int,
    message: str,
    headers: Mapping[str, str] | None = None,
    *,
    malformed: bool = False,
    param: str = "",
) -> JSONResponse:
    """An error reply in the format of the request's path; `param` the
    request field at fault, for formats that name it (OpenAI's)."""
    body = error_body(format_for_path(request.url.path), status, message, malformed=malformed, param=param)
    return JSONResponse(body, status_code=status, headers=dict(headers or {}))


async def read_json(request: Request) -> Any:
    """The request's body as JSON, or a 400 saying why it is not. Routes that
    read the raw body use this instead of `request.json()`. The body is the
    one the guard read (`guard.BODY_STATE`); an app built without the guard
    (as some tests build theirs) reads it from the request."""
    raw = request.scope.get("state", {}).get(BODY_STATE)
    if raw is None:
        raw = await request.body()
    if not raw.strip():
        raise UserError("the request body is empty; send a JSON object")
    return jsontext.loads(raw, slow=_read_strictly)


def _read_strictly(raw: bytes) -> Any:
    """What `read_json` reads where orjson would read otherwise or refuses:
    the body's value, or a 400 saying why it is not JSON."""
    try:
        # Decoded here, not by `json.loads(bytes)`, which would also take
        # UTF-16 and UTF-32: text the guard's depth check and the surrogate
        # check below (both reading UTF-8 bytes) would not see into.
        text = raw.decode("utf-8")
        if text.startswith("\ufeff"):  # what `json.loads` says of it; a decoder says nothing
            raise json.JSONDecodeError("Unexpected UTF-8 BOM (decode using utf-8-sig)", text, 0)
        body = _DECODER.decode(text)
    except UnicodeDecodeError:
        raise UserError("the request body is not UTF-8 text") from None
    except json.JSONDecodeError as exc:
        raise UserError(f"malformed JSON: {exc.msg} at line {exc.lineno} column {exc.colno}") from None
    except RecursionError:
        raise UserError("malformed JSON: nested too deep") from None
    if _SURROGATE_ESCAPE.search(raw):
        _refuse_lone_surrogates(body)
    return body


# A `\ud800`-`\udfff` escape: legal JSON, but alone (unpaired) it is no
# character at all, and would fail later when a seat's request is encoded.
_SURROGATE_ESCAPE = re.compile(rb"\\u[dD][89a-fA-F]")


def _refuse_lone_surrogates(body: Any) -> None:
    try:
        json.dumps(body, ensure_ascii=False).encode("utf-8")
    except UnicodeEncodeError:
        raise UserError("malformed JSON: a \\u escape names a lone surrogate (no character)") from None


def _not_json(constant: str) -> Any:
    """Python reads NaN and Infinity; JSON has neither, and a NaN passed on
    would fail later, inside a provider call, as our bug."""
    raise UserError(f"malformed JSON: {constant} is not a JSON value")


# Built once: `json.loads` with any option builds a decoder on every call.
_DECODER = json.JSONDecoder(parse_constant=_not_json)


def install_error_handlers(app: FastAPI) -> None:
    for exc_class, handler in HANDLERS.items():
        app.add_exception_handler(exc_class, handler)


async def _user_error(request: Request, exc: UserError) -> JSONResponse:
    headers = exc.headers if isinstance(exc, Refused) else None
    return error_response(request, exc.status, str(exc), headers, param=exc.field)


async def _validation_error(request: Request, exc: RequestValidationError) -> JSONResponse:
    problems = list(exc.errors())
    if any(p.get("type") == "json_invalid" for p in problems):
        detail = next(p for p in problems if p.get("type") == "json_invalid")
        reason = (detail.get("ctx") or {}).get("error", "not valid JSON")
        return error_response(request, 400, f"malformed JSON: {reason}", malformed=True)
    lines = [_problem_line(p) for p in problems[:5]]
    more = f" (and {len(problems) - 5} more)" if len(problems) > 5 else ""
    return error_response(request, 400, "; ".join(lines) + more)


def _problem_line(problem: Mapping[str, Any]) -> str:
    where = ".".join(str(part) for part in problem.get("loc", ()) if part != "body") or "body"
    return f"{where}: {problem.get('msg', 'invalid')}"


async def _http_error(request: Request, exc: StarletteHTTPException) -> JSONResponse:
    message = exc.detail if isinstance(exc.detail, str) else json.dumps(exc.detail)
    if exc.status_code == 404 and message == "Not Found":
        message = f"no route {request.method} {request.url.path}"
    elif exc.status_code == 405:
        message = f"{request.method} is not allowed on {request.url.path}"
    return error_response(request, exc.status_code, message, exc.headers)


async def _json_error(request: Request, exc: json.JSONDecodeError) -> JSONResponse:
    message = f"malformed JSON: {exc.msg} at line {exc.lineno} column {exc.colno}"
    return error_response(request, 400, message, malformed=True)


async def _unicode_error(request: Request, exc: UnicodeDecodeError) -> JSONResponse:
    return error_response(request, 400, "the request body is not UTF-8 text", malformed=True)


async def _provider_error(request: Request, exc: ProviderError) -> JSONResponse:
    if isinstance(exc, LimitExceeded):
        # Every 429 we send says when to retry; when no limit said, a minute (the usual window).
        wait = UNKNOWN_RETRY_SECONDS if exc.frees_at is None else math.ceil(exc.frees_at - time.time())
        return error_response(request, 429, str(exc.message), {"retry-after": str(max(1, wait))})
    if isinstance(exc, NoAnswer):  # its own status is ours, not a provider's: not said as one
        prefix = "the model's provider failed: " if exc.providers_failed else ""
        return error_response(request, 502, prefix + exc.message)
    return error_response(request, 502, f"the model's provider failed: {exc}")


async def _store_error(request: Request, exc: StoreError) -> JSONResponse:
    if isinstance(exc, StoreFull):  # said as it is: the owner has a disk to free
        log.error("refused %s %s: %s", request.method, request.url.path, exc)
        return error_response(request, 507, str(exc), {"retry-after": "60"})
    log.error("store error on %s %s: %s", request.method, request.url.path, exc)
    return error_response(request, 503, "the server's store is not available; try again shortly")


# Every exception class the app answers as a reply, and how: installed on
# the FastAPI app and used as they are by the hot lane (`server/hot.py`).
HANDLERS: dict[type[Exception], Callable[[Request, Any], Awaitable[Response]]] = {
    UserError: _user_error,
    RequestValidationError: _validation_error,
    StarletteHTTPException: _http_error,
    json.JSONDecodeError: _json_error,
    UnicodeDecodeError: _unicode_error,
    ProviderError: _provider_error,
    StoreError: _store_error,
}


def handler_for(
    exc: Exception,
    handlers: Mapping[type[Exception], Callable[[Request, Any], Awaitable[Response]]] = HANDLERS,
) -> Callable[[Request, Any], Awaitable[Response]] | None:
    """The handler that answers `exc` (by its class, nearest first, as
    Starlette looks one up), or None: a bug."""
    for cls in type(exc).__mro__:
        if cls in handlers:
            return handlers[cls]
    return None


class CatchAll:
    """The outermost middleware: a bug anywhere below answers a 500 in the
    caller's format with an id, and the traceback goes to the log only. If
    the reply had already started, the connection is cut (the client sees a
    broken stream, which is the truth) and the bug is logged the same way."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        started = False

        async def tracking_send(message: Message) -> None:
            nonlocal started
            if message["type"] == "http.response.start":
                started = True
                _count(scope, message["status"])
            await send(message)

        try:
            await self.app(scope, receive, tracking_send)
        except Exception:
            error_id = secrets.token_hex(4)
            log.exception("internal error %s on %s %s", error_id, scope.get("method"), scope.get("path"))
            if started:
                return
            fmt = format_for_path(scope.get("path", "/"))
            body = json.dumps(error_body(fmt, 500, f"internal error {error_id}; the server log has it"))
            raw = body.encode()
            _count(scope, 500)
            await send(
                {
                    "type": "http.response.start",
                    "status": 500,
                    "headers": [
                        (b"content-type", b"application/json"),
                        (b"content-length", str(len(raw)).encode()),
                    ],
                }
            )
            await send({"type": "http.response.body", "body": raw, "more_body": False})


def _count(scope: Scope, status: int) -> None:
    """One reply in `metrics.REQUESTS`: by the route's template (set by the
    router once it matched; "unmatched" for the guard's refusals and 404s),
    never the raw path, so the label set stays bounded."""
    route = getattr(scope.get("route"), "path", "unmatched")
    path = scope.get("path", "/")
    key = (route, path if route == "unmatched" else "", status)
    child = _counted.get(key)
    if child is None:
        child = metrics.REQUESTS.labels(route, format_for_path(path), str(status))
        if len(_counted) < _COUNTED_CAP:
            _counted[key] = child
    child.inc()


# The counter for each (route, status) seen, so a reply costs one dict lookup
# rather than prometheus-client's label lookup (a lock, a tuple, a format
# check). Unmatched paths are keyed by path (their format follows from it),
# so the cap keeps a scan of random paths from growing it.
_COUNTED_CAP = 4096
_counted: dict[tuple[str, str, int], Any] = {}
