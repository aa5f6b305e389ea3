"""A fake OAuth PKCE authorization server, shaped like OpenRouter's, over real HTTP.

The dashboard's "Sign in with OpenRouter" is tested against this, with
`BENCHWARMERS_SIGNIN_OPENROUTER_URL` pointing at it:

    with FakeAuthServer() as auth:
        os.environ["BENCHWARMERS_SIGNIN_OPENROUTER_URL"] = auth.url
        ...
        assert auth.issued == ["sk-or-fake-..."]

`GET /auth?callback_url&code_challenge&code_challenge_method=S256` approves
at once (a user who clicked "Allow") and redirects to the callback with
`code`; `POST /api/v1/auth/keys` with `{"code", "code_verifier",
"code_challenge_method"}` answers `{"key"}` only when the verifier's S256
digest is the challenge the code was issued for, and only once per code.
"""

from __future__ import annotations

import base64
import hashlib
import secrets
import socket
import threading
from urllib.parse import urlencode, urlsplit

import uvicorn
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, RedirectResponse, Response
from starlette.routing import Route


class FakeAuthServer:
    def __init__(self) -> None:
        self.port = 0
        self.codes: dict[str, str] = {}  # code -> the challenge it was issued for
        self.issued: list[str] = []  # keys handed out
        self.refused = 0
        self._server: uvicorn.Server | None = None
        self._thread: threading.Thread | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def app(self) -> Starlette:
        return Starlette(
            routes=[
                Route("/auth", self._authorize, methods=["GET"]),
                Route("/api/v1/auth/keys", self._exchange, methods=["POST"]),
            ]
        )

    async def _authorize(self, request: Request) -> Response:
        callback = request.query_params.get("callback_url", "")
        challenge = request.query_params.get("code_challenge", "")
        if request.query_params.get("code_challenge_method") != "S256" or not challenge:
            return JSONResponse({"error": "S256 code_challenge required"}, status_code=400)
        if urlsplit(callback).scheme not in ("http", "https"):
            return JSONResponse({"error": "callback_url must be http(s)"}, status_code=400)
        code = secrets.token_urlsafe(12)
        self.codes[code] = challenge
        joiner = "&" if "?" in callback else "?"
        return RedirectResponse(callback + joiner + urlencode({"code": code}), status_code=302)

    async def _exchange(self, request: Request) -> Response:
        body = await request.json()
        code, verifier = body.get("code", ""), body.get("code_verifier", "")
        challenge = self.codes.pop(code, None)
        digest = base64.urlsafe_b64encode(hashlib.sha256(verifier.encode()).digest()).decode().rstrip("=")
        if challenge is None or digest != challenge or body.get("code_challenge_method") != "S256":
            self.refused += 1
            return JSONResponse({"error": {"message": "invalid code or verifier"}}, status_code=403)
        key = "sk-or-fake-" + secrets.token_urlsafe(16)
        self.issued.append(key)
        return JSONResponse({"key": key, "user_id": "user_fake"})

    def start(self) -> FakeAuthServer:
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind(("127.0.0.1", 0))
        self.port = sock.getsockname()[1]
        config = uvicorn.Config(self.app(), log_level="warning", access_log=False, lifespan="off")
        self._server = uvicorn.Server(config)
        self._thread = threading.Thread(target=self._server.run, kwargs={"sockets": [sock]}, daemon=True)
        self._thread.start()
        while not self._server.started:
            if not self._thread.is_alive():
                raise RuntimeError("the fake authorization server did not start")
            threading.Event().wait(0.01)
        return self

    def stop(self) -> None:
        if self._server is not None:
            self._server.should_exit = True
        if self._thread is not None:
            self._thread.join(timeout=5)
        self._server = self._thread = None

    def __enter__(self) -> FakeAuthServer:
        return self.start()

    def __exit__(self, *_: object) -> None:
        self.stop()
