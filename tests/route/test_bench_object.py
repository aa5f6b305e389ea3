"""A route-mode turn's `bench` object, as the server sends it in every
format a turn can be asked in, reads strictly into the typed `RouteBench`
(`formats/bench_json.py`): the call id the headers name, the member, who
failed over before it."""

from __future__ import annotations

import json
from typing import Any

import httpx

from benchwarmers.calls.health import FAILING_AFTER
from benchwarmers.formats.bench_json import read_route
from benchwarmers.testing.fake_provider import FakeProvider
from benchwarmers.testing.script import FakeError, FakeModel
from benchwarmers.types import RouteBench

AGENTS = {"agents": {"members": ["alpha", "beta"]}}
HELLO = [{"role": "user", "content": "hello"}]


def _sse(text: str) -> list[dict[str, Any]]:
    return [
        json.loads(line[len("data: ") :])
        for line in text.splitlines()
        if line.startswith("data: ") and line != "data: [DONE]"
    ]


def test_every_route_reply_carries_a_bench_object_that_reads_back(
    route_server: Any, fake_provider: FakeProvider
) -> None:
    members = [
        ("openai", FakeModel("alpha", answer="alpha answers")),
        ("anthropic", FakeModel("beta", answer="beta answers")),
    ]
    with route_server(members, AGENTS) as server, httpx.Client(base_url=server.url, timeout=30) as http:
        fake_provider.models["alpha"].error = FakeError(500, "alpha broke")
        found: list[tuple[RouteBench, str]] = []

        # A conversation each, so each turn starts on alpha and fails over.
        whole = http.post(
            "/v1/chat/completions",
            json={"model": "bench/agents:route", "messages": HELLO},
            headers={"x-bench-conversation": "one"},
        )
        found.append((read_route(whole.json()["bench"]), whole.headers["x-bench-call"]))

        streamed = http.post(
            "/v1/chat/completions",
            json={"model": "bench/agents:route", "messages": HELLO, "stream": True},
            headers={"x-bench-conversation": "two"},
        )
        last = [chunk for chunk in _sse(streamed.text) if "bench" in chunk][-1]
        found.append((read_route(last["bench"]), streamed.headers["x-bench-call"]))

        message = http.post(
            "/v1/messages",
            json={"model": "bench/agents:route", "max_tokens": 64, "messages": HELLO},
            headers={"x-bench-conversation": "three"},
        )
        found.append((read_route(message.json()["bench"]), message.headers["x-bench-call"]))

        for turn, (bench, call) in enumerate(found):
            assert (bench.collection, bench.alias, bench.call) == ("agents", "beta", call)
            if turn >= FAILING_AFTER:  # alpha failed that many times in a row: now tried last
                assert not bench.failover
                continue
            (failed,) = bench.failover
            assert (failed.alias, failed.status) == ("alpha", "error")


def test_an_agents_own_session_header_keys_its_conversation(
    route_server: Any, fake_provider: FakeProvider
) -> None:
    """Issue 40, item 12: Claude Code's `x-claude-code-session-id` and
    Codex's `session_id` header key the conversation (source "client"), so
    a session keeps its member whatever its first message; the
    `x-bench-conversation` header still comes first."""
    members = [("openai", FakeModel("alpha", answer="a")), ("anthropic", FakeModel("beta", answer="b"))]
    with route_server(members, AGENTS) as server, httpx.Client(base_url=server.url, timeout=30) as http:

        def key(path: str, first: str, **headers: str) -> str:
            body = {"model": "bench/agents:route", "max_tokens": 64}
            body["messages"] = [{"role": "user", "content": first}]
            return read_route(http.post(path, json=body, headers=headers).json()["bench"]).conversation

        claude = key("/v1/messages", "hello", **{"x-claude-code-session-id": "s-1"})
        assert claude.startswith("client:")
        assert key("/v1/messages", "another opening", **{"x-claude-code-session-id": "s-1"}) == claude
        assert key("/v1/messages", "hello", **{"x-claude-code-session-id": "s-2"}) != claude
        codex = key("/v1/chat/completions", "hello", session_id="s-1")
        assert codex.startswith("client:") and key("/v1/chat/completions", "other", session_id="s-1") == codex
        given = key(
            "/v1/messages", "hello", **{"x-claude-code-session-id": "s-1", "x-bench-conversation": "c"}
        )
        assert given.startswith("header:")
