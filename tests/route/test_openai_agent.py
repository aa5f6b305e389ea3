"""Route mode through the official `openai` client, driven by members on a
Gemini and an Ollama endpoint: OpenAI `tool_calls`/`tool` messages become
`functionCall`/`functionResponse` parts and back, with ids that survive the
round trip though neither API sends any."""

from __future__ import annotations

import json
from typing import Any

import openai

from benchwarmers.testing.fake_provider import FakeProvider
from benchwarmers.testing.script import FakeModel, FakeToolCall

from .route_support import call_row, rows

TOOLS: list[dict[str, Any]] = [
    {
        "type": "function",
        "function": {
            "name": "read_file",
            "description": "Read a file of the project.",
            "parameters": {
                "type": "object",
                "properties": {"path": {"type": "string"}},
                "required": ["path"],
            },
        },
    }
]
AGENTS = {"agents": {"members": ["gem", "oll"], "purpose": "drives coding agents"}}


def members() -> list[tuple[Any, FakeModel]]:
    return [
        (
            "gemini",
            FakeModel(
                "gem",
                answer="The README says hello.",
                tool_calls=[FakeToolCall("read_file", {"path": "README.md"})],
            ),
        ),
        (
            "ollama",
            FakeModel("oll", answer="ollama here", tool_calls=[FakeToolCall("read_file", {"path": "x"})]),
        ),
    ]


def client(server: Any) -> openai.OpenAI:
    return openai.OpenAI(base_url=f"{server.url}/v1", api_key="gateway-key", max_retries=0)


def test_openai_agent_tool_loop_on_a_gemini_member(route_server: Any, fake_provider: FakeProvider) -> None:
    with route_server(members(), AGENTS) as server:
        agent = client(server)
        messages: list[dict[str, Any]] = [
            {"role": "system", "content": "You are a careful coding agent."},
            {"role": "user", "content": "What does the README say?"},
        ]

        # Turn 1, streamed: the tool call arrives as tool_calls deltas.
        raw = agent.chat.completions.with_raw_response.create(
            model="bench/agents:route",
            messages=messages,  # type: ignore[arg-type]
            tools=TOOLS,  # type: ignore[arg-type]
            stream=True,
            stream_options={"include_usage": True},
            user="session-42",
        )
        pieces = list(raw.parse())
        finish = [c.choices[0].finish_reason for c in pieces if c.choices and c.choices[0].finish_reason]
        assert finish == ["tool_calls"]
        deltas = [d for c in pieces if c.choices for d in (c.choices[0].delta.tool_calls or [])]
        assert deltas and deltas[0].id and deltas[0].function and deltas[0].function.name == "read_file"
        call_id = deltas[0].id
        arguments = "".join(d.function.arguments or "" for d in deltas if d.function)
        assert json.loads(arguments) == {"path": "README.md"}
        assert call_id.startswith("call_")  # Gemini sent none: the adapter's stable id
        assert raw.headers["x-bench-member"] == "gem"
        assert pieces[-1].model_extra["bench"]["call"] == raw.headers["x-bench-call"]
        asked = fake_provider.last("gem")
        assert asked.api == "gemini" and asked.tools == ["read_file"]
        assert asked.system == "You are a careful coding agent."

        # Turn 2, whole: the tool result goes back as a functionResponse named for its call.
        messages += [
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    {
                        "id": call_id,
                        "type": "function",
                        "function": {"name": "read_file", "arguments": arguments},
                    }
                ],
            },
            {"role": "tool", "tool_call_id": call_id, "content": "# Hello"},
        ]
        raw2 = agent.chat.completions.with_raw_response.create(
            model="bench/agents:route",
            messages=messages,  # type: ignore[arg-type]
            tools=TOOLS,  # type: ignore[arg-type]
            user="session-42",
        )
        reply = raw2.parse()
        assert reply.choices[0].finish_reason == "stop"
        assert reply.choices[0].message.content == "The README says hello."
        assert reply.model_extra["bench"]["call"] == raw2.headers["x-bench-call"]
        asked = fake_provider.last("gem")
        assert asked.messages[-2].tool_calls[0]["name"] == "read_file"
        assert asked.messages[-1].tool_results[0]["name"] == "read_file"
        assert "# Hello" in asked.messages[-1].tool_results[0]["content"]  # as {"result": ...}

        # Turn 3 asks for a tool again, whole: the reply's tool_calls keep the member's id form.
        messages += [
            {"role": "assistant", "content": "The README says hello."},
            {"role": "user", "content": "And the license?"},
        ]
        reply3 = agent.chat.completions.create(
            model="bench/agents:route",
            messages=messages,  # type: ignore[arg-type]
            tools=TOOLS,  # type: ignore[arg-type]
            user="session-42",
        )
        assert reply3.choices[0].finish_reason == "tool_calls"
        (tool_call,) = reply3.choices[0].message.tool_calls or []
        assert tool_call.id.startswith("call_") and json.loads(tool_call.function.arguments) == {
            "path": "README.md"
        }

        assert fake_provider.calls["gem"] == 3 and fake_provider.calls["oll"] == 0
        logged = rows(server.home, "SELECT kind, alias, conversation FROM calls ORDER BY at")
        assert [(r["kind"], r["alias"]) for r in logged] == [("route", "gem")] * 3
        assert len({r["conversation"] for r in logged}) == 1
        assert call_row(server.home, raw2.headers["x-bench-call"])["status"] == "ok"


def test_an_ollama_member_drives_an_openai_agent(route_server: Any, fake_provider: FakeProvider) -> None:
    """An Ollama member answers an OpenAI agent with tool calls (Ollama sends no ids)."""
    only_ollama = {"agents": {"members": ["oll"]}}
    with route_server(members(), only_ollama) as server:
        reply = client(server).chat.completions.create(
            model="bench/agents:route",
            messages=[{"role": "user", "content": "look"}],
            tools=TOOLS,  # type: ignore[arg-type]
        )
        assert reply.choices[0].finish_reason == "tool_calls"
        (tool_call,) = reply.choices[0].message.tool_calls or []
        assert tool_call.function.name == "read_file" and json.loads(tool_call.function.arguments) == {
            "path": "x"
        }
        assert fake_provider.last("oll").api == "ollama"
