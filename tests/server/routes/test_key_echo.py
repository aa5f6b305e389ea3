"""An endpoint's key never travels back out: a provider's 401 that quotes
the key it was sent is scrubbed at the provider boundary, so the key is in
no reply of any format (streamed or not, MCP included) and not in
`calls.error`."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from pathlib import Path

import httpx
import pytest

from benchwarmers.providers.base import REDACTED
from benchwarmers.runtime import Runtime
from benchwarmers.store.collections import add_collection
from benchwarmers.store.endpoints import add_endpoint
from benchwarmers.store.models import add_model
from benchwarmers.testing import FakeModel, FakeProvider
from benchwarmers.testing.live_server import LiveServer, live_server

from .hardening_support import MCP_HEADERS, rows

RIGHT = "sk-right-0123456789"
WRONG = "sk-LEAKED-secret-9876543210"
APIS = ("openai", "anthropic", "gemini", "ollama")
MESSAGES = [{"role": "user", "content": "hi"}]
# Every inbound format, as (path, body, streamed body).
ASKS = [
    ("/v1/chat/completions", {"model": "bench/leaky", "messages": MESSAGES}),
    ("/v1/responses", {"model": "bench/leaky", "input": "hi"}),
    ("/v1/messages", {"model": "bench/leaky", "max_tokens": 20, "messages": MESSAGES}),
    (
        "/v1beta/models/bench/leaky:generateContent",
        {"contents": [{"role": "user", "parts": [{"text": "hi"}]}]},
    ),
    ("/api/chat", {"model": "bench/leaky", "messages": MESSAGES}),
    ("/api/generate", {"model": "bench/leaky", "prompt": "hi"}),
]


@pytest.fixture(autouse=True)
def _keys(monkeypatch: pytest.MonkeyPatch) -> None:
    """Read at each call (the suite's own fixture clears them per test)."""
    monkeypatch.setenv("BENCHWARMERS_KEY_GOOD", RIGHT)
    for api in APIS:
        monkeypatch.setenv(f"BENCHWARMERS_KEY_BAD_{api.upper()}", WRONG)


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveServer]:
    home = tmp_path_factory.mktemp("home")
    with FakeProvider(key=RIGHT) as fake:
        _register(home, fake)
        with live_server(home) as live:
            yield live


def _register(home: Path, fake: FakeProvider) -> None:
    import asyncio

    async def work() -> None:
        async with Runtime.open(home) as runtime:
            store = runtime.store
            await add_endpoint(store, "good", fake.openai_base, "openai", needs_key=True)
            fake.add(FakeModel("fine", answer="fine says hi"))
            await add_model(store, "fine", "good", "fine")
            members = ["fine"]
            for api in APIS:
                await add_endpoint(store, f"bad-{api}", fake.base_for(api), api, needs_key=True)
                fake.add(FakeModel(f"m-{api}"))
                await add_model(store, f"bad-{api}", f"bad-{api}", f"m-{api}")
                members.append(f"bad-{api}")
            await add_collection(store, "leaky", members)

    asyncio.run(work())


@pytest.mark.parametrize("stream", [False, True], ids=["whole", "stream"])
@pytest.mark.parametrize(("path", "body"), ASKS, ids=[path for path, _ in ASKS])
def test_no_reply_of_any_format_carries_the_endpoint_key(
    server: LiveServer, path: str, body: dict[str, object], stream: bool
) -> None:
    if stream and path.startswith("/v1beta"):
        path = path.replace(":generateContent", ":streamGenerateContent")
    sent = {**body, "stream": stream} if not path.startswith("/v1beta") else body
    reply = httpx.post(server.url + path, json=sent, timeout=30)
    assert reply.status_code == 200, reply.text
    assert "fine says hi" in reply.text
    assert WRONG not in reply.text and WRONG[:12] not in reply.text


def test_mcp_ask_carries_no_endpoint_key(server: LiveServer) -> None:
    call = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "tools/call",
        "params": {"name": "ask", "arguments": {"collection": "leaky", "prompt": "hi", "merged": False}},
    }
    reply = httpx.post(server.url + "/mcp", json=call, headers=MCP_HEADERS, timeout=30)
    assert reply.status_code == 200, reply.text
    assert "fine says hi" in reply.text and WRONG not in reply.text


def test_the_call_log_keeps_the_refusal_without_the_key(
    server: LiveServer, counts: Callable[[str], None]
) -> None:
    httpx.post(server.url + ASKS[0][0], json=ASKS[0][1], timeout=30)
    failed = rows(server.home, "SELECT alias, error FROM calls WHERE alias LIKE 'bad-%'")
    assert {row["alias"] for row in failed} == {f"bad-{api}" for api in APIS}
    for row in failed:
        assert WRONG not in row["error"] and REDACTED in row["error"], row
    counts(f"key echo: {len(failed)} refused seats logged, 0 carry the key")
    dumped = json.dumps(rows(server.home, "SELECT * FROM calls"))
    assert WRONG not in dumped
