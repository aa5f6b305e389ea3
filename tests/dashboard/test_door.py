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
from benchwarmers.core import Core, login
from benchwarmers.dashboard import auth
from benchwarmers.testing.fake_oauth import FakeAuthServer
from benchwarmers.testing.live_server import live_server

from .conftest import OWNER_PASSWORD, log_in, set_setting, sign_in

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
        # Changing a set password asks for the current one first (issue 40, item 21).
        assert refused("/ui/api/login", {"name": "login_password", "value": "short"}) == (400, "current")
        short = {"name": "login_password", "value": "short", "current": OWNER_PASSWORD}
        assert refused("/ui/api/login", short) == (400, "value")
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


# ------------------------------------------------- issue 36: the attacks


@pytest.mark.parametrize("where", ["require_key on loopback", "exposed"])
def test_a_keyless_script_gets_nothing_from_the_dashboard_where_keys_are_required(
    home: Path, where: str
) -> None:
    """Attack 4: on 3fd40b0 a script with no key and no login read a CSRF token
    from a page, minted a gateway key (and read its secret), ran a panel and
    set the login password, on a loopback server with `require_key` on."""
    exposed = where == "exposed"
    if not exposed:
        set_setting(home, "require_key", "true")
    with (
        live_server(home, acting_as="0.0.0.0" if exposed else "127.0.0.1") as server,
        httpx.Client(base_url=server.url) as client,
    ):
        client.get("/login")
        headers = {"x-csrf-token": client.cookies[auth.CSRF_COOKIE]}
        minted = client.post("/ui/api/keys", json={"name": "stolen"}, headers=headers)
        assert minted.status_code == 401 and "secret" not in minted.json()
        asked = client.post("/ui/api/ask", json={"collection": "duo", "prompt": "hi"}, headers=headers)
        assert asked.status_code == 401
        for path in ("/ui/api/login", "/ui/api/settings"):
            locked_out = client.post(
                path, json={"name": "login_password", "value": "the attacker's"}, headers=headers
            )
            assert locked_out.status_code == 401, path
        assert client.get("/ui/api/settings").status_code == 401
        assert client.get("/settings").status_code == 303
    assert not password_set(home)
    assert gateway_key_names(home) == []


def test_a_first_run_asks_for_a_login_before_it_makes_keys_or_changes_settings(home: Path) -> None:
    with live_server(home) as server, httpx.Client(base_url=server.url) as client:
        page = client.get("/settings")
        assert page.status_code == 200 and "Set a login password" in page.text
        headers = {"x-csrf-token": client.cookies[auth.CSRF_COOKIE]}
        minted = client.post("/ui/api/keys", json={"name": "laptop"}, headers=headers)
        assert minted.status_code == 403 and "set a login password first" in minted.json()["error"]["message"]
        hosts = client.post(
            "/ui/api/settings", json={"name": "allowed_hosts", "value": "a.example"}, headers=headers
        )
        assert hosts.status_code == 403
        assert client.post("/ui/api/scheduler", json={"enabled": True}, headers=headers).status_code == 403
        assert gateway_key_names(home) == []
        # The page's own way out: set the login, then sign in.
        set_login = client.post(
            "/ui/api/login", json={"name": "login_password", "value": "correct horse"}, headers=headers
        )
        assert set_login.status_code == 200, set_login.text
        assert client.post("/ui/api/keys", json={"name": "laptop"}, headers=headers).status_code == 401
        signed = client.post("/login", data={"password": "correct horse", "csrf": headers["x-csrf-token"]})
        assert signed.status_code == 303
        made = client.post("/ui/api/keys", json={"name": "laptop"}, headers=headers)
        assert made.status_code == 200 and made.json()["secret"].startswith("bw-")
        assert "Set a login password" not in client.get("/settings").text


def test_a_session_copied_before_logout_opens_nothing_after_it(home: Path) -> None:
    """Attack 7: on 3fd40b0 a cookie copied before logout still worked for its 12 hours."""
    with live_server(home) as server, httpx.Client(base_url=server.url) as owner:
        sign_in(owner, home)
        copied = owner.cookies[auth.SESSION_COOKIE]
        with httpx.Client(base_url=server.url, cookies={auth.SESSION_COOKIE: copied}) as thief:
            assert thief.get("/ui/api/endpoints").status_code == 200
            out = owner.post("/logout", data={"csrf": owner.cookies[auth.CSRF_COOKIE]})
            assert out.status_code == 303
            assert thief.get("/ui/api/endpoints").status_code == 401
            assert thief.get("/models").status_code == 303


def test_sign_out_everywhere_and_a_new_password_end_every_session(home: Path) -> None:
    with (
        live_server(home) as server,
        httpx.Client(base_url=server.url) as laptop,
        httpx.Client(base_url=server.url) as phone,
    ):
        sign_in(laptop, home)
        log_in(phone)
        assert phone.get("/ui/api/endpoints").status_code == 200
        assert "Sign out everywhere" in laptop.get("/settings").text
        everywhere = laptop.post("/logout/everywhere", data={"csrf": laptop.cookies[auth.CSRF_COOKIE]})
        assert everywhere.status_code == 303
        assert phone.get("/ui/api/endpoints").status_code == 401
        assert laptop.get("/ui/api/endpoints").status_code == 401

        log_in(laptop)
        log_in(phone)
        changed = laptop.post(
            "/ui/api/login",
            json={"name": "login_password", "value": "another horse", "current": OWNER_PASSWORD},
            headers={"x-csrf-token": laptop.cookies[auth.CSRF_COOKIE]},
        )
        assert changed.status_code == 200
        assert phone.get("/ui/api/endpoints").status_code == 401


def test_logout_on_one_replica_ends_the_session_on_the_other(home: Path) -> None:
    """Replicas (and `--workers`) share the store the sessions live in; a
    session is read from it on every request, so there is no cache to outlive it."""
    with (
        live_server(home) as first,
        live_server(home) as second,
        httpx.Client(base_url=first.url) as owner,
    ):
        sign_in(owner, home)
        cookies = {
            auth.SESSION_COOKIE: owner.cookies[auth.SESSION_COOKIE],
            auth.CSRF_COOKIE: owner.cookies[auth.CSRF_COOKIE],
        }
        with httpx.Client(base_url=second.url, cookies=cookies) as elsewhere:
            assert elsewhere.get("/ui/api/endpoints").status_code == 200
            assert elsewhere.post("/logout", data={"csrf": cookies[auth.CSRF_COOKIE]}).status_code == 303
        assert owner.get("/ui/api/endpoints").status_code == 401


def test_wrong_passwords_from_other_addresses_do_not_lock_the_owner_out(home: Path) -> None:
    """Attack 8: on 3fd40b0 wrong passwords from a few addresses used up the
    global budget and the owner's right password got 429."""
    set_setting(home, "login_password", "correct horse")
    wrong = 0
    with live_server(home) as server:
        for last in range(2, 12):  # ten other addresses, each as many wrong guesses as it is let
            transport = httpx.HTTPTransport(local_address=f"127.0.0.{last}")
            with httpx.Client(base_url=server.url, transport=transport) as attacker:
                attacker.get("/login")
                csrf = attacker.cookies[auth.CSRF_COOKIE]
                for _ in range(login.ATTEMPTS_PER_CLIENT + 2):
                    status = attacker.post("/login", data={"password": "guess", "csrf": csrf}).status_code
                    assert status in (401, 429)
                    wrong += status == 401
        assert wrong >= login.FAILURES_IN_ALL  # the failures in all are at their limit
        with httpx.Client(base_url=server.url) as owner:
            owner.get("/login")
            right = owner.post(
                "/login", data={"password": "correct horse", "csrf": owner.cookies[auth.CSRF_COOKIE]}
            )
            assert right.status_code == 303 and auth.SESSION_COOKIE in owner.cookies
        # An address that failed lately waits while the failures in all are over.
        transport = httpx.HTTPTransport(local_address="127.0.0.2")
        with httpx.Client(base_url=server.url, transport=transport) as attacker:
            attacker.get("/login")
            again = attacker.post(
                "/login", data={"password": "correct horse", "csrf": attacker.cookies[auth.CSRF_COOKIE]}
            )
            assert again.status_code == 429


def test_the_sign_in_pages_carry_the_pages_headers(home: Path) -> None:
    """Lesser: on 3fd40b0 `/signin/*` pages had no CSP and no frame headers."""
    with live_server(home) as server, httpx.Client(base_url=server.url) as client:
        for path in (
            "/signin/openrouter/callback?code=c&state=s",
            "/signin/nowhere",
            "/signin/openrouter/callback",
        ):
            page = client.get(path)
            assert "frame-ancestors 'none'" in page.headers["content-security-policy"], path
            assert (
                page.headers["x-frame-options"] == "DENY" and page.headers["referrer-policy"] == "no-referrer"
            )


def gateway_key_names(home: Path) -> list[str]:
    async def read() -> list[str]:
        async with Core.open(home=home) as core:
            return [k.name for k in await core.admin.keys()]

    return asyncio.run(read())
