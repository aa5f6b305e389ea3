"""Gateway keys: made, listed, revoked; sent four ways; scoped; rate-limited;
required beyond loopback; never stored."""

from __future__ import annotations

import time
import uuid
from datetime import UTC, datetime, timedelta
from pathlib import Path

import httpx
import pytest
from sqlalchemy import select

from benchwarmers.errors import Conflict, NotFound, UserError
from benchwarmers.identity.keys import (
    create_key,
    hash_secret,
    keys_by_hash,
    list_keys,
    revoke_key,
    rotate_key,
)
from benchwarmers.identity.scope import OWNER, Identity, may_call
from benchwarmers.runtime import REDIS_URL_ENV, Runtime
from benchwarmers.store.schema import GatewayKey
from benchwarmers.store.settings import REQUIRE_KEY
from benchwarmers.testing.live_server import LiveServer
from tests.waiting import wait_for

from .conftest import new_key, run, setting

CALLER = "/bench/probe/caller"


async def test_create_list_revoke(runtime: Runtime) -> None:
    info, secret = await create_key(
        runtime.store, "laptop", collections=("bench/trio:merged",), requests_per_minute=5
    )
    assert secret.startswith("bw-") and len(secret) > 40
    assert info.collections == ("trio",) and info.requests_per_minute == 5 and info.active
    assert secret.startswith(info.prefix) and len(info.prefix) < len(secret) // 3
    (listed,) = await list_keys(runtime.store)
    assert listed.name == "laptop" and listed.active
    revoked = await revoke_key(runtime.store, "laptop")
    assert not revoked.active
    assert not (await list_keys(runtime.store))[0].active


async def test_key_mistakes_are_user_errors(runtime: Runtime) -> None:
    await create_key(runtime.store, "one")
    with pytest.raises(Conflict):
        await create_key(runtime.store, "one")
    with pytest.raises(NotFound):
        await revoke_key(runtime.store, "nobody")
    with pytest.raises(UserError):
        await create_key(runtime.store, "has space")
    with pytest.raises(UserError):
        await create_key(runtime.store, "zero", requests_per_minute=0)


async def test_a_revoked_name_can_be_reused_and_the_old_key_stays_known(runtime: Runtime) -> None:
    _, first = await create_key(runtime.store, "ci")
    await revoke_key(runtime.store, "ci")
    _, second = await create_key(runtime.store, "ci")
    assert first != second
    listed = await list_keys(runtime.store)
    assert [(k.name, k.active) for k in listed] == [("ci", True), ("ci", False)]
    known = await keys_by_hash(runtime.store)
    assert not known[hash_secret(first)].active and known[hash_secret(second)].active
    await revoke_key(runtime.store, "ci")  # the name reaches the new key, not the retired one
    await create_key(runtime.store, "ci")
    assert [k.active for k in await list_keys(runtime.store)] == [True, False, False]


async def test_a_long_name_reused_still_fits_its_column(runtime: Runtime) -> None:
    """The retired row's name is cut to make room for its mark (PostgreSQL
    enforces the width); it still reads as the start of the old name."""
    name = "n" * 64
    await create_key(runtime.store, name)
    await revoke_key(runtime.store, name)
    await create_key(runtime.store, name)
    async with runtime.store.read() as session:
        stored = set((await session.scalars(select(GatewayKey.name))).all())
    (retired_name,) = stored - {name}
    assert name in stored and len(retired_name) == 64 and retired_name.startswith("n" * 60)
    listed = {k.active: k.name for k in await list_keys(runtime.store)}
    assert listed[True] == name and name.startswith(listed[False])


async def test_the_secret_is_never_stored(home: Path, runtime: Runtime) -> None:
    _, secret = await create_key(runtime.store, "hidden")
    await runtime.store.close()  # flush the WAL into the files we read
    stored = b"".join(p.read_bytes() for p in home.iterdir() if p.is_file())
    assert secret.encode() not in stored
    assert secret[10:30].encode() not in stored
    assert hash_secret(secret).encode() in stored


def test_caller_may_call() -> None:
    scoped = Identity("laptop", frozenset({"trio"}))
    assert may_call(scoped, "trio")
    assert may_call(scoped, "bench/trio:merged")
    assert not may_call(scoped, "duo")
    assert may_call(Identity("all"), "duo")
    assert may_call(OWNER, "anything")


# ------------------------------------------------------- against the server


@pytest.mark.parametrize(
    ("headers", "query"),
    [
        ({"authorization": "Bearer {key}"}, ""),
        ({"x-api-key": "{key}"}, ""),
        ({"x-goog-api-key": "{key}"}, ""),
        ({}, "?key={key}"),
        ({"authorization": "Bearer placeholder", "x-api-key": "{key}"}, ""),
    ],
    ids=["bearer", "x-api-key", "x-goog-api-key", "query", "second-of-two"],
)
def test_each_way_of_sending_a_key(home: Path, start, client: httpx.Client, headers, query) -> None:
    secret = new_key(home, "laptop", collections=("trio",))
    server = start(acting_as="0.0.0.0")
    sent = {k: v.format(key=secret) for k, v in headers.items()}
    reply = client.get(f"{server.url}{CALLER}{query.format(key=secret)}", headers=sent)
    assert reply.status_code == 200
    assert reply.json() == {"name": "laptop", "owner": False, "may": True}


def test_keys_are_required_beyond_loopback(home: Path, start, client: httpx.Client) -> None:
    server = start(acting_as="0.0.0.0")
    missing = client.get(f"{server.url}{CALLER}")
    assert missing.status_code == 401
    assert "key add" in missing.json()["error"]["message"]
    assert missing.headers["www-authenticate"] == "Bearer"
    wrong = client.get(f"{server.url}{CALLER}", headers={"authorization": "Bearer bw-nothing"})
    assert wrong.status_code == 401
    assert "not valid" in wrong.json()["error"]["message"]
    assert client.get(f"{server.url}/healthz").status_code == 200  # not a gateway path


def test_keys_are_required_when_settings_say_so(home: Path, start, client: httpx.Client) -> None:
    setting(home, REQUIRE_KEY, True)
    server = start()
    assert client.get(f"{server.url}{CALLER}").status_code == 401
    secret = new_key(home, "me")
    server.app.state.guard.forget()
    assert client.get(f"{server.url}{CALLER}", headers={"x-api-key": secret}).status_code == 200


def test_on_loopback_without_keys_the_owner_calls(server, client: httpx.Client) -> None:
    reply = client.get(f"{server.url}{CALLER}", headers={"authorization": "Bearer sk-anything"})
    assert reply.json() == {"name": "owner", "owner": True, "may": True}


def test_a_key_narrows_the_caller_even_where_not_required(home: Path, start, client: httpx.Client) -> None:
    secret = new_key(home, "narrow", collections=("trio",))
    server = start()
    sent = {"authorization": f"Bearer {secret}"}
    assert client.get(f"{server.url}{CALLER}?collection=trio", headers=sent).json()["may"] is True
    assert client.get(f"{server.url}{CALLER}?collection=bench/duo", headers=sent).json()["may"] is False


def revoke(home: Path, name: str) -> None:
    async def work() -> None:
        async with Runtime.open(home) as rt:
            await revoke_key(rt.store, name)

    run(work())


@pytest.mark.parametrize("acting_as", ["0.0.0.0", "127.0.0.1"], ids=["exposed", "loopback"])
def test_a_revoked_key_is_refused(home: Path, start, client: httpx.Client, acting_as: str) -> None:
    """Even on loopback without required keys, where an unknown key is the
    owner: `key revoke` promises its holder is refused from now on."""
    secret = new_key(home, "gone")
    server = start(acting_as=acting_as)
    sent = {"authorization": f"Bearer {secret}"}
    assert client.get(f"{server.url}{CALLER}", headers=sent).json()["name"] == "gone"
    revoke(home, "gone")
    server.app.state.guard.forget()  # what the key cache's few seconds do
    refused = client.get(f"{server.url}{CALLER}", headers=sent)
    assert refused.status_code == 401 and refused.headers["www-authenticate"] == "Bearer"
    assert "'gone' was revoked" in refused.json()["error"]["message"]
    unknown = client.get(f"{server.url}{CALLER}", headers={"authorization": "Bearer sk-anything"})
    assert unknown.status_code == (401 if acting_as == "0.0.0.0" else 200)


def test_a_revoked_key_is_refused_in_each_api_format(home: Path, start, client: httpx.Client) -> None:
    secret = new_key(home, "gone")
    revoke(home, "gone")
    server = start()
    anthropic = client.post(f"{server.url}/v1/messages/probe/raw", json={}, headers={"x-api-key": secret})
    assert anthropic.status_code == 401 and anthropic.json()["type"] == "error"
    assert "revoked" in anthropic.json()["error"]["message"]
    bearer = {"authorization": f"Bearer {secret}"}
    ollama = client.post(f"{server.url}/api/probe/raw", json={}, headers=bearer)
    assert ollama.status_code == 401 and "revoked" in ollama.json()["error"]


def test_a_revoked_key_beside_an_active_one_is_not_held_against_it(
    home: Path, start, client: httpx.Client
) -> None:
    old = new_key(home, "old")
    revoke(home, "old")
    current = new_key(home, "current")
    server = start()
    sent = {"authorization": f"Bearer {old}", "x-api-key": current}
    assert client.get(f"{server.url}{CALLER}", headers=sent).json()["name"] == "current"


def test_a_replaced_key_stays_revoked(home: Path, start, client: httpx.Client) -> None:
    old = new_key(home, "laptop")
    revoke(home, "laptop")
    new = new_key(home, "laptop")
    server = start()
    assert client.get(f"{server.url}{CALLER}", headers={"x-api-key": old}).status_code == 401
    assert client.get(f"{server.url}{CALLER}", headers={"x-api-key": new}).json()["name"] == "laptop"


def test_rate_limit_is_429_with_retry_after(home: Path, start, client: httpx.Client) -> None:
    secret = new_key(home, "slow", rate=2)
    server = start(acting_as="0.0.0.0")
    sent = {"x-api-key": secret}
    assert [client.get(f"{server.url}{CALLER}", headers=sent).status_code for _ in range(2)] == [200, 200]
    refused = client.get(f"{server.url}{CALLER}", headers=sent)
    assert refused.status_code == 429
    assert 59 <= int(refused.headers["retry-after"]) <= 60
    assert "2 requests per minute" in refused.json()["error"]["message"]


def test_without_redis_each_process_counts_its_own_rate(
    home: Path, start, client: httpx.Client, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv(REDIS_URL_ENV, raising=False)
    secret = new_key(home, "local", rate=1)
    first, second = start(), start()
    sent = {"x-api-key": secret}
    assert client.get(f"{first.url}{CALLER}", headers=sent).status_code == 200
    assert client.get(f"{second.url}{CALLER}", headers=sent).status_code == 200
    assert client.get(f"{first.url}{CALLER}", headers=sent).status_code == 429


def test_replicas_on_one_redis_share_a_keys_rate(
    home: Path, start, client: httpx.Client, shared_redis: str
) -> None:
    secret = new_key(home, shared_redis, rate=3)
    first, second = start(), start()
    sent = {"authorization": f"Bearer {secret}"}
    statuses = [client.get(f"{server.url}{CALLER}", headers=sent).status_code for server in (first, second)]
    statuses.append(client.get(f"{first.url}{CALLER}", headers=sent).status_code)
    assert statuses == [200, 200, 200]
    refused = client.get(f"{second.url}{CALLER}", headers=sent)
    assert refused.status_code == 429
    assert 58 <= int(refused.headers["retry-after"]) <= 60
    assert "3 requests per minute" in refused.json()["error"]["message"]


# ------------------------------------------------- expiry and rotation


def later(server: LiveServer, seconds: float) -> None:
    """Move the guard's clock on: what waiting that long would do."""
    server.app.state.guard.clock = lambda: time.time() + seconds


def rotate(home: Path, name: str, grace: float, database_url: str | None = None) -> str:
    async def work() -> str:
        async with Runtime.open(home, database_url=database_url) as rt:
            _new, _old, secret = await rotate_key(rt.store, name, grace)
            return secret

    return run(work())


def test_an_expired_key_is_refused_in_each_api_format_saying_when(
    home: Path, start, client: httpx.Client
) -> None:
    async def make() -> str:
        async with Runtime.open(home) as rt:
            expires = datetime.now(UTC) + timedelta(days=1)
            _, secret = await create_key(rt.store, "trial", expires_at=expires)
            return secret

    secret = run(make())
    server = start()
    bearer = {"authorization": f"Bearer {secret}"}
    assert client.get(f"{server.url}{CALLER}", headers=bearer).json()["name"] == "trial"
    later(server, 2 * 86400)
    bench = client.get(f"{server.url}{CALLER}", headers=bearer)
    assert bench.status_code == 401 and bench.headers["www-authenticate"] == "Bearer"
    assert "the gateway key 'trial' expired on " in bench.json()["error"]["message"]
    anthropic = client.post(f"{server.url}/v1/messages/probe/raw", json={}, headers={"x-api-key": secret})
    assert anthropic.status_code == 401 and anthropic.json()["type"] == "error"
    assert "expired on" in anthropic.json()["error"]["message"]
    ollama = client.post(f"{server.url}/api/probe/raw", json={}, headers=bearer)
    assert ollama.status_code == 401 and "expired on" in ollama.json()["error"]
    gemini = client.post(f"{server.url}/v1beta/probe/raw?key={secret}", json={})
    assert gemini.status_code == 401 and "expired on" in gemini.json()["error"]["message"]
    for reply in (bench, anthropic, ollama, gemini):
        assert secret not in reply.text and secret[10:] not in reply.text


@pytest.mark.parametrize("database", ["sqlite", "postgresql"])
def test_a_rotated_secret_works_through_its_grace_on_every_worker_then_not(
    home: Path, start, client: httpx.Client, database: str, request: pytest.FixtureRequest
) -> None:
    """Two servers on one database stand for two workers or replicas; the
    rotation is made by a third process (the CLI's store). The new secret
    works on both at once (a `bw-` secret unknown to a cache reads the table
    again), the old one through the grace, and neither after it."""
    url = request.getfixturevalue("shared_postgres") if database == "postgresql" else None
    name = f"rot-{uuid.uuid4().hex[:8]}"

    async def make() -> str:
        async with Runtime.open(home, database_url=url) as rt:
            _, secret = await create_key(rt.store, name)
            return secret

    old = run(make())
    servers = [start(acting_as="0.0.0.0", database_url=url) for _ in range(2 if url else 1)]

    def caller(server: LiveServer, secret: str) -> httpx.Response:
        return client.get(f"{server.url}{CALLER}", headers={"authorization": f"Bearer {secret}"})

    assert all(caller(s, old).status_code == 200 for s in servers)
    new = rotate(home, name, 3600, database_url=url)
    for server in servers:
        assert wait_for(lambda s=server: caller(s, new).status_code == 200)  # well within a second
        assert caller(server, old).json()["name"] == name  # in its grace
        later(server, 2 * 3600)
        refused = caller(server, old)
        assert refused.status_code == 401 and f"the gateway key '{name}' was rotated on" in refused.text
        assert old not in refused.text and new not in refused.text
        assert caller(server, new).json()["name"] == name
