"""The dashboard's door over plain HTTP: CSRF on every change, a foreign
Origin refused, the login when exposed (with its cookie's flags and its
attempt limit), refusals beside their field with nothing half-saved, and
the provider sign-in against our fake authorization server."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import httpx
import pytest

from benchwarmers.config import keys
from benchwarmers.core import Core
from benchwarmers.dashboard import auth
from benchwarmers.testing.fake_oauth import FakeAuthServer
from benchwarmers.testing.live_server import live_server

from .conftest import set_setting, sign_in

PAGES = ["/endpoints", "/models", "/onboard", "/collections", "/ask", "/quotas", "/settings"]


def token(client: httpx.Client) -> str:
    """Open a page, as a browser would, and read the CSRF token it set."""
    client.get("/endpoints")
    return client.cookies[auth.CSRF_COOKIE]


def endpoint_body(**fields: object) -> dict[str, object]:
    return {"name": "hub", "api": "openai", "base_url": "http://127.0.0.1:9/v1", "key": "sk-1", **fields}


def test_a_change_without_the_csrf_token_or_from_another_origin_is_refused(home: Path) -> None:
    with live_server(home) as server, httpx.Client(base_url=server.url) as client:
        csrf = token(client)
        missing = client.post("/ui/api/endpoints", json=endpoint_body())
        assert missing.status_code == 403 and "CSRF" in missing.json()["error"]["message"]
        wrong = client.post("/ui/api/endpoints", json=endpoint_body(), headers={"x-csrf-token": "x" * 43})
        assert wrong.status_code == 403
        foreign = client.post(
            "/ui/api/endpoints",
            json=endpoint_body(),
            headers={"x-csrf-token": csrf, "origin": "http://evil.example"},
        )
        assert foreign.status_code == 403 and "another origin" in foreign.text
        logout = client.post("/logout", data={})
        assert logout.status_code == 403
        assert client.get("/ui/api/endpoints").json()["endpoints"] == []

        same = client.post(
            "/ui/api/endpoints", json=endpoint_body(), headers={"x-csrf-token": csrf, "origin": server.url}
        )
        assert same.status_code == 200, same.text
        assert [e["name"] for e in client.get("/ui/api/endpoints").json()["endpoints"]] == ["hub"]


@pytest.mark.parametrize(
    ("fields", "field", "words"),
    [
        ({"name": "Hub!"}, "name", "not valid"),
        ({"base_url": "ftp://x"}, "base_url", "http"),
        ({"api": "soap"}, "api", "not known"),
        ({"key": "sk 1"}, "key", "whitespace"),
        ({"key": ""}, "key", "paste"),
        ({"name": 7}, "name", "text"),
    ],
)
def test_bad_input_is_refused_beside_its_field_and_nothing_is_saved(
    home: Path, fields: dict[str, object], field: str, words: str
) -> None:
    with live_server(home) as server, httpx.Client(base_url=server.url) as client:
        answer = client.post(
            "/ui/api/endpoints", json=endpoint_body(**fields), headers={"x-csrf-token": token(client)}
        )
        assert answer.status_code == 400, answer.text
        error = answer.json()["error"]
        assert error["field"] == field and words in error["message"]
        assert client.get("/ui/api/endpoints").json()["endpoints"] == []
        assert keys.key_source("hub") is None


def test_forms_of_other_pages_refuse_beside_their_fields(home: Path) -> None:
    with live_server(home) as server, httpx.Client(base_url=server.url) as client:
        sign_in(client, home)
        headers = {"x-csrf-token": token(client)}

        def refused(path: str, body: dict[str, object]) -> tuple[int, str]:
            answer = client.post(path, json=body, headers=headers)
            return answer.status_code, answer.json()["error"]["field"]

        assert refused("/ui/api/collections", {"name": "trio", "members": []}) == (400, "members")
        assert refused("/ui/api/collections", {"name": "a/b", "members": ["x"]}) == (400, "name")
        assert refused("/ui/api/collections", {"name": "t", "members": ["x"], "seats": "two"}) == (
            400,
            "seats",
        )
        assert refused("/ui/api/onboard", {"endpoint": "nowhere", "models": ["m"]}) == (404, "endpoint")
        assert refused("/ui/api/onboard", {"endpoint": "x", "models": [], "mode": "full"}) == (400, "models")
        assert refused("/ui/api/keys", {"name": "bad name"}) == (400, "name")
        assert refused("/ui/api/keys", {"name": "k", "rate": "0"}) == (400, "rate")
        assert refused("/ui/api/login", {"name": "login_password", "value": "short"}) == (400, "value")
        assert refused("/ui/api/settings", {"name": "allowed_hosts", "value": "a/b"}) == (400, "value")
        listed = client.get("/ui/api/settings").json()
        assert listed["keys"] == [] and listed["settings"]["allowed_hosts"] == []
        assert client.get("/ui/api/collections").json()["collections"] == []
        bad_json = client.post(
            "/ui/api/keys", content=b"{nope", headers={**headers, "content-type": "application/json"}
        )
        assert bad_json.status_code == 400 and "malformed JSON" in bad_json.json()["error"]["message"]


def test_the_login_holds_when_the_server_is_exposed(home: Path) -> None:
    with live_server(home, acting_as="0.0.0.0") as server, httpx.Client(base_url=server.url) as client:
        # No password set yet: nothing opens, and the login page says how to set one.
        page = client.get("/collections")
        assert page.status_code == 303 and page.headers["location"] == "/login?next=/collections"
        assert "settings set login_password" in client.get("/login").text
        assert client.get("/ui/api/endpoints").status_code == 401
        for path in PAGES:
            assert client.get(path).status_code == 303, path

        set_setting(home, "login_password", "correct horse")
        csrf = client.cookies[auth.CSRF_COOKIE]
        wrong = client.post("/login", data={"password": "wrong password", "csrf": csrf, "next": "/ask"})
        assert wrong.status_code == 401 and "not right" in wrong.text
        assert auth.SESSION_COOKIE not in client.cookies
        no_token = client.post("/login", data={"password": "correct horse", "next": "/ask"})
        assert no_token.status_code == 403 and auth.SESSION_COOKIE not in client.cookies

        right = client.post("/login", data={"password": "correct horse", "csrf": csrf, "next": "/ask"})
        assert right.status_code == 303 and right.headers["location"] == "/ask"
        cookie = right.headers["set-cookie"].lower()
        assert "httponly" in cookie and "samesite=strict" in cookie and "secure" not in cookie
        for path in PAGES:
            assert client.get(path).status_code == 200, path
        assert client.get("/ui/api/endpoints").status_code == 200
        # A forged or altered session opens nothing.
        forged = httpx.Client(
            base_url=server.url, cookies={auth.SESSION_COOKIE: "b3duZXJ8OTk5OTk5OTk5OXx4.00"}
        )
        assert forged.get("/ui/api/endpoints").status_code == 401
        # A password change ends every session.
        set_setting(home, "login_password", "another horse")
        assert client.get("/ui/api/endpoints").status_code == 401

        # Attempts are limited per address, right password or not.
        statuses = [
            client.post("/login", data={"password": "guess", "csrf": csrf}).status_code for _ in range(6)
        ]
        assert 429 in statuses
        limited = client.post("/login", data={"password": "another horse", "csrf": csrf})
        assert limited.status_code == 429 and "too many" in limited.text
        assert password_set(home)


def test_the_login_is_asked_on_loopback_when_the_settings_name_one(home: Path) -> None:
    with live_server(home) as server, httpx.Client(base_url=server.url) as client:
        assert client.get("/models").status_code == 200
        set_setting(home, "login_user", "ann")
        set_setting(home, "login_password", "correct horse")
        assert client.get("/models").status_code == 303
        csrf = client.cookies[auth.CSRF_COOKIE]
        nameless = client.post("/login", data={"user": "bob", "password": "correct horse", "csrf": csrf})
        assert nameless.status_code == 401
        named = client.post("/login", data={"user": "ann", "password": "correct horse", "csrf": csrf})
        assert named.status_code == 303
        assert "Sign out ann" in client.get("/models").text


def test_sign_in_with_openrouter_stores_the_key_like_a_pasted_one(
    home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with FakeAuthServer() as fake, live_server(home) as server, httpx.Client(base_url=server.url) as client:
        monkeypatch.setenv("BENCHWARMERS_SIGNIN_OPENROUTER_URL", fake.url)
        client.get("/endpoints")
        start = client.get("/signin/openrouter")
        assert start.status_code == 303 and start.headers["location"].startswith(fake.url + "/auth?")
        assert "samesite=lax" in start.headers["set-cookie"].lower()
        back = httpx.get(start.headers["location"])
        assert back.status_code == 302
        callback = client.get(back.headers["location"].removeprefix(server.url))
        assert callback.status_code == 200 and 'http-equiv="refresh"' in callback.text
        finish_path = callback.text.split("url=", 1)[1].split('"', 1)[0].replace("&amp;", "&")
        finished = client.get(finish_path)
        assert (
            finished.status_code == 303 and finished.headers["location"] == "/endpoints?signed_in=openrouter"
        )

        assert len(fake.issued) == 1
        assert keys.endpoint_key("openrouter") == fake.issued[0]
        stored = json.loads((tmp_path / "llm" / "keys.json").read_text())
        assert stored["openrouter"] == fake.issued[0]
        assert fake.issued[0] not in "".join(
            p.read_text(errors="ignore") for p in home.rglob("*") if p.is_file()
        )
        listed = client.get("/ui/api/endpoints").json()["endpoints"]
        assert [(e["name"], e["base_url"], e["key"]) for e in listed] == [
            ("openrouter", "https://openrouter.ai/api/v1", "keys.json")
        ]
        # The same code again (a replay) is refused by the provider, and nothing changes.
        again = client.get(finish_path)
        assert again.status_code in (400, 502)
        assert keys.endpoint_key("openrouter") == fake.issued[0]


def test_a_sign_in_not_started_here_is_refused(home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    with FakeAuthServer() as fake, live_server(home) as server, httpx.Client(base_url=server.url) as client:
        monkeypatch.setenv("BENCHWARMERS_SIGNIN_OPENROUTER_URL", fake.url)
        answer = client.get("/signin/openrouter/finish", params={"state": "s", "code": "c"})
        assert answer.status_code == 400 and "not started here" in answer.text
        assert client.get("/signin/nowhere").status_code == 404
        assert fake.issued == [] and client.get("/ui/api/endpoints").json()["endpoints"] == []


def password_set(home: Path) -> bool:
    async def read() -> bool:
        async with Core.open(home=home) as core:
            return bool((await core.admin.setting("login_password")).value)

    return asyncio.run(read())
