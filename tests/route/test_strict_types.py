"""Route mode's replies in every inbound format, whole and streamed, with
text and with tool calls, validated under the official SDK's own types in
strict mode (`benchwarmers.testing.sdk_types`): a reply an agent's SDK
would reject, or build with a field missing, fails here."""

from __future__ import annotations

from typing import Any

import httpx
import pytest

from benchwarmers.testing.fake_provider import FakeProvider
from benchwarmers.testing.script import FakeModel, FakeToolCall
from benchwarmers.testing.sdk_types import check, check_all, ndjson_lines, sse_events

AGENTS = {"agents": {"members": ["alpha"]}}
ROUTE = "bench/agents:route"
SCHEMA = {"type": "object", "properties": {"path": {"type": "string"}}}
USER = "read the notes"


def bodies() -> dict[str, tuple[str, str, str, dict[str, Any], str]]:
    """(whole kind, stream kind, path, body with tools, framing) by format."""
    return {
        "chat": (
            "chat",
            "chat_chunk",
            "/v1/chat/completions",
            {
                "model": ROUTE,
                "messages": [{"role": "user", "content": USER}],
                "tools": [{"type": "function", "function": {"name": "read", "parameters": SCHEMA}}],
            },
            "sse",
        ),
        "anthropic": (
            "anthropic",
            "anthropic_event",
            "/v1/messages",
            {
                "model": ROUTE,
                "max_tokens": 1000,
                "messages": [{"role": "user", "content": USER}],
                "tools": [{"name": "read", "input_schema": SCHEMA}],
            },
            "sse",
        ),
        "responses": (
            "responses",
            "responses_event",
            "/v1/responses",
            {
                "model": ROUTE,
                "input": USER,
                "tools": [{"type": "function", "name": "read", "parameters": SCHEMA, "strict": False}],
            },
            "sse",
        ),
        "responses-custom": (
            "responses",
            "responses_event",
            "/v1/responses",
            {
                "model": ROUTE,
                "input": USER,
                "tools": [
                    {"type": "custom", "name": "read", "format": {"type": "text"}},
                    {"type": "web_search", "external_web_access": False},
                ],
            },
            "sse",
        ),
    }


def _events(raw: bytes, framing: str) -> list[Any]:
    return list(sse_events(raw) if framing == "sse" else ndjson_lines(raw))


@pytest.mark.parametrize("calls_tools", [False, True], ids=["text", "tool-call"])
@pytest.mark.parametrize("name", list(bodies()))
@pytest.mark.parametrize("member", ["openai", "anthropic"])
def test_route_replies_fit_the_sdk_types(
    route_server: Any, fake_provider: FakeProvider, name: str, member: str, calls_tools: bool
) -> None:
    calls = [FakeToolCall("read", {"path": "notes.txt"})] if calls_tools else []
    members = [(member, FakeModel("alpha", answer="the notes say hello", tool_calls=calls))]
    whole, streamed, path, body, framing = bodies()[name]
    with route_server(members, AGENTS) as server:
        reply = httpx.post(server.url + path, json=body, timeout=30)
        assert reply.status_code == 200, reply.text
        check(whole, reply.json())
        stream = httpx.post(server.url + path, json={**body, "stream": True}, timeout=30)
        assert stream.status_code == 200, stream.text
        events = _events(stream.content, framing)
    check_all(streamed, events)
    assert ("notes.txt" in stream.text) == calls_tools


def test_a_responses_stream_cut_mid_reply_fits_the_sdk_types(route_server: Any) -> None:
    """`response.failed` too: what Codex reads when a member breaks off."""
    members = [
        ("openai", FakeModel("alpha", answer="one two three four five", cut_after=2, cut_mode="abort"))
    ]
    _whole, streamed, path, body, framing = bodies()["responses"]
    with route_server(members, AGENTS) as server:
        stream = httpx.post(server.url + path, json={**body, "stream": True}, timeout=30)
    events = check_all(streamed, _events(stream.content, framing))
    assert events[-1].type == "response.failed" and "mid-reply" in events[-1].response.error.message
