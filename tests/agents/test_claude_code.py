"""Claude Code (npm `@anthropic-ai/claude-code`, pinned in .ci/agents),
unmodified, in print mode with a fresh HOME, driving `bench/agents:route`
on a served checkout whose member is the fake provider: it answers, it
answers with our MCP server added (whose instructions it sends as a
`role: "system"` entry), and it runs a real tool (Read of a file in its
work folder) whose result reaches the member."""

from __future__ import annotations

import json
from typing import Any

from benchwarmers.mcp.server import INSTRUCTIONS
from benchwarmers.testing.script import FakeModel, FakeRequest, FakeToolCall

from .agents_support import Bench, agent_binary

ROUTE = "bench/agents:route"


def claude_env(bench: Bench) -> dict[str, str]:
    return {
        "ANTHROPIC_BASE_URL": bench.server.url,
        "ANTHROPIC_API_KEY": "gateway-key",
        "ANTHROPIC_MODEL": ROUTE,
        "ANTHROPIC_SMALL_FAST_MODEL": ROUTE,
        "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
        "DISABLE_TELEMETRY": "1",
        "DISABLE_AUTOUPDATER": "1",
        # How long it waits for an MCP server to connect (ms; its default
        # is short for a loaded machine, and a server that is late is left out).
        "MCP_TIMEOUT": "120000",
    }


def claude(bench: Bench, *args: str) -> Any:
    done = bench.run([str(agent_binary("claude")), *args], claude_env(bench))
    assert done.returncode == 0, (
        f"claude {args[:2]} failed ({done.returncode}):\n{done.stdout}\n{done.stderr}"
    )
    return done


def main_turns(bench: Bench) -> list[FakeRequest]:
    """The member's asks that carried Claude Code's tools (its main loop,
    not a side request such as a title)."""
    return [r for r in bench.fake.requests if r.model == "alpha" and "Read" in r.tools]


def test_claude_code_answers_through_route_mode(bench: Any) -> None:
    with bench([("openai", FakeModel("alpha", answer="Hello from the bench."))]) as b:
        done = claude(b, "-p", "say hello")
        assert "Hello from the bench." in done.stdout
        turn = main_turns(b)[-1]
        assert turn.stream and turn.prompt.endswith("say hello")
        # Its environment block came as a system entry inside `messages`: it
        # joined the system prompt instead of failing the request.
        assert "# Environment" in turn.system and "Primary working directory" in turn.system
        assert all(m.role in ("user", "assistant") for m in turn.messages)


def test_claude_code_with_our_mcp_server_added(bench: Any) -> None:
    with bench([("anthropic", FakeModel("alpha", answer="Answered with MCP on."))]) as b:
        claude(b, "mcp", "add", "--transport", "http", "benchwarmers", f"{b.server.url}/mcp")
        config = json.loads((b.home / ".claude.json").read_text())
        assert "benchwarmers" in json.dumps(config)
        done = claude(b, "-p", "say hello")
        assert "Answered with MCP on." in done.stdout
        turn = main_turns(b)[-1]
        # Claude Code connected to our MCP server and sent its instructions
        # as a system entry; they reached the member's system prompt.
        assert INSTRUCTIONS.split("\n")[0] in turn.system
        # Its tools are offered too (deferred behind ToolSearch, by name).
        assert "mcp__benchwarmers__ask" in turn.system + " ".join(turn.tools)


def test_claude_code_tool_round_trip(bench: Any) -> None:
    def answer(request: FakeRequest) -> str:
        results = [r["content"] for m in request.messages for r in m.tool_results]
        return f"The file says: {results[-1]}" if results else "no tool result"

    def calls(request: FakeRequest) -> list[FakeToolCall]:
        if "Read" not in request.tools or request.answering_tool_results:
            return []
        return [FakeToolCall("Read", {"file_path": str(notes)})]

    with bench([("openai", FakeModel("alpha", answer=answer, tool_calls=calls))]) as b:
        notes = b.work / "notes.txt"
        notes.write_text("the secret word is periwinkle\n")
        done = claude(b, "-p", "What does notes.txt say?")
        assert "periwinkle" in done.stdout
        last = main_turns(b)[-1]
        (sent,) = last.messages[-2].tool_calls
        assert sent["name"] == "Read" and json.loads(sent["arguments"]) == {"file_path": str(notes)}
        (result,) = last.messages[-1].tool_results
        assert result["id"] == sent["id"] and "periwinkle" in result["content"]


def test_claude_code_reads_our_mcp_ask_as_text(bench: Any) -> None:
    """Issue 40, item 10: the `ask` tool's result reaches the model as the
    readable text its description promises (seat headings, call ids, the
    verdict instructions), not as the raw `{"bench": ...}` JSON."""
    asked = {"collection": "agents", "prompt": "Why is the sky blue?"}

    def answer(request: FakeRequest) -> str:
        results = [r["content"] for m in request.messages for r in m.tool_results]
        if results:
            return "The panel said it."
        return "Rayleigh scattering." if not request.tools else "no tool result"

    def calls(request: FakeRequest) -> list[FakeToolCall]:
        if "mcp__benchwarmers__ask" not in request.tools or request.answering_tool_results:
            return []
        return [FakeToolCall("mcp__benchwarmers__ask", asked)]

    with bench([("openai", FakeModel("alpha", answer=answer, tool_calls=calls))]) as b:
        claude(b, "mcp", "add", "--transport", "http", "benchwarmers", f"{b.server.url}/mcp")
        argv = [
            str(agent_binary("claude")),
            "-p",
            "Ask the panel",
            "--allowedTools",
            "mcp__benchwarmers__ask",
        ]
        for _ in range(3):  # a loaded machine may start the turn before the MCP server is connected
            done = b.run(argv, {**claude_env(b), "ENABLE_TOOL_SEARCH": "false"})
            assert done.returncode == 0, done.stdout + done.stderr
            if any(r.answering_tool_results for r in b.fake.requests):
                break
        answered = [r for r in b.fake.requests if r.model == "alpha" and r.answering_tool_results]
        assert answered, [r.tools for r in b.fake.requests]
        (result,) = answered[-1].messages[-1].tool_results
        text = str(result["content"])
        assert "## Seat 1 · alpha · ok" in text and "Rayleigh scattering." in text, text[:500]
        assert "send a verdict" in text
        assert not text.lstrip().startswith('{"bench"'), text[:200]
