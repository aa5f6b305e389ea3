"""Route mode through the official `anthropic` client, sent the way Claude
Code sends it (streaming, system blocks with cache_control, metadata.user_id,
tools, tool_use/tool_result history, `?beta=true`), driven by members on an
OpenAI-compatible endpoint: the tool loop crosses formats both ways."""

from __future__ import annotations

import json
import uuid
from typing import Any

import anthropic
import pytest

from benchwarmers.testing.fake_provider import FakeProvider
from benchwarmers.testing.script import FakeModel, FakeToolCall
from tests.waiting import wait_for

from .route_support import call_row, rows

TOOLS: list[dict[str, Any]] = [
    {
        "name": "Bash",
        "description": "Run a shell command in the user's repository.",
        "input_schema": {
            "type": "object",
            "properties": {"command": {"type": "string"}},
            "required": ["command"],
        },
    },
    {
        "name": "Read",
        "description": "Read a file.",
        "input_schema": {"type": "object", "properties": {"file_path": {"type": "string"}}},
        "cache_control": {"type": "ephemeral"},
    },
]
SYSTEM: list[dict[str, Any]] = [
    {"type": "text", "text": "You are Claude Code, Anthropic's official CLI for Claude."},
    {"type": "text", "text": "Work in /repo.", "cache_control": {"type": "ephemeral"}},
]
AGENTS = {"agents": {"members": ["alpha", "beta"], "purpose": "drives coding agents"}}


def user_id() -> str:
    return f"user_{'ab' * 32}_account__session_{uuid.uuid4()}"


def claude_code(server: Any) -> anthropic.Anthropic:
    """ANTHROPIC_BASE_URL=<server>, ANTHROPIC_AUTH_TOKEN=<gateway key>."""
    return anthropic.Anthropic(base_url=server.url, auth_token="gateway-key", max_retries=0)


def turn(
    client: anthropic.Anthropic, messages: list[dict[str, Any]], session: str
) -> tuple[Any, list[str], Any]:
    """One streamed turn: the final message, the event types seen, the headers."""
    with client.messages.stream(
        model="bench/agents:route",
        max_tokens=32000,
        system=SYSTEM,  # type: ignore[arg-type]
        tools=TOOLS,  # type: ignore[arg-type]
        messages=messages,  # type: ignore[arg-type]
        metadata={"user_id": session},
        extra_query={"beta": "true"},
    ) as stream:
        events = [event.type for event in stream]
        return stream.get_final_message(), events, stream.response.headers


def as_history(message: Any) -> dict[str, Any]:
    return {
        "role": "assistant",
        "content": [block.model_dump(exclude_none=True) for block in message.content],
    }


def agent_members() -> list[tuple[Any, FakeModel]]:
    return [
        (
            "openai",
            FakeModel(
                "alpha",
                answer="The repository holds two files.",
                tool_calls=[FakeToolCall("Bash", {"command": "ls -la"})],
            ),
        ),
        (
            "openai",
            FakeModel("beta", answer="beta here", tool_calls=[FakeToolCall("Read", {"file_path": "x"})]),
        ),
    ]


def test_claude_code_tool_loop_on_an_openai_member(route_server: Any, fake_provider: FakeProvider) -> None:
    session = user_id()
    # A member that writes at most 8192 tokens still drives Claude Code, which asks for 32000.
    with route_server(agent_members(), AGENTS, facts={"alpha": {"output_limit": 8192}}) as server:
        client = claude_code(server)
        messages: list[dict[str, Any]] = [
            {"role": "user", "content": [{"type": "text", "text": "What is in this repo?"}]}
        ]

        first, events, headers = turn(client, messages, session)
        assert first.stop_reason == "tool_use"
        (tool_use,) = [b for b in first.content if b.type == "tool_use"]
        assert tool_use.name == "Bash" and tool_use.input == {"command": "ls -la"}
        assert tool_use.id.startswith("call_")  # the OpenAI member's own id, kept
        # The arguments streamed as pieces, the way Claude Code shows them.
        assert events.count("input_json") >= 2
        assert headers["x-bench-member"] == "alpha"
        asked = fake_provider.last("alpha")
        assert asked.api == "openai" and asked.stream
        assert asked.max_tokens == 8192
        assert asked.tools == ["Bash", "Read"]
        assert asked.system.startswith("You are Claude Code") and "Work in /repo." in asked.system

        messages += [
            as_history(first),
            {
                "role": "user",
                "content": [
                    {"type": "tool_result", "tool_use_id": tool_use.id, "content": "README.md\nmain.py"},
                ],
            },
        ]
        second, _events, headers2 = turn(client, messages, session)
        assert second.stop_reason == "end_turn"
        assert [b.type for b in second.content] == ["text"]
        assert second.content[0].text == "The repository holds two files."
        # The OpenAI member got an assistant tool_calls message and a tool message, ids kept.
        asked = fake_provider.last("alpha")
        (sent_call,) = asked.messages[-2].tool_calls
        assert (sent_call["id"], sent_call["name"]) == (tool_use.id, "Bash")
        assert json.loads(sent_call["arguments"]) == {"command": "ls -la"}
        assert asked.messages[-1].tool_results[0]["id"] == tool_use.id
        assert asked.messages[-1].tool_results[0]["content"] == "README.md\nmain.py"

        # Every turn is a route call in the log, named by the header, one conversation.
        calls = [headers["x-bench-call"], headers2["x-bench-call"]]
        assert len(set(calls)) == 2
        logged = [call_row(server.home, c) for c in calls]
        assert {(r["kind"], r["alias"], r["status"]) for r in logged} == {("route", "alpha", "ok")}
        assert logged[0]["conversation"] == logged[1]["conversation"]
        assert logged[0]["conversation"].startswith("client:")
        assert wait_for(lambda: "tool calls: Bash" in call_row(server.home, calls[0])["task"])
        assert call_row(server.home, calls[1])["task"] == "route turn (bench/agents, short)"
        assert fake_provider.calls["beta"] == 0
        (conversation,) = rows(server.home, "SELECT * FROM conversations")
        turns = rows(
            server.home,
            "SELECT count(*) AS n FROM calls WHERE kind = 'route' AND status = 'ok' AND conversation = ?",
            conversation["key"],
        )
        assert (conversation["alias"], turns[0]["n"]) == ("alpha", 2)


def test_whole_reply_carries_the_call_in_body_and_header(route_server: Any) -> None:
    with route_server(agent_members(), AGENTS) as server:
        raw = claude_code(server).messages.with_raw_response.create(
            model="bench/agents:route",
            max_tokens=1024,
            tools=TOOLS,  # type: ignore[arg-type]
            messages=[{"role": "user", "content": "hi"}],
        )
        message = raw.parse()
        bench = message.model_extra["bench"]
        assert bench["call"] == raw.headers["x-bench-call"]
        assert bench["alias"] == "alpha" and bench["mode"] == "route"
        assert message.stop_reason == "tool_use"
        assert message.content[0].input == {"command": "ls -la"}  # type: ignore[union-attr]
        assert call_row(server.home, bench["call"])["kind"] == "route"


def test_a_failure_after_the_first_byte_ends_the_stream_with_an_error_event(
    route_server: Any, fake_provider: FakeProvider
) -> None:
    members = [
        ("openai", FakeModel("alpha", answer="one two three four five six", cut_after=2, cut_mode="abort")),
        ("openai", FakeModel("beta", answer="never asked")),
    ]
    with route_server(members, AGENTS) as server:
        client = claude_code(server)
        seen: list[str] = []
        with pytest.raises(anthropic.APIStatusError) as raised:  # noqa: SIM117
            with client.messages.stream(
                model="bench/agents:route", max_tokens=100, messages=[{"role": "user", "content": "count"}]
            ) as stream:
                for event in stream:
                    seen.append(event.type)
        assert "text" in seen  # bytes had reached the agent: no failover possible
        assert "failed mid-reply" in str(raised.value)
        assert fake_provider.calls["beta"] == 0
        (row,) = wait_for(lambda: rows(server.home, "SELECT * FROM calls WHERE alias = 'alpha'"))
        assert row["status"] == "error" and row["kind"] == "route"


def test_an_agent_that_hangs_up_mid_turn_still_leaves_the_call_recorded(
    route_server: Any, fake_provider: FakeProvider
) -> None:
    words = " ".join(f"w{i}" for i in range(40))
    members = [("openai", FakeModel("alpha", answer=words, tokens_per_second=40))]
    with route_server(members, {"agents": {"members": ["alpha"]}}) as server:
        with claude_code(server).messages.stream(
            model="bench/agents:route", max_tokens=100, messages=[{"role": "user", "content": "talk"}]
        ) as stream:
            call = stream.response.headers["x-bench-call"]
            next(event for event in stream if event.type == "text")
        # The stream is closed: the member's call is cancelled, as a hang-up, and logged.
        row = wait_for(lambda: rows(server.home, "SELECT * FROM calls WHERE id = ?", call))
        assert row and row[0]["status"] == "cancelled" and row[0]["kind"] == "route"
        assert row[0]["error"] == "stopped: the client hung up before the reply"
