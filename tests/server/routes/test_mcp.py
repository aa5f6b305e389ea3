"""`POST /mcp` and `POST /v1/mcp` (JSON-RPC over streamable HTTP) under
random bytes, random JSON-RPC envelopes and random tool arguments: never a
5xx; a 4xx is a JSON-RPC error object; a tool's own mistake is a tool
error (`isError`), not a transport failure."""

from __future__ import annotations

import json
from typing import Any

import httpx
import pytest
from hypothesis import given
from hypothesis import strategies as st

from .hardening_support import FUZZ, Bench, as_bytes, check_reply, perturbed, rows

PATHS = st.sampled_from(["/mcp", "/v1/mcp"])
HEADERS = {
    "accept": "application/json, text/event-stream",
    "content-type": "application/json",
    "mcp-protocol-version": "2025-06-18",
}
TOOLS = {
    "ask": {"collection": "bench/no-such", "prompt": "hi", "merged": False, "with": ["x"], "system": ""},
    "verdict": {"call": "c_none", "useful": True, "note": "n"},
    "pending_verdicts": {"calls": ["c_none"], "transcript_path": "/nonexistent/t.jsonl"},
    "list_collections": {},
}


def messages(reply: httpx.Response) -> list[dict[str, Any]]:
    """The JSON-RPC messages of a reply, whether JSON or SSE."""
    if reply.headers.get("content-type", "").startswith("text/event-stream"):
        return [json.loads(line[5:]) for line in reply.text.split("\n") if line.startswith("data:")]
    return [reply.json()] if reply.content else []


def check_rpc(reply: httpx.Response, path: str, sent: Any) -> None:
    check_reply(reply, path, sent)
    if reply.status_code < 300:
        for message in messages(reply):
            assert message.get("jsonrpc") == "2.0", (sent, message)
            assert ("result" in message) != ("error" in message), (sent, message)


@FUZZ
@given(path=PATHS, content=st.binary(max_size=80))
def test_bytes(client: httpx.Client, path: str, content: bytes) -> None:
    check_rpc(client.post(path, content=content, headers=HEADERS), path, content)


@FUZZ
@given(
    path=PATHS,
    envelope=perturbed({"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {}}),
)
def test_envelopes(client: httpx.Client, path: str, envelope: Any) -> None:
    check_rpc(client.post(path, content=as_bytes(envelope), headers=HEADERS), path, envelope)


@FUZZ
@given(
    path=PATHS,
    tool=st.sampled_from(sorted(TOOLS)) | st.text(max_size=10),
    data=st.data(),
)
def test_tool_arguments(client: httpx.Client, path: str, tool: str, data: st.DataObject) -> None:
    arguments = data.draw(perturbed(TOOLS.get(tool, {"x": 1})))
    call = {
        "jsonrpc": "2.0",
        "id": 7,
        "method": "tools/call",
        "params": {"name": tool, "arguments": arguments},
    }
    reply = client.post(path, content=as_bytes(call), headers=HEADERS)
    check_rpc(reply, path, call)


@FUZZ
@given(
    path=PATHS,
    accept=st.sampled_from(["", "text/html", "application/json", "text/event-stream", "*/*"]),
    content_type=st.sampled_from(
        ["", "text/plain", "application/json; charset=latin-1", "multipart/form-data"]
    ),
    method=st.sampled_from(["GET", "POST", "DELETE", "PUT"]),
)
def test_headers_and_methods(
    client: httpx.Client, path: str, accept: str, content_type: str, method: str
) -> None:
    headers = {"accept": accept, "content-type": content_type}
    body = as_bytes({"jsonrpc": "2.0", "id": 1, "method": "tools/list"})
    check_rpc(client.request(method, path, content=body, headers=headers), path, headers)


@pytest.mark.parametrize("path", ["/mcp", "/v1/mcp"])
def test_a_verdict_through_mcp_lands_once_among_junk(bench: Bench, client: httpx.Client, path: str) -> None:
    asked = client.post(
        "/v1/chat/completions", json={"model": "bench/duo", "messages": [{"role": "user", "content": "q"}]}
    )
    call = asked.json()["bench"]["seats"][0]["call"]
    junk = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "tools/call",
        "params": {"name": "verdict", "arguments": {"call": call, "useful": "maybe"}},
    }
    good = {
        "jsonrpc": "2.0",
        "id": 2,
        "method": "tools/call",
        "params": {"name": "verdict", "arguments": {"call": call, "useful": True, "note": path}},
    }
    for payload in (junk, good, junk, good, junk):
        check_rpc(client.post(path, content=as_bytes(payload), headers=HEADERS), path, payload)
    assert rows(bench.home, "SELECT useful, note FROM verdicts WHERE call_id = ?", call) == [
        {"useful": 1, "note": path}
    ]
