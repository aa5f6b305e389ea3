"""The dashboard's door over HTTP: the session cookie, the CSRF token.

The rules (when a login is asked, whether an attempt is right, how many
attempts, what a session is signed with) are `core.login`'s; this module
carries them in cookies.

**The session** is a cookie `bw_session` holding the session's random token
(`core.login`: a store row, so logout, a password change and "sign out
everywhere" end it at once on every worker), signed with HMAC-SHA256 under
the policy's session key (derived from the stored password hash), so a
made-up cookie is turned away without a read of the store; HttpOnly,
SameSite=Strict, Secure when the page came over TLS.

**CSRF.** Every state-changing dashboard request must carry the token of
the `bw_csrf` cookie (a random value set on the first page, SameSite=Strict)
as the `X-CSRF-Token` header (our JS) or a `csrf` form field (the login
form). A page of another site can neither read the cookie nor send it; the
guard refuses its Origin before this runs anyway.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import secrets
from dataclasses import dataclass
from urllib.parse import quote

from fastapi import Request, Response
from fastapi.responses import RedirectResponse

from benchwarmers.core import LoginPolicy, tunables
from benchwarmers.errors import Refused
from benchwarmers.server.access import Access
from benchwarmers.server.deps import core_of

SESSION_COOKIE = "bw_session"
CSRF_COOKIE = "bw_csrf"
CSRF_HEADER = "x-csrf-token"
CSRF_FIELD = "csrf"
SESSION_SECONDS = tunables.SESSION_SECONDS.value
SAFE_METHODS = frozenset({"GET", "HEAD", "OPTIONS"})
# Every page the dashboard serves (`/signin/*` too): no framing, our own scripts only, no
# `<base>` to move where they load from, no plugin, no content sniffed as another type.
PAGE_HEADERS = {
    "cache-control": "no-store",
    "content-security-policy": (
        "default-src 'self'; img-src 'self' data:; style-src 'self'; script-src 'self'; "
        "object-src 'none'; base-uri 'none'; frame-ancestors 'none'; form-action 'self'"
    ),
    "x-content-type-options": "nosniff",
    "x-frame-options": "DENY",
    "referrer-policy": "same-origin",
}


@dataclass(frozen=True, slots=True)
class Door:
    """What this request meets: whether a login is needed, whether one can
    succeed (a password is set), and who is signed in (or "")."""

    needed: bool
    possible: bool
    user: str
    login_user: str

    @property
    def open(self) -> bool:
        return not self.needed or bool(self.user)


async def door(request: Request) -> Door:
    guard = getattr(request.app.state, "guard", None)
    login = core_of(request).login
    policy = await login.policy(exposed=bool(guard is not None and guard.exposed))
    token = _session_token(request.cookies.get(SESSION_COOKIE, ""), policy.session_key)
    user = await login.session_user(token) if token else ""
    return Door(needed=policy.needed, possible=policy.possible, user=user, login_user=policy.login_user)


async def _admit_page(request: Request) -> Response | None:
    """None when the page may be shown (the door is on `request.state`
    for the page to show who is signed in); else the way to the login."""
    request.state.door = found = await door(request)
    if found.open:
        return None
    return RedirectResponse("/login?next=" + quote(request.url.path), status_code=303)


# A dashboard page: open when no login is asked, else behind one (`server/access.py`).
page = Access("dashboard login", _admit_page)


async def log_in(request: Request, response: Response, name: str, password: str) -> None:
    """Check an attempt (`core.login.Login.check`: `Refused` with the reason)
    and set the session cookie."""
    client = request.client.host if request.client else "unknown"
    login = core_of(request).login
    policy: LoginPolicy = await login.check(client, name, password)
    token = await login.start_session(policy)
    response.set_cookie(
        SESSION_COOKIE,
        _sign(token, policy.session_key),
        max_age=SESSION_SECONDS,
        httponly=True,
        samesite="strict",
        secure=over_tls(request),
        path="/",
    )


async def log_out(request: Request, response: Response, *, everywhere: bool = False) -> None:
    """End this session (or every one) in the store, and drop its cookie."""
    login = core_of(request).login
    if everywhere:
        await login.end_every_session()
    else:
        policy = await login.policy(exposed=False)
        token = _session_token(request.cookies.get(SESSION_COOKIE, ""), policy.session_key)
        if token:
            await login.end_session(token)
    response.delete_cookie(SESSION_COOKIE, path="/")


def csrf_token(request: Request, response: Response) -> str:
    """The page's CSRF token: the cookie's, or a new one set on `response`."""
    token = request.cookies.get(CSRF_COOKIE, "")
    if len(token) < 32:
        token = secrets.token_urlsafe(32)
        response.set_cookie(
            CSRF_COOKIE, token, httponly=True, samesite="strict", secure=over_tls(request), path="/"
        )
    return token


def check_csrf(request: Request, sent: str) -> None:
    """Refuse a state-changing request whose token is missing or not the cookie's."""
    cookie = request.cookies.get(CSRF_COOKIE, "")
    if not sent or not cookie or not hmac.compare_digest(sent.encode(), cookie.encode()):
        raise Refused("the form's CSRF token is missing or stale: reload the page and try again", status=403)


def over_tls(request: Request) -> bool:
    return request.url.scheme == "https"


def _sign(payload: str, key: bytes) -> str:
    body = base64.urlsafe_b64encode(payload.encode()).decode().rstrip("=")
    return f"{body}.{_mac(body, key)}"


def _mac(body: str, key: bytes) -> str:
    return hmac.new(key, body.encode(), hashlib.sha256).hexdigest()


def _session_token(cookie: str, key: bytes) -> str:
    """The session token a cookie carries when we signed it, else "" (no
    key: no password set, so no session holds)."""
    body, _, mac = cookie.partition(".")
    if not key or not body or not hmac.compare_digest(mac.encode(), _mac(body, key).encode()):
        return ""
    try:
        return base64.urlsafe_b64decode(body + "=" * (-len(body) % 4)).decode()
    except ValueError:
        return ""
