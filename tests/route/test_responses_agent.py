"""Route mode over the OpenAI Responses API, sent the way Codex CLI 0.17x
sends it (developer items, function, custom and namespace tools beside a
hosted `web_search`, `tool_choice`, `parallel_tool_calls`, `reasoning`,
`store: false`, `include`, `prompt_cache_key`, `client_metadata`), through
the official `openai` client, with members on other APIs: the tool loop
crosses formats both ways, and the stream's events are the API's own."""

from __future__ import annotations

import json
from typing import Any

import openai
import pytest

from benchwarmers.testing.fake_provider import FakeProvider
from benchwarmers.testing.script import FakeError, FakeModel, FakeToolCall
from benchwarmers.types import ApiKind

from .route_support import call_row, rows

AGENTS = {"agents": {"members": ["alpha"]}}
PAIR = {"agents": {"members": ["alpha", "beta"]}}
EXEC = {
    "type": "function",
    "name": "exec_command",
    "description": "Runs a command.",
    "strict": False,
    "parameters": {"type": "object", "properties": {"cmd": {"type": "string"}}, "required": ["cmd"]},
}
PATCH = {
    "type": "custom",
    "name": "apply_patch",
    "description": "Edit files with a patch.",
    "format": {"type": "grammar", "syntax": "lark", "definition": 'start: "*** Begin Patch" /(.|\\n)*/'},
}
AGENTS_NS = {
    "type": "namespace",
    "name": "multi_agent_v1",
    "description": "sub-agents",
    "tools": [{"type": "function", "name": "close_agent", "strict": False, "parameters": {"type": "object"}}],
}
CODEX: dict[str, Any] = {
    "model": "bench/agents:route",
    "instructions": "You are a coding agent running in the Codex CLI.",
    "tools": [EXEC, PATCH, AGENTS_NS, {"type": "web_search", "external_web_access": False}],
    "tool_choice": "auto",
    "parallel_tool_calls": True,
    "reasoning": {"summary": "auto"},
    "store": False,
    "include": ["reasoning.encrypted_content"],
    "prompt_cache_key": "0199-session",
    "extra_body": {"client_metadata": {"session_id": "0199-session", "turn_id": "t1"}},
}
OPENING: list[dict[str, Any]] = [
    {"type": "message", "role": "developer", "content": [{"type": "input_text", "text": "<permissions>"}]},
    {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "<environment_context>"}]},
    {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "read notes.txt"}]},
]


def codex(server: Any) -> openai.OpenAI:
    return openai.OpenAI(base_url=f"{server.url}/v1", api_key="gateway-key", max_retries=0)


def stream_turn(client: openai.OpenAI, items: list[dict[str, Any]]) -> tuple[Any, list[Any]]:
    events = list(client.responses.create(**CODEX, input=items, stream=True))
    return events[-1].response, events


@pytest.mark.parametrize("kind", ["anthropic", "gemini", "openai", "ollama"])
def test_codex_tool_loop_through_route_mode(
    route_server: Any, fake_provider: FakeProvider, kind: ApiKind
) -> None:
    member = FakeModel(
        "alpha",
        answer="notes.txt says hello",
        tool_calls=[FakeToolCall("exec_command", {"cmd": "cat notes.txt"})],
    )
    with route_server([(kind, member)], AGENTS) as server:
        client = codex(server)
        first, events = stream_turn(client, OPENING)
        kinds = [e.type for e in events]
        assert kinds[:3] == ["response.created", "response.in_progress", "response.output_item.added"]
        assert kinds[-3:] == [
            "response.function_call_arguments.done",
            "response.output_item.done",
            "response.completed",
        ]
        assert "response.function_call_arguments.delta" in kinds
        assert [e.sequence_number for e in events] == list(range(len(events)))
        (call,) = first.output
        assert (call.type, call.name, json.loads(call.arguments)) == (
            "function_call",
            "exec_command",
            {"cmd": "cat notes.txt"},
        )
        assert first.usage.input_tokens > 0 and first.status == "completed"

        asked = fake_provider.last("alpha")
        assert asked.system == "You are a coding agent running in the Codex CLI.\n\n<permissions>"
        assert asked.tools == ["exec_command", "apply_patch", "multi_agent_v1__close_agent"]  # no web_search
        assert [m.text for m in asked.messages] == ["<environment_context>", "read notes.txt"]

        history = [
            *OPENING,
            {"type": "reasoning", "id": "rs_1", "summary": [], "encrypted_content": "gAAA"},
            {
                "type": "function_call",
                "call_id": call.call_id,
                "name": "exec_command",
                "arguments": call.arguments,
            },
            {"type": "function_call_output", "call_id": call.call_id, "output": "hello"},
        ]
        second, events = stream_turn(client, history)
        assert second.output_text == "notes.txt says hello"
        assert [e.type for e in events][-5:] == [
            "response.output_text.delta",
            "response.output_text.done",
            "response.content_part.done",
            "response.output_item.done",
            "response.completed",
        ]
        asked = fake_provider.last("alpha")
        (sent,) = asked.messages[-2].tool_calls
        assert (sent["name"], json.loads(sent["arguments"])) == ("exec_command", {"cmd": "cat notes.txt"})
        (result,) = asked.messages[-1].tool_results
        assert "hello" in result["content"]  # Gemini's adapter wraps it as {"result": ...}
        if kind in ("openai", "anthropic"):
            assert sent["id"] == call.call_id == result["id"]

        calls = [r for r in rows(server.home, "SELECT * FROM calls WHERE kind = 'route'")]
        assert len(calls) == 2 and len({r["conversation"] for r in calls}) == 1
        assert calls[0]["conversation"].startswith("client:")


def test_custom_and_namespaced_calls_come_back_in_the_kind_declared(
    route_server: Any, fake_provider: FakeProvider
) -> None:
    calls = [
        FakeToolCall("apply_patch", {"input": "*** Begin Patch\n*** End Patch"}),
        FakeToolCall("multi_agent_v1__close_agent", {"target": "a1"}),
    ]
    with route_server(
        [("anthropic", FakeModel("alpha", answer="patched", tool_calls=calls))], AGENTS
    ) as server:
        client = codex(server)
        whole = client.responses.create(**CODEX, input=OPENING)
        patch, close = whole.output
        assert (patch.type, patch.name, patch.input) == (
            "custom_tool_call",
            "apply_patch",
            "*** Begin Patch\n*** End Patch",
        )
        assert (close.type, close.name, close.namespace) == ("function_call", "close_agent", "multi_agent_v1")

        streamed, events = stream_turn(client, OPENING)
        assert [i.type for i in streamed.output] == ["custom_tool_call", "function_call"]
        assert streamed.output[0].input == patch.input
        kinds = [e.type for e in events]
        assert (
            "response.custom_tool_call_input.delta" in kinds
            and "response.custom_tool_call_input.done" in kinds
        )

        history = [
            *OPENING,
            {
                "type": "custom_tool_call",
                "call_id": patch.call_id,
                "name": "apply_patch",
                "input": patch.input,
            },
            {
                "type": "function_call",
                "call_id": close.call_id,
                "name": "close_agent",
                "namespace": "multi_agent_v1",
                "arguments": close.arguments,
            },
            {"type": "custom_tool_call_output", "call_id": patch.call_id, "output": "Done!"},
            {
                "type": "function_call_output",
                "call_id": close.call_id,
                "output": [{"type": "input_text", "text": "closed"}],
            },
        ]
        final = client.responses.create(**CODEX, input=history)
        assert final.output_text == "patched"
        asked = fake_provider.last("alpha")
        assert [c["name"] for c in asked.messages[-2].tool_calls] == [
            "apply_patch",
            "multi_agent_v1__close_agent",
        ]
        assert json.loads(asked.messages[-2].tool_calls[0]["arguments"]) == {"input": patch.input}
        assert [r["content"] for r in asked.messages[-1].tool_results] == ["Done!", "closed"]
        tool = next(t for t in asked.body["tools"] if t["name"] == "apply_patch")
        assert "lark grammar" in json.dumps(tool)


def test_a_failing_member_is_replaced_before_the_first_byte(
    route_server: Any, fake_provider: FakeProvider
) -> None:
    members: list[tuple[ApiKind, FakeModel]] = [
        ("openai", FakeModel("alpha", error=FakeError(500, "alpha broke"))),
        ("gemini", FakeModel("beta", answer="beta answers")),
    ]
    with route_server(members, PAIR) as server:
        final, _events = stream_turn(codex(server), OPENING)
        assert final.output_text == "beta answers"
        bench = final.model_extra["bench"]
        assert bench["alias"] == "beta" and bench["failover"][0]["alias"] == "alpha"
        assert call_row(server.home, bench["call"])["kind"] == "route"


def test_a_failure_mid_reply_ends_the_stream_with_response_failed(route_server: Any) -> None:
    members = [
        ("openai", FakeModel("alpha", answer="one two three four five", cut_after=2, cut_mode="abort"))
    ]
    with route_server(members, AGENTS) as server:
        events = list(codex(server).responses.create(**CODEX, input=OPENING, stream=True))
    assert events[-1].type == "response.failed"
    assert "failed mid-reply" in events[-1].response.error.message


@pytest.mark.parametrize(
    ("extra", "words"),
    [
        ({"previous_response_id": "resp_1"}, "send the whole conversation"),
        ({"tools": [{"type": "local_shell"}]}, "send function, custom or namespace tools"),
        ({"tool_choice": {"type": "web_search"}}, "OpenAI runs that tool"),
        ({"input": [{"type": "item_reference", "id": "x"}]}, "cannot be carried"),
    ],
)
def test_what_cannot_be_carried_is_refused_with_the_reason(
    route_server: Any, extra: dict[str, Any], words: str
) -> None:
    with (
        route_server([("openai", FakeModel("alpha"))], AGENTS) as server,
        pytest.raises(openai.BadRequestError) as refused,
    ):
        codex(server).responses.create(**{**CODEX, "input": OPENING, **extra})
    assert words in refused.value.message
