"""The dashboard's login, as rules: when one is asked, whether an attempt
is right, how many attempts a minute, and what a session is signed with.

- **Asked** when the server listens beyond loopback (`exposed`), or when the
  settings name a login (`login_user`, or a `login_password`). Exposed with
  no password set, no attempt can succeed: an exposed bench is never open
  to whoever finds it.
- **An attempt** is counted before it is checked (per client address and in
  all, in the runtime's counters, shared through Redis when set), so a
  flood is refused before scrypt runs; past the limit it is refused with the
  seconds to wait, right password or not.
- **A session** is signed with a key derived from the stored scrypt hash
  (`identity/passwords.py`): no session table, replicas on one database
  agree, and a password change ends every session. The cookie that carries
  it is the dashboard's business (`dashboard/auth.py`).

    policy = await login_policy(runtime, exposed=guard.exposed)
    policy = await check_login(runtime, client_host, name, password)   # Refused unless right
"""

from __future__ import annotations

import hashlib
import hmac
import math
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING

from benchwarmers.errors import Refused
from benchwarmers.identity.passwords import verify_password
from benchwarmers.limits.counters import Charge
from benchwarmers.store.settings import LOGIN_PASSWORD_HASH, LOGIN_USER

if TYPE_CHECKING:
    from benchwarmers.runtime import Runtime

ATTEMPTS_PER_CLIENT = 5  # per minute, from one address
ATTEMPTS_IN_ALL = 30  # per minute, from everywhere
ATTEMPT_WINDOW = 60.0


@dataclass(frozen=True, slots=True)
class LoginPolicy:
    """`needed`: a login is asked; `possible`: a password is set, so one can
    succeed; `session_key`: what sessions are signed with (empty: none can be)."""

    needed: bool
    possible: bool
    login_user: str
    session_key: bytes


async def login_policy(runtime: Runtime, *, exposed: bool) -> LoginPolicy:
    values = await runtime.settings.all()
    password_hash: str = values[LOGIN_PASSWORD_HASH.name]
    login_user: str = values[LOGIN_USER.name]
    return LoginPolicy(
        needed=exposed or bool(login_user) or bool(password_hash),
        possible=bool(password_hash),
        login_user=login_user,
        session_key=_session_key(password_hash),
    )


async def check_login(runtime: Runtime, client: str, name: str, password: str) -> LoginPolicy:
    """Count the attempt, then check it; the policy when right, else
    `Refused` (429 over the limit, 403 with no password set, 401 wrong)."""
    await _count_attempt(runtime, client)
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
    return LoginPolicy(True, True, login_user, _session_key(password_hash))


def _session_key(password_hash: str) -> bytes:
    if not password_hash:
        return b""
    return hashlib.sha256(b"benchwarmers-dashboard-session\0" + password_hash.encode()).digest()


async def _count_attempt(runtime: Runtime, client: str) -> None:
    now = time.time()
    charges = [
        Charge.sliding(f"dashboard-login|{client}", 1, ATTEMPTS_PER_CLIENT, ATTEMPT_WINDOW),
        Charge.sliding("dashboard-login|all", 1, ATTEMPTS_IN_ALL, ATTEMPT_WINDOW),
    ]
    admission = await runtime.counters.take(charges, now)
    if not admission.admitted:
        wait = ATTEMPT_WINDOW if admission.frees_at is None else max(admission.frees_at - now, 1.0)
        raise Refused(
            f"too many login attempts; try again in {math.ceil(wait)} s",
            status=429,
            headers={"retry-after": str(math.ceil(wait))},
        )
