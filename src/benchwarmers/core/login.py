"""The dashboard's login, as rules: when one is asked, whether an attempt
is right, how many attempts a minute, and what a session is signed with.

- **Asked** when the server listens beyond loopback (`exposed`), when gateway
  keys are required (`require_key`: the dashboard holds what `/v1` holds),
  or when the settings name a login (`login_user`, or a `login_password`).
  Asked with no password set, no attempt can succeed: an exposed or keyed
  bench is never open to whoever finds it.
- **An attempt** is counted before it is checked, per client address
  (`ATTEMPTS_PER_CLIENT` a minute, right password or not), so a flood from
  one address is refused before scrypt runs. Failures are counted too, per
  address and in all: once `FAILURES_IN_ALL` wrong passwords came in the
  last minute, an address that itself failed lately is refused, while one
  with no recent failure is still checked: wrong passwords from other
  addresses cannot lock the owner out.
- **A session** is a store row (`identity/sessions.py`): logout, a password
  change and "sign out everywhere" end it at once, on every worker and
  replica. Its cookie is also signed with a key derived from the stored
  scrypt hash (`identity/passwords.py`), so a made-up cookie costs no read
  of the store. The cookie itself is the dashboard's business
  (`dashboard/auth.py`).

    login = Login(runtime)                     # a server's: `CoreHandle.login`
    policy = await login.policy(exposed=guard.exposed)
    policy = await login.check(client_host, name, password)   # Refused unless right
    token = await login.start_session(policy)
"""

from __future__ import annotations

import hashlib
import hmac
import math
import time
from dataclasses import dataclass
from datetime import timedelta
from typing import TYPE_CHECKING

from benchwarmers.config import tunables
from benchwarmers.errors import Refused
from benchwarmers.identity import sessions
from benchwarmers.identity.passwords import verify_password
from benchwarmers.limits.counters import Charge
from benchwarmers.store.settings import LOGIN_PASSWORD_HASH, LOGIN_USER, REQUIRE_KEY

if TYPE_CHECKING:
    from benchwarmers.runtime import Runtime

ATTEMPTS_PER_CLIENT = 5  # per minute, from one address
FAILURES_IN_ALL = 30  # wrong passwords per minute, from everywhere, before failing addresses wait
ATTEMPT_WINDOW = 60.0
SESSION_LIFETIME = timedelta(seconds=tunables.SESSION_SECONDS.value)


@dataclass(frozen=True, slots=True)
class LoginPolicy:
    """`needed`: a login is asked; `possible`: a password is set, so one can
    succeed; `session_key`: what sessions are signed with (empty: none can be)."""

    needed: bool
    possible: bool
    login_user: str
    session_key: bytes


class Login:
    """The login's rules over one open runtime: its settings, its sessions
    and its attempt counters."""

    def __init__(self, runtime: Runtime) -> None:
        self._runtime = runtime

    async def policy(self, *, exposed: bool) -> LoginPolicy:
        values = await self._runtime.settings.all()
        password_hash: str = values[LOGIN_PASSWORD_HASH.name]
        login_user: str = values[LOGIN_USER.name]
        return LoginPolicy(
            needed=exposed or bool(values[REQUIRE_KEY.name]) or bool(login_user) or bool(password_hash),
            possible=bool(password_hash),
            login_user=login_user,
            session_key=_session_key(password_hash),
        )

    async def check(self, client: str, name: str, password: str) -> LoginPolicy:
        """Count the attempt, then check it; the policy when right, else
        `Refused` (429 over the limit, 403 with no password set, 401 wrong)."""
        await self._admit_attempt(client)
        values = await self._runtime.settings.all()
        password_hash: str = values[LOGIN_PASSWORD_HASH.name]
        login_user: str = values[LOGIN_USER.name]
        if not password_hash:
            raise Refused(
                "no login password is set: run `benchwarmers settings set login_password` on the server",
                status=403,
            )
        name_ok = hmac.compare_digest(name.encode(), login_user.encode()) if login_user else True
        if not (verify_password(password, password_hash) and name_ok):
            await self._count_failure(client)
            raise Refused("the name or the password is not right", status=401)
        return LoginPolicy(True, True, login_user, _session_key(password_hash))

    async def start_session(self, policy: LoginPolicy) -> str:
        """A session for a login `check` let in; returns its token."""
        return await sessions.start(self._runtime.store, policy.login_user or "owner", SESSION_LIFETIME)

    async def session_user(self, token: str) -> str:
        """Who a live session is, or "" (never started, ended or expired)."""
        return await sessions.user_of(self._runtime.store, token)

    async def end_session(self, token: str) -> None:
        await sessions.end(self._runtime.store, token)

    async def end_every_session(self) -> int:
        """Sign out everywhere: every session ends; how many did."""
        return await sessions.end_all(self._runtime.store)

    async def _admit_attempt(self, client: str) -> None:
        """Count one attempt of `client`, or refuse it: over its own rate, or,
        once the failures in all are over theirs, when it failed lately itself.
        (A charge of 0 against `limit - 1` is refused when `limit` is used:
        a look at a window that adds nothing to it.)"""
        counters = self._runtime.counters
        now = time.time()
        charges = [Charge.sliding(f"dashboard-login|{client}", 1, ATTEMPTS_PER_CLIENT, ATTEMPT_WINDOW)]
        failed_lately = not (
            await counters.take([Charge.sliding(_failures(client), 0, 0, ATTEMPT_WINDOW)], now)
        ).admitted
        if failed_lately:
            charges.append(Charge.sliding(_failures("all"), 0, FAILURES_IN_ALL - 1, ATTEMPT_WINDOW))
        admission = await counters.take(charges, now)
        if not admission.admitted:
            wait = ATTEMPT_WINDOW if admission.frees_at is None else max(admission.frees_at - now, 1.0)
            raise Refused(
                f"too many login attempts; try again in {math.ceil(wait)} s",
                status=429,
                headers={"retry-after": str(math.ceil(wait))},
            )

    async def _count_failure(self, client: str) -> None:
        charges = [
            Charge.sliding(_failures(client), 1, ATTEMPTS_PER_CLIENT, ATTEMPT_WINDOW),
            Charge.sliding(_failures("all"), 1, FAILURES_IN_ALL, ATTEMPT_WINDOW),
        ]
        await self._runtime.counters.adjust(charges, time.time())


def _session_key(password_hash: str) -> bytes:
    if not password_hash:
        return b""
    return hashlib.sha256(b"benchwarmers-dashboard-session\0" + password_hash.encode()).digest()


def _failures(client: str) -> str:
    return f"dashboard-login-failed|{client}"
