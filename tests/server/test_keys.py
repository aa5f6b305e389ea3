"""Gateway keys: made, listed, revoked; sent four ways; scoped; rate-limited;
required beyond loopback; never stored."""

from __future__ import annotations

from pathlib import Path

import httpx
import pytest

from benchwarmers.config.settings import REQUIRE_KEY
from benchwarmers.errors import Conflict, NotFound, UserError
from benchwarmers.runtime import Runtime
from benchwarmers.server.callers import OWNER, Caller, InProcessRate, caller_may_call
from benchwarmers.server.gatewaykeys import create_key, hash_secret, list_keys, revoke_key

from .conftest import new_key, setting

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


async def test_a_revoked_name_can_be_reused(runtime: Runtime) -> None:
    _, first = await create_key(runtime.store, "ci")
    await revoke_key(runtime.store, "ci")
    _, second = await create_key(runtime.store, "ci")
    assert first != second
    assert [k.active for k in await list_keys(runtime.store)] == [True]


async def test_the_secret_is_never_stored(home: Path, runtime: Runtime) -> None:
    _, secret = await create_key(runtime.store, "hidden")
    await runtime.store.close()  # flush the WAL into the files we read
    stored = b"".join(p.read_bytes() for p in home.iterdir() if p.is_file())
    assert secret.encode() not in stored
    assert secret[10:30].encode() not in stored
    assert hash_secret(secret).encode() in stored


def test_caller_may_call() -> None:
    scoped = Caller("laptop", frozenset({"trio"}))
    assert caller_may_call(scoped, "trio")
    assert caller_may_call(scoped, "bench/trio:merged")
    assert not caller_may_call(scoped, "duo")
    assert caller_may_call(Caller("all"), "duo")
    assert caller_may_call(OWNER, "anything")


async def test_in_process_rate() -> None:
    rate = InProcessRate()
    assert await rate("k", 2) == 0
    assert await rate("k", 2) == 0
    wait = await rate("k", 2)
    assert 59 < wait <= 60
    assert await rate("other", 2) == 0


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


def test_a_revoked_key_is_refused(home: Path, start, client: httpx.Client) -> None:
    secret = new_key(home, "gone")
    server = start(acting_as="0.0.0.0")
    sent = {"authorization": f"Bearer {secret}"}
    assert client.get(f"{server.url}{CALLER}", headers=sent).status_code == 200

    async def revoke() -> None:
        async with Runtime.open(home) as rt:
            await revoke_key(rt.store, "gone")

    import asyncio

    asyncio.run(revoke())
    server.app.state.guard.forget()  # what the key cache's few seconds do
    assert client.get(f"{server.url}{CALLER}", headers=sent).status_code == 401


def test_rate_limit_is_429_with_retry_after(home: Path, start, client: httpx.Client) -> None:
    secret = new_key(home, "slow", rate=2)
    server = start(acting_as="0.0.0.0")
    sent = {"x-api-key": secret}
    assert [client.get(f"{server.url}{CALLER}", headers=sent).status_code for _ in range(2)] == [200, 200]
    refused = client.get(f"{server.url}{CALLER}", headers=sent)
    assert refused.status_code == 429
    assert 59 <= int(refused.headers["retry-after"]) <= 60
    assert "2 requests per minute" in refused.json()["error"]["message"]


def test_the_rate_check_can_be_swapped(home: Path, start, client: httpx.Client) -> None:
    secret = new_key(home, "shared", rate=1000)
    server = start(acting_as="0.0.0.0")
    seen: list[tuple[str, int]] = []

    async def shared_counter(key: str, per_minute: int) -> float:
        seen.append((key, per_minute))
        return 7.2

    server.app.state.guard.rate_check = shared_counter
    refused = client.get(f"{server.url}{CALLER}", headers={"x-api-key": secret})
    assert refused.status_code == 429 and refused.headers["retry-after"] == "8"
    assert seen == [("shared", 1000)]
