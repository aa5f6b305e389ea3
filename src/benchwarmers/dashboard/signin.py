"""Sign in with a provider (OAuth PKCE) instead of pasting a key.

Only providers that publish a sign-in for other apps are offered; each is
one `Provider` entry in `PROVIDERS`, so adding one is a few lines. The key
the provider hands back is stored exactly like a pasted one (llm's
keys.json, `config.keys.set_key`; never the data folder), and the endpoint
is added if it is not there yet.

    GET /signin/{provider}            make a verifier, remember it in a cookie, go to the provider
    GET /signin/{provider}/callback   the provider comes back here with ?code (a page that continues:
                                      our SameSite=Strict cookies are not sent on a cross-site arrival)
    GET /signin/{provider}/finish     exchange code + verifier for the key, store it

OpenRouter's flow: `https://openrouter.ai/auth?callback_url=...&code_challenge=...&
code_challenge_method=S256`, then `POST https://openrouter.ai/api/v1/auth/keys`
with `{"code", "code_verifier", "code_challenge_method"}` answers `{"key"}`.

`BENCHWARMERS_SIGNIN_<NAME>_URL` replaces a provider's origin for the
authorization and exchange URLs (the tests' fake authorization server,
`testing/fake_oauth.py`, or a provider's staging site).
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import os
import secrets
from dataclasses import dataclass
from urllib.parse import urlencode

from fastapi import APIRouter, Request
from fastapi.responses import HTMLResponse, RedirectResponse, Response

from benchwarmers.core import environment, tunables
from benchwarmers.dashboard import auth
from benchwarmers.dashboard.api import backend_of
from benchwarmers.errors import UserError
from benchwarmers.server.access import public

SIGNIN_COOKIE = "bw_signin"
SIGNIN_SECONDS = tunables.SIGNIN_SECONDS.value
URL_ENV = environment.SIGNIN_URL.name.replace("<NAME>", "{}")


@dataclass(frozen=True, slots=True)
class Provider:
    name: str  # the endpoint's name, and the path segment
    label: str
    origin: str  # replaced by BENCHWARMERS_SIGNIN_<NAME>_URL
    authorize_path: str
    exchange_path: str
    base_url: str  # the endpoint's API base URL
    api: str

    def origin_now(self) -> str:
        return (os.environ.get(URL_ENV.format(self.name.upper())) or self.origin).rstrip("/")

    def authorize_url(self, callback: str, challenge: str) -> str:
        query = urlencode(
            {"callback_url": callback, "code_challenge": challenge, "code_challenge_method": "S256"}
        )
        return f"{self.origin_now()}{self.authorize_path}?{query}"

    def exchange_url(self) -> str:
        return self.origin_now() + self.exchange_path


PROVIDERS: dict[str, Provider] = {
    p.name: p
    for p in (
        Provider(
            name="openrouter",
            label="OpenRouter",
            origin="https://openrouter.ai",
            authorize_path="/auth",
            exchange_path="/api/v1/auth/keys",
            base_url="https://openrouter.ai/api/v1",
            api="openai",
        ),
    )
}

router = APIRouter(prefix="/signin", include_in_schema=False)


def challenge_of(verifier: str) -> str:
    digest = hashlib.sha256(verifier.encode("ascii")).digest()
    return base64.urlsafe_b64encode(digest).decode("ascii").rstrip("=")


def _provider(name: str) -> Provider | None:
    return PROVIDERS.get(name)


@router.get("/{name}")
@auth.page
async def start(request: Request, name: str) -> Response:
    provider = _provider(name)
    if provider is None:
        return _page(f"No sign-in for {name!r}: paste its key on the Endpoints page.", 404)
    verifier = secrets.token_urlsafe(48)
    state = secrets.token_urlsafe(16)
    callback = f"{str(request.base_url).rstrip('/')}/signin/{name}/callback?state={state}"
    response = RedirectResponse(provider.authorize_url(callback, challenge_of(verifier)), status_code=303)
    # Lax, not Strict: it must come back with the provider's top-level redirect.
    response.set_cookie(
        SIGNIN_COOKIE,
        f"{name}.{state}.{verifier}",
        max_age=SIGNIN_SECONDS,
        httponly=True,
        samesite="lax",
        secure=auth.over_tls(request),
        path="/signin",
    )
    return response


@router.get("/{name}/callback")
@public
async def callback(request: Request, name: str, state: str = "", code: str = "") -> Response:
    """Changes nothing: continues to `finish` from our own page, so the
    dashboard's Strict cookies (the login) come along."""
    if _provider(name) is None or not code:
        return _page("The provider did not send a code back; try signing in again.", 400)
    target = f"/signin/{name}/finish?" + urlencode({"state": state, "code": code})
    return _page("Finishing the sign-in…", 200, refresh=target)


@router.get("/{name}/finish")
@auth.page
async def finish(request: Request, name: str, state: str = "", code: str = "") -> Response:
    provider = _provider(name)
    if provider is None:
        return _page(f"No sign-in for {name!r}.", 404)
    remembered = request.cookies.get(SIGNIN_COOKIE, "").split(".", 2)
    if len(remembered) != 3 or remembered[0] != name or not hmac.compare_digest(remembered[1], state):
        return _page("This sign-in was not started here (or it expired); start it again.", 400)
    verifier = remembered[2]
    try:
        key = await _exchange(request, provider, code, verifier)
        await backend_of(request).signed_in(provider.name, provider.base_url, provider.api, key)
    except UserError as exc:
        return _page(f"Sign-in with {provider.label} failed: {exc}", 502)
    response = RedirectResponse(f"/endpoints?signed_in={name}", status_code=303)
    response.delete_cookie(SIGNIN_COOKIE, path="/signin")
    return response


async def _exchange(request: Request, provider: Provider, code: str, verifier: str) -> str:
    payload = {"code": code, "code_verifier": verifier, "code_challenge_method": "S256"}
    return await backend_of(request).admin.exchange_signin_code(
        provider.exchange_url(), payload, provider.label
    )


def _page(message: str, status: int, *, refresh: str = "") -> HTMLResponse:
    from html import escape

    meta = f'<meta http-equiv="refresh" content="0;url={escape(refresh)}">' if refresh else ""
    link = f'<a href="{escape(refresh)}">Continue</a>' if refresh else '<a href="/endpoints">Endpoints</a>'
    body = (
        f'<!doctype html><html lang="en"><head><meta charset="utf-8">{meta}'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        '<link rel="stylesheet" href="/ui/static/app.css"><title>Sign in · Benchwarmers</title></head>'
        f'<body><main class="narrow"><p>{escape(message)}</p><p>{link}</p></main></body></html>'
    )
    # The pages' own headers, but no referrer at all: the callback's URL carries the code.
    return HTMLResponse(
        body, status_code=status, headers={**auth.PAGE_HEADERS, "referrer-policy": "no-referrer"}
    )
