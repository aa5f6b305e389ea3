"""`GET/POST /bench/settings`: the guard's settings changed over HTTP by the
owner (or an unscoped key), refused to a scoped key, checked with clear 400s,
in force at once, and the login password never shown, not even as a hash."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from benchwarmers.identity.passwords import verify_password
from benchwarmers.runtime import Runtime
from benchwarmers.server.routes import bench_ops, health
from benchwarmers.server.routes import settings as settings_routes
from benchwarmers.store.settings import LOGIN_PASSWORD_HASH, Settings
from benchwarmers.testing.live_server import LiveServer

from .conftest import new_key

ROUTES = (health.router, settings_routes.router)


@pytest.fixture
def settings_server(home: Path) -> Iterator[LiveServer]:
    server = LiveServer(home, routers=ROUTES).start()
    yield server
    server.stop()


@pytest.fixture(scope="module")
def untouched_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveServer]:
    """One server for the tests whose changes are all refused."""
    server = LiveServer(tmp_path_factory.mktemp("home"), routers=ROUTES).start()
    yield server
    server.stop()


def stored_hash(home: Path) -> str:
    async def work() -> str:
        async with Runtime.open(home) as rt:
            return await Settings(rt.store).get(LOGIN_PASSWORD_HASH)

    return asyncio.run(work())


def test_the_owner_lists_and_changes_settings_and_they_apply_at_once(
    home: Path, settings_server: LiveServer, client: httpx.Client
) -> None:
    url = f"{settings_server.url}/bench/settings"
    listed = client.get(url)
    assert listed.status_code == 200, listed.text
    rows = {row["name"]: row for row in listed.json()["settings"]}
    assert set(rows) == {
        "scheduler",
        "allowed_hosts",
        "require_key",
        "max_body_mb",
        "max_panels",
        "max_panels_per_key",
        "stream_stall_seconds",
        "login_user",
        "login_password",
        "discover_dismissed",
    }
    assert rows["max_body_mb"] == {
        "name": "max_body_mb",
        "value": 20,
        "default": 20,
        "description": rows["max_body_mb"]["description"],
    }
    assert rows["login_password"]["value"] is False and "hash" not in listed.text

    named = {"host": f"bench.example.org:{settings_server.port}"}
    assert client.get(url, headers=named).status_code == 421  # not an allowed host yet
    hosts = client.post(url, json={"name": "allowed_hosts", "value": "Bench.example.org, other.example"})
    assert hosts.json()["setting"]["value"] == ["bench.example.org", "other.example"]
    assert client.get(url, headers=named).status_code == 200  # the guard re-read its policy at once

    assert client.post(url, json={"name": "scheduler", "value": True}).json()["setting"]["value"] is True

    small = client.post(url, json={"name": "max_body_mb", "value": "1"})
    assert small.status_code == 200 and small.json()["setting"]["value"] == 1
    too_big = client.post(url, json={"name": "login_user", "value": "x" * (2 * 1024 * 1024)})
    assert too_big.status_code == 413

    password = client.post(url, json={"name": "login_password", "value": "correct horse battery"})
    assert password.status_code == 200 and password.json()["setting"]["value"] is True
    stored = stored_hash(home)
    assert verify_password("correct horse battery", stored) and not verify_password("wrong guess!", stored)
    everything = client.get(url).text
    assert stored not in everything and "correct horse" not in everything and "scrypt" not in everything
    cleared = client.post(url, json={"name": "login_password", "value": ""})
    assert cleared.json()["setting"]["value"] is False and stored_hash(home) == ""


@pytest.mark.parametrize(
    ("body", "words"),
    [
        ({"name": "max_body_mb", "value": 0}, "at least 1"),
        ({"name": "max_body_mb", "value": "lots"}, "whole number"),
        ({"name": "require_key", "value": "maybe"}, "true or false"),
        ({"name": "allowed_hosts", "value": "https://bench.example.org/"}, "not a host name"),
        ({"name": "allowed_hosts", "value": "[1, 2]"}, "list of host names"),
        ({"name": "colour", "value": "blue"}, "no setting 'colour'"),
        ({"name": "login_password_hash", "value": "scrypt$1$1$1$AA==$AA=="}, "never shown or set directly"),
        ({"name": "login_password", "value": "short"}, "at least 8"),
        ({"name": "login_password", "value": 12345678}, "expected text"),
        ({"name": "max_body_mb"}, '"value"'),
        (["max_body_mb", 5], '"name"'),
    ],
)
def test_bad_changes_are_clear_400s(
    untouched_server: LiveServer, client: httpx.Client, body: object, words: str
) -> None:
    answer = client.post(f"{untouched_server.url}/bench/settings", json=body)
    assert answer.status_code == 400, answer.text
    assert words in answer.json()["error"]["message"]


def test_a_key_limited_to_some_collections_may_not_read_or_change_settings(
    home: Path, client: httpx.Client
) -> None:
    scoped = new_key(home, "scoped", collections=("trio",))
    admin = new_key(home, "admin")
    server = LiveServer(home, routers=ROUTES, acting_as="0.0.0.0").start()
    try:
        url = f"{server.url}/bench/settings"
        as_scoped = {"authorization": f"Bearer {scoped}"}
        assert client.get(url, headers=as_scoped).status_code == 403
        refused = client.post(url, headers=as_scoped, json={"name": "require_key", "value": False})
        assert refused.status_code == 403 and "limited to some collections" in refused.text
        assert client.get(url).status_code == 401  # exposed: no key, no settings
        as_admin = {"authorization": f"Bearer {admin}"}
        assert client.get(url, headers=as_admin).status_code == 200
        changed = client.post(url, headers=as_admin, json={"name": "max_body_mb", "value": 50})
        assert changed.status_code == 200 and changed.json()["setting"]["value"] == 50
    finally:
        server.stop()


def test_switching_the_scheduler_by_setting_takes_effect_at_once(home: Path, client: httpx.Client) -> None:
    routes = (*ROUTES, bench_ops.router)
    server = LiveServer(home, routers=routes).start()
    try:
        on = client.post(f"{server.url}/bench/settings", json={"name": "scheduler", "value": "on"})
        assert on.status_code == 200 and on.json()["setting"]["value"] is True
        status = client.get(f"{server.url}/bench/ops/scheduler").json()
        assert status["enabled"] is True and status["active"] is True
        client.post(f"{server.url}/bench/settings", json={"name": "scheduler", "value": False})
        assert client.get(f"{server.url}/bench/ops/scheduler").json()["active"] is False
    finally:
        server.stop()
