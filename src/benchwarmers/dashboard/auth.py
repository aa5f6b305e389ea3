"""The dashboard's door: login, session cookie, CSRF token, attempt limits.

**When a login is asked.** When the server listens beyond loopback (the
guard's `exposed`), or when the settings name a login (`login_user` or a
`login_password`). Exposed with no password set, the dashboard refuses
every page but the login page, which says how to set one
(`benchwarmers settings set login_password`): an exposed bench is never
open to whoever finds it.

**The session** is a cookie `bw_session` signed with HMAC-SHA256 under a
key derived from the stored scrypt hash (`config/passwords.py`): no session
table, replicas on one database agree, and changing the password ends
every session at once. It holds the user and an expiry; HttpOnly,
SameSite=Strict, Secure when the page came over TLS.

**CSRF.** Every state-changing dashboard request must carry the token of
the `bw_csrf` cookie (a random value set on the first page, SameSite=Strict)
as the `X-CSRF-Token` header (our JS) or a `csrf` form field (the login
form). A page of another site can neither read the cookie nor send it; the
guard refuses its Origin before this runs anyway.

**Attempts** are counted per client address and in all, in the runtime's
counters (shared through Redis when set): past the limit a login is
refused with the seconds to wait, whether or not the password was right.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import math
import secrets
import time
from dataclasses import dataclass

from fastapi import Request, Response

from benchwarmers.errors import Refused
from benchwarmers.identity.passwords import verify_password
from benchwarmers.limits.counters import Charge
from benchwarmers.store.settings import LOGIN_PASSWORD_HASH, LOGIN_USER

SESSION_COOKIE = "bw_session"
CSRF_COOKIE = "bw_csrf"
CSRF_HEADER = "x-csrf-token"
CSRF_FIELD = "csrf"
SESSION_SECONDS = 12 * 3600
ATTEMPTS_PER_CLIENT = 5  # per minute, from one address
ATTEMPTS_IN_ALL = 30  # per minute, from everywhere (a spread-out guess)
ATTEMPT_WINDOW = 60.0
SAFE_METHODS = frozenset({"GET", "HEAD", "OPTIONS"})


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
    runtime = request.app.state.runtime
    values = await runtime.settings.all()
    password_hash: str = values[LOGIN_PASSWORD_HASH.name]
    login_user: str = values[LOGIN_USER.name]
    guard = getattr(request.app.state, "guard", None)
    exposed = bool(guard is not None and guard.exposed)
    needed = exposed or bool(login_user) or bool(password_hash)
    user = _session_user(request.cookies.get(SESSION_COOKIE, ""), password_hash) if password_hash else ""
    return Door(needed=needed, possible=bool(password_hash), user=user, login_user=login_user)


async def log_in(request: Request, response: Response, name: str, password: str) -> None:
    """Check an attempt (counted first, so a flood is refused before scrypt
    runs) and set the session cookie; `Refused` with the reason otherwise."""
    await _count_attempt(request)
    runtime = request.app.state.runtime
    values = await runtime.settings.all()
    password_hash: str = values[LOGIN_PASSWORD_HASH.name]
    login_user: str = values[LOGIN_USER.name]
    if not password_hash:
        raise Refused(
            "no login password is set: run `benchwarmers settings set login_password` on the server",
            status=403,
        )
    name_ok = hmac.compare_digest(name.encode(), login_user.encode()) if login_user else True
    if not (verify_password(password, password_hash) and name_ok):
        raise Refused("the name or the password is not right", status=401)
    expires = int(time.time()) + SESSION_SECONDS
    response.set_cookie(
        SESSION_COOKIE,
        _sign(f"{login_user or 'owner'}|{expires}|{secrets.token_urlsafe(8)}", password_hash),
        max_age=SESSION_SECONDS,
        httponly=True,
        samesite="strict",
        secure=over_tls(request),
        path="/",
    )


def log_out(response: Response) -> None:
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


def _sign(payload: str, password_hash: str) -> str:
    body = base64.urlsafe_b64encode(payload.encode()).decode().rstrip("=")
    return f"{body}.{_mac(body, password_hash)}"


def _mac(body: str, password_hash: str) -> str:
    key = hashlib.sha256(b"benchwarmers-dashboard-session\0" + password_hash.encode()).digest()
    return hmac.new(key, body.encode(), hashlib.sha256).hexdigest()


def _session_user(cookie: str, password_hash: str) -> str:
    body, _, mac = cookie.partition(".")
    if not body or not hmac.compare_digest(mac.encode(), _mac(body, password_hash).encode()):
        return ""
    try:
        user, expires, _nonce = base64.urlsafe_b64decode(body + "=" * (-len(body) % 4)).decode().split("|")
        if int(expires) < time.time():
            return ""
    except ValueError:
        return ""
    return user


async def _count_attempt(request: Request) -> None:
    counters = request.app.state.runtime.counters
    client = request.client.host if request.client else "unknown"
    now = time.time()
    charges = [
        Charge.sliding(f"dashboard-login|{client}", 1, ATTEMPTS_PER_CLIENT, ATTEMPT_WINDOW),
        Charge.sliding("dashboard-login|all", 1, ATTEMPTS_IN_ALL, ATTEMPT_WINDOW),
    ]
    admission = await counters.take(charges, now)
    if not admission.admitted:
        wait = ATTEMPT_WINDOW if admission.frees_at is None else max(admission.frees_at - now, 1.0)
        raise Refused(
            f"too many login attempts; try again in {math.ceil(wait)} s",
            status=429,
            headers={"retry-after": str(math.ceil(wait))},
        )
