"""Helpers for the MCP tests: a bench of fake models registered in a data
folder, gateway keys, and the official SDK's MCP client over streamable
HTTP."""

from __future__ import annotations

import asyncio
import json
import os
import sqlite3
import sys
import threading
from collections.abc import AsyncIterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import httpx2
from mcp.client.stdio import stdio_client

from benchwarmers.calls.caller import HUNG_UP
from benchwarmers.identity import keys as gatewaykeys
from benchwarmers.runtime import Runtime
from benchwarmers.store.collections import add_collection
from benchwarmers.store.endpoints import add_endpoint
from benchwarmers.store.models import add_model
from benchwarmers.testing.fake_provider import FakeProvider
from benchwarmers.testing.live_server import settle_logs
from benchwarmers.testing.script import FakeModel
from benchwarmers.testing.store_template import copy_migrated_store
from mcp import Client, StdioServerParameters
from tests.waiting import wait_for

TRIO = {"trio": {"members": ["fast", "mid", "slow"], "purpose": "three opinions"}}


def trio_models(slow_ttfb: float = 0.15, hold: threading.Event | None = None) -> list[FakeModel]:
    """Three seats; `hold` keeps the slow one answering until the test sets it."""
    return [
        FakeModel("fast", answer="fast answer", ttfb=0.02),
        FakeModel("mid", answer="mid answer", ttfb=0.05),
        FakeModel("slow", answer="slow answer", ttfb=slow_ttfb, hold=hold),
    ]


def run_sync(work: Any) -> Any:
    """Run a coroutine on its own loop in its own thread (tests may already run a loop)."""
    with ThreadPoolExecutor(1) as pool:
        return pool.submit(asyncio.run, work).result()


async def register(
    home: Path, fake: FakeProvider, models: list[FakeModel], collections: dict[str, dict[str, Any]]
) -> None:
    home.mkdir(parents=True, exist_ok=True)
    copy_migrated_store(home)  # migrated once per worker, not per test
    async with Runtime.open(home) as runtime:
        await add_endpoint(runtime.store, "fake", fake.openai_base, "openai", needs_key=False)
        for model in models:
            fake.add(model)
            await add_model(runtime.store, model.served, "fake", model.served)
        for name, fields in collections.items():
            await add_collection(runtime.store, name, **fields)


def make_key(home: Path, name: str, collections: tuple[str, ...] = (), per_minute: int | None = None) -> str:
    async def create() -> str:
        async with Runtime.open(home) as runtime:
            _info, secret = await gatewaykeys.create_key(
                runtime.store, name, collections=collections, requests_per_minute=per_minute
            )
            return secret

    secret: str = run_sync(create())
    return secret


@asynccontextmanager
async def http_client(url: str, key: str = "", **options: Any) -> AsyncIterator[Client]:
    """The SDK's client over streamable HTTP, with a gateway key if given."""
    from mcp.client.streamable_http import streamable_http_client

    headers = {"authorization": f"Bearer {key}"} if key else {}
    async with (
        httpx2.AsyncClient(headers=headers, timeout=httpx2.Timeout(30.0)) as http,
        Client(streamable_http_client(url, http_client=http), **options) as client,
    ):
        yield client


def tool_text(result: Any) -> str:
    """The text of a tool result (one text block)."""
    return "".join(block.text for block in result.content if getattr(block, "type", "") == "text")


def seat_calls(bench: dict[str, Any]) -> list[str]:
    return [seat["call"] for seat in bench["seats"]]


def call_rows(home: Path) -> dict[str, dict[str, Any]]:
    """The call log, read straight from the SQLite file."""
    settle_logs()  # replies do not wait for their calls' commit
    with sqlite3.connect(home / "benchwarmers.db") as db:
        db.row_factory = sqlite3.Row
        return {row["id"]: dict(row) for row in db.execute("SELECT * FROM calls")}


def sample_transcript(path: Path, ask_result_text: str) -> Path:
    """A Claude Code session transcript (JSONL) in which the agent called
    the `ask` tool and got `ask_result_text` back."""
    lines = [
        {"type": "user", "sessionId": "s1", "message": {"role": "user", "content": "Is this fix right?"}},
        {
            "type": "assistant",
            "sessionId": "s1",
            "message": {
                "role": "assistant",
                "content": [
                    {
                        "type": "tool_use",
                        "id": "toolu_01",
                        "name": "mcp__plugin_benchwarmers_benchwarmers__ask",
                        "input": {"collection": "trio", "prompt": "Is this fix right?"},
                    }
                ],
            },
        },
        {
            "type": "user",
            "sessionId": "s1",
            "message": {
                "role": "user",
                "content": [
                    {
                        "type": "tool_result",
                        "tool_use_id": "toolu_01",
                        "content": [{"type": "text", "text": ask_result_text}],
                    }
                ],
            },
        },
        {
            "type": "assistant",
            "sessionId": "s1",
            "message": {"role": "assistant", "content": "Seat 1 is right."},
        },
    ]
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    return path


@asynccontextmanager
async def stdio_session(url: str, errlog: Path, key: str = "", **env: str) -> AsyncIterator[Client]:
    """`benchwarmers mcp` spawned by the SDK's stdio client, pointed at `url`."""
    command = Path(sys.executable).parent / "benchwarmers"
    environment = {"BENCHWARMERS_URL": url, **env}
    if os.environ.get("PYTHONPATH"):  # the SDK passes on only a few variables: this one picks the code run
        environment.setdefault("PYTHONPATH", os.environ["PYTHONPATH"])
    if key:
        environment["BENCHWARMERS_KEY"] = key
    parameters = StdioServerParameters(command=str(command), args=["mcp"], env=environment)
    with errlog.open("w") as log:
        async with Client(stdio_client(parameters, errlog=log)) as client:
            yield client


# The slow seat writes a word every 0.1 s for 20 s: a stop lands long before its end.
SLOW_ANSWER = " ".join(f"word{n}" for n in range(200))


def slow_trio() -> list[FakeModel]:
    return [*trio_models()[:2], FakeModel("slow", answer=SLOW_ANSWER, tokens_per_second=10)]


def stopped_like_stop(server: Any, fake_provider: FakeProvider) -> None:
    """The slow seat was cancelled upstream (the fake provider saw its
    connection close) and logged `cancelled`, the client's hang-up its
    error; the seats that were in stay as they answered."""
    assert wait_for(lambda: ("closed", "slow") in fake_provider.timeline)

    def three() -> list[dict[str, Any]] | None:
        seats = [r for r in call_rows(server.home).values() if r["kind"] == "seat"]
        return seats if len(seats) == 3 else None

    seats = {r["alias"]: r for r in wait_for(three)}
    assert {alias: r["status"] for alias, r in seats.items()} == {
        "fast": "ok",
        "mid": "ok",
        "slow": "cancelled",
    }
    assert seats["slow"]["error"] == HUNG_UP
    assert ("answered", "slow") not in fake_provider.timeline


async def cancel_an_ask(client: Client, server: Any, fake_provider: FakeProvider, after: float) -> None:
    """Ask the slow trio, cancel the tool call after `after` seconds (the
    client's own cancel), and check the panel stopped as Stop stops one;
    the session goes on: its next tool call is answered."""
    with anyio.move_on_after(after) as waited:
        await client.call_tool("ask", {"collection": "trio", "prompt": "hi"})
    assert waited.cancelled_caught
    # Waited in a thread: the client's loop sends its cancel meanwhile.
    await asyncio.to_thread(stopped_like_stop, server, fake_provider)
    listing = await client.call_tool("list_collections", {})
    assert not listing.is_error
