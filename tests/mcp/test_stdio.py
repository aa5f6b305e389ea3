"""`benchwarmers mcp` over stdio, spawned by the official SDK's stdio
client, calling the live server over HTTP: the same tools, the same
records, the same key scope."""

from __future__ import annotations

import threading
import time
from pathlib import Path
from typing import Any

from benchwarmers.mcp.transcript import TRANSCRIPT_DIRS_ENV
from benchwarmers.testing.fake_provider import FakeProvider
from tests.serving import free_port

from .mcp_support import (
    TRIO,
    call_rows,
    cancel_an_ask,
    make_key,
    sample_transcript,
    seat_calls,
    slow_trio,
    stdio_session,
    tool_text,
    trio_models,
)


async def test_list_ask_verdict_and_pending_over_stdio(
    bench_server: Any, fake_provider: FakeProvider, tmp_path: Path
) -> None:
    # The slow seat answers once progress has said two seats are in (an order of events).
    release = threading.Event()
    with bench_server(trio_models(hold=release)) as server:
        env = {"BENCHWARMERS_MCP_PROGRESS_SECONDS": "0.2", TRANSCRIPT_DIRS_ENV: str(tmp_path)}
        async with stdio_session(server.url, tmp_path / "stderr.log", **env) as client:
            tools = {tool.name for tool in (await client.list_tools()).tools}
            assert tools == {"list_collections", "ask", "verdict", "pending_verdicts"}
            listing = await client.call_tool("list_collections", {})
            assert [c["id"] for c in listing.structured_content["collections"]] == ["bench/trio"]

            notes: list[tuple[float, str | None]] = []

            async def on_progress(progress: float, total: float | None, message: str | None) -> None:
                notes.append((time.monotonic(), message))
                if len(notes) >= 2 and "2 seats in" in (message or ""):
                    release.set()

            arguments = {"collection": "trio", "prompt": "hi", "system": "be brief"}
            asked = await client.call_tool("ask", arguments, progress_callback=on_progress)
            finished = time.monotonic()
            assert not asked.is_error, tool_text(asked)
            # The slow seat was held: progress came meanwhile, saying who was in.
            assert len(notes) >= 2 and all(at < finished for at, _ in notes)
            messages = [message or "" for _, message in notes]
            assert any("2 seats in" in m and "fast (ok)" in m and "mid (ok)" in m for m in messages), messages
            bench = asked.structured_content["bench"]
            text = tool_text(asked)
            for seat in bench["seats"]:
                assert f"{seat['seat']} · {seat['alias']} · ok" in text and f"call {seat['call']}" in text
            fast, mid, slow = seat_calls(bench)
            assert {call_rows(server.home)[c]["alias"] for c in (fast, mid, slow)} == {"fast", "mid", "slow"}
            # The system prompt and the question crossed the HTTP hop to every seat.
            assert {(r.model, r.system, r.prompt) for r in fake_provider.requests} == {
                (alias, "be brief", "hi") for alias in ("fast", "mid", "slow")
            }

            judged = await client.call_tool("verdict", {"call": mid, "useful": False, "note": "vague"})
            assert judged.structured_content["recorded"] == {
                **judged.structured_content["recorded"],
                "alias": "mid",
                "useful": False,
                "note": "vague",
            }
            transcript = sample_transcript(tmp_path / "session.jsonl", text)
            pending = await client.call_tool("pending_verdicts", {"transcript_path": str(transcript)})
            assert pending.structured_content["pending"] == [fast, slow]


async def test_a_key_limited_to_one_collection_holds_over_stdio(bench_server: Any, tmp_path: Path) -> None:
    collections = {**TRIO, "solo": {"members": ["fast"]}}
    with bench_server(collections=collections) as server:
        key = make_key(server.home, "solo-only", ("solo",))
        async with stdio_session(server.url, tmp_path / "stderr.log", key=key) as client:
            listing = await client.call_tool("list_collections", {})
            assert [c["id"] for c in listing.structured_content["collections"]] == ["bench/solo"]
            refused = await client.call_tool("ask", {"collection": "trio", "prompt": "hi"})
            assert refused.is_error and "403" in tool_text(refused) and "bench/trio" in tool_text(refused)
            allowed = await client.call_tool("ask", {"collection": "solo", "prompt": "hi"})
            assert not allowed.is_error, tool_text(allowed)


async def test_no_server_is_a_clear_tool_error(tmp_path: Path) -> None:
    url = f"http://127.0.0.1:{free_port()}"
    async with stdio_session(url, tmp_path / "stderr.log") as client:
        tools = {tool.name for tool in (await client.list_tools()).tools}
        result = await client.call_tool("ask", {"collection": "trio", "prompt": "hi"})
    assert "ask" in tools
    assert result.is_error
    assert tool_text(result).endswith(
        f"no server at {url}; start one with `benchwarmers serve`, or set BENCHWARMERS_URL to yours"
    )


async def test_a_tool_call_cancelled_over_stdio_stops_the_panel(
    bench_server: Any, fake_provider: FakeProvider, tmp_path: Path
) -> None:
    """The client's cancel reaches `benchwarmers mcp`, which closes its panel
    stream: the server stops the panel as for any client hanging up."""
    with bench_server(slow_trio()) as server:
        async with stdio_session(server.url, tmp_path / "stderr.log") as client:
            await cancel_an_ask(client, server, fake_provider, after=1.5)
