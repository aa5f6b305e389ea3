"""What Claude Code 2.1 sends that older gateways refused, through the
official `anthropic` client: `role: "system"` entries inside `messages`
(its environment, agent and skill lists, each MCP server's instructions),
`thinking`, `context_management`, `output_config`, a JSON `metadata.user_id`,
a `defer_loading` tool, and `tool_reference` blocks in tool results. The
system entries join the system prompt in the order they stand, in route
mode and in a panel; what only Anthropic's servers can do is refused with
the reason."""

from __future__ import annotations

import json
from typing import Any

import anthropic
import pytest

from benchwarmers.testing.fake_provider import FakeProvider
from benchwarmers.testing.script import FakeModel, FakeRequest, FakeToolCall
from benchwarmers.types import ApiKind

AGENTS = {"agents": {"members": ["alpha"], "purpose": "drives coding agents"}}
SESSION = json.dumps({"device_id": "d" * 64, "account_uuid": "", "session_id": "5e55-10n"})
CLAUDE_CODE_FIELDS: dict[str, Any] = {
    "thinking": {"type": "adaptive", "display": "omitted"},
    "context_management": {"edits": [{"type": "clear_thinking_20251015", "keep": "all"}]},
    "output_config": {"effort": "high"},
    "metadata": {"user_id": SESSION},
}
TOOLS: list[dict[str, Any]] = [
    {"name": "Read", "description": "Read a file.", "input_schema": {"type": "object", "properties": {}}},
    {
        "name": "DeferredToolPlaceholder",
        "description": "placeholder",
        "input_schema": {"type": "object", "properties": {}},
        "defer_loading": True,
    },
]


def conversation(*more: dict[str, Any]) -> list[dict[str, Any]]:
    """Claude Code's opening: the user's turn, then system entries."""
    return [
        {"role": "user", "content": [{"type": "text", "text": "say hi"}]},
        {
            "role": "system",
            "content": [
                {
                    "type": "text",
                    "text": "# Environment\nWork in /repo.",
                    "cache_control": {"type": "ephemeral"},
                }
            ],
        },
        {"role": "system", "content": "MCP server benchwarmers: ask a panel for a second opinion."},
        *more,
    ]


def client(server: Any) -> anthropic.Anthropic:
    return anthropic.Anthropic(base_url=server.url, api_key="any", max_retries=0)


@pytest.mark.parametrize("kind", ["openai", "anthropic", "gemini", "ollama"])
def test_system_entries_join_the_system_prompt_in_order_in_route_mode(
    route_server: Any, fake_provider: FakeProvider, kind: ApiKind
) -> None:
    members = [(kind, FakeModel("alpha", answer="hi there"))]
    with route_server(members, AGENTS) as server:
        with client(server).messages.stream(
            model="bench/agents:route",
            max_tokens=32000,
            system=[{"type": "text", "text": "You are Claude Code.", "cache_control": {"type": "ephemeral"}}],
            messages=conversation(),  # type: ignore[arg-type]
            tools=TOOLS,  # type: ignore[arg-type]
            extra_body=CLAUDE_CODE_FIELDS,
            extra_query={"beta": "true"},
        ) as stream:
            message = stream.get_final_message()
        assert message.content[0].text == "hi there"  # type: ignore[union-attr]
        asked = fake_provider.last("alpha")
        assert asked.system == (
            "You are Claude Code.\n\n# Environment\nWork in /repo.\n\n"
            "MCP server benchwarmers: ask a panel for a second opinion."
        )
        assert [(m.role, m.text) for m in asked.messages] == [("user", "say hi")]
        assert asked.tools == ["Read", "DeferredToolPlaceholder"]


def test_system_entries_reach_every_seat_of_a_panel(route_server: Any, fake_provider: FakeProvider) -> None:
    def echo(request: FakeRequest) -> str:
        return f"system={request.system!r}"

    members = [("openai", FakeModel("alpha", answer=echo)), ("anthropic", FakeModel("beta", answer=echo))]
    with route_server(members, {"pair": {"members": ["alpha", "beta"]}}) as server:
        message = client(server).messages.create(
            model="bench/pair",
            max_tokens=100,
            system="Top.",
            messages=conversation(
                {"role": "assistant", "content": "ok"}, {"role": "user", "content": "again"}
            ),  # type: ignore[arg-type]
            extra_body=CLAUDE_CODE_FIELDS,
        )
    text = message.content[0].text  # type: ignore[union-attr]
    wanted = "Top.\\n\\n# Environment\\nWork in /repo.\\n\\nMCP server benchwarmers: ask a panel"
    assert text.count(wanted) == 2, text
    assert [(m.role, m.text) for m in fake_provider.last("beta").messages] == [
        ("user", "say hi"),
        ("assistant", "ok"),
        ("user", "again"),
    ]


def test_tool_references_and_other_blocks_in_results_become_notes(
    route_server: Any, fake_provider: FakeProvider
) -> None:
    members = [
        ("openai", FakeModel("alpha", answer="loaded", tool_calls=[FakeToolCall("Read", {}, "toolu_1")]))
    ]
    history = [
        {"role": "user", "content": "find a tool"},
        {
            "role": "assistant",
            "content": [
                {"type": "thinking", "thinking": "hm", "signature": "sig"},
                {
                    "type": "tool_use",
                    "id": "toolu_1",
                    "name": "ToolSearch",
                    "input": {"query": "select:WebFetch"},
                },
            ],
        },
        {
            "role": "user",
            "content": [
                {
                    "type": "tool_result",
                    "tool_use_id": "toolu_1",
                    "content": [
                        {"type": "tool_reference", "tool_name": "WebFetch"},
                        {"type": "text", "text": "ok"},
                    ],
                }
            ],
        },
    ]
    with route_server(members, AGENTS) as server:
        message = client(server).messages.create(
            model="bench/agents:route",
            max_tokens=100,
            messages=history,
            tools=TOOLS,  # type: ignore[arg-type]
        )
    assert message.content[0].text == "loaded"  # type: ignore[union-attr]
    result = fake_provider.last("alpha").messages[-1].tool_results[0]
    assert result["content"] == "[tool WebFetch is now available]\nok"


@pytest.mark.parametrize(
    ("extra", "words"),
    [
        (
            {"tools": [{"type": "web_search_20250305", "name": "web_search"}]},
            "runs this tool on its own servers",
        ),
        (
            {"mcp_servers": [{"type": "url", "url": "https://x", "name": "x"}]},
            "add the MCP server to your client",
        ),
        ({"container": "cntr_1"}, "containers live on Anthropic's servers"),
        ({"messages": [{"role": "tool", "content": "x"}]}, "'user', 'assistant' or 'system'"),
        ({"messages": [{"role": "system", "content": "only system"}]}, "at least one user or assistant"),
    ],
)
def test_what_only_anthropic_can_do_is_refused_with_the_reason(
    route_server: Any, extra: dict[str, Any], words: str
) -> None:
    members = [("openai", FakeModel("alpha"))]
    with route_server(members, AGENTS) as server:
        body = {
            "model": "bench/agents:route",
            "max_tokens": 10,
            "messages": [{"role": "user", "content": "hi"}],
        }
        with pytest.raises(anthropic.BadRequestError) as refused:
            client(server).post("/v1/messages", body={**body, **extra}, cast_to=object)
    assert words in refused.value.message
