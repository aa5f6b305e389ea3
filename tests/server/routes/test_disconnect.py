"""A client that hangs up mid-stream loses no record: on every streaming
route, the seats that had finished are in the call log as they finished,
and the seats (or the route turn) still running end in the log too."""

from __future__ import annotations

import json
from typing import Any

import httpx
import pytest

from tests.waiting import wait_for

from .hardening_support import MCP_HEADERS, Bench, rows

LAGGING_PROMPT = "hang up on me"
# path, body of a panel stream whose fast seat (alpha) is done before the slow one.
PANEL_STREAMS: dict[str, tuple[str, dict[str, Any]]] = {
    "openai": (
        "/v1/chat/completions",
        {"model": "bench/lagging", "stream": True, "messages": [{"role": "user", "content": LAGGING_PROMPT}]},
    ),
    "responses": ("/v1/responses", {"model": "bench/lagging", "stream": True, "input": LAGGING_PROMPT}),
    "anthropic": (
        "/v1/messages",
        {
            "model": "bench/lagging",
            "stream": True,
            "max_tokens": 50,
            "messages": [{"role": "user", "content": LAGGING_PROMPT}],
        },
    ),
    "gemini": (
        "/v1beta/models/bench/lagging:streamGenerateContent?alt=sse",
        {"contents": [{"role": "user", "parts": [{"text": LAGGING_PROMPT}]}]},
    ),
    "ollama-chat": (
        "/api/chat",
        {"model": "bench/lagging", "stream": True, "messages": [{"role": "user", "content": LAGGING_PROMPT}]},
    ),
    "ollama-generate": (
        "/api/generate",
        {"model": "bench/lagging", "stream": True, "prompt": LAGGING_PROMPT},
    ),
}
ROUTE_STREAMS: dict[str, tuple[str, dict[str, Any]]] = {
    "openai": (
        "/v1/chat/completions",
        {
            "model": "bench/only-trickle:route",
            "stream": True,
            "messages": [{"role": "user", "content": "go"}],
        },
    ),
    "anthropic": (
        "/v1/messages",
        {
            "model": "bench/only-trickle:route",
            "stream": True,
            "max_tokens": 50,
            "messages": [{"role": "user", "content": "go"}],
        },
    ),
}


def new_calls(home: Any, known: set[str], kind: str) -> list[dict[str, Any]]:
    found = rows(home, "SELECT id, alias, status, kind, ask_id FROM calls WHERE kind = ?", kind)
    return [row for row in found if row["id"] not in known]


def hang_up_when(
    client: httpx.Client, path: str, body: dict[str, Any], marker: bytes, **headers: str
) -> bytes:
    """Stream the reply until `marker` arrives, then close the connection."""
    seen = b""
    with client.stream("POST", path, json=body, headers=headers) as reply:
        assert reply.status_code == 200, reply.read()[:300]
        for chunk in reply.iter_raw():
            seen += chunk
            if marker in seen:
                break
    assert marker in seen, seen[-300:]
    return seen


@pytest.mark.parametrize("name", sorted(PANEL_STREAMS))
def test_a_panel_stream_hung_up_keeps_its_seats(bench: Bench, name: str) -> None:
    known = {row["id"] for row in rows(bench.home, "SELECT id FROM calls")}
    path, body = PANEL_STREAMS[name]
    with httpx.Client(base_url=bench.url, timeout=30) as client:
        with bench.slow_held():
            # Alpha's status line follows its text once it is done (the stream shows text as written).
            hang_up_when(client, path, body, b"_(ok, ")
            # The fast seat finished before the hang-up: it is in the log as it finished,
            # while the slow one is still held.
            done = wait_for(lambda: new_calls(bench.home, known, "seat"))
            assert [(r["alias"], r["status"]) for r in done] == [("alpha", "ok")]
        # The slow seat was still running: it ends in the log too, in the same ask.
        both = wait_for(lambda: len(new_calls(bench.home, known, "seat")) == 2)
        assert both, new_calls(bench.home, known, "seat")
        seats = new_calls(bench.home, known, "seat")
        assert {r["alias"] for r in seats} == {"alpha", "slow"} and len({r["ask_id"] for r in seats}) == 1
        assert client.get("/healthz").status_code == 200


@pytest.mark.parametrize("name", sorted(ROUTE_STREAMS))
def test_a_route_stream_hung_up_logs_its_turn(bench: Bench, name: str) -> None:
    known = {row["id"] for row in rows(bench.home, "SELECT id FROM calls")}
    path, body = ROUTE_STREAMS[name]
    with httpx.Client(base_url=bench.url, timeout=30) as client:
        hang_up_when(client, path, body, b"word")
        turn = wait_for(lambda: new_calls(bench.home, known, "route"))
        assert [r["alias"] for r in turn] == ["trickle"], turn
        assert turn[0]["status"] in ("ok", "error"), turn


@pytest.mark.parametrize("path", ["/mcp", "/v1/mcp"])
def test_an_mcp_ask_hung_up_keeps_its_seats(bench: Bench, path: str) -> None:
    known = {row["id"] for row in rows(bench.home, "SELECT id FROM calls")}
    call = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "tools/call",
        "params": {"name": "ask", "arguments": {"collection": "lagging", "prompt": LAGGING_PROMPT}},
    }
    with httpx.Client(base_url=bench.url, timeout=30) as client:
        with client.stream(
            "POST",
            path,
            content=json.dumps(call),
            headers={**MCP_HEADERS, "content-type": "application/json"},
        ) as reply:
            assert reply.status_code == 200
        # Hung up as soon as the reply started; the panel runs on.
        both = wait_for(lambda: len(new_calls(bench.home, known, "seat")) == 2)
        assert both, new_calls(bench.home, known, "seat")
        seats = new_calls(bench.home, known, "seat")
        assert {(r["alias"], r["status"]) for r in seats} >= {("alpha", "ok")}
