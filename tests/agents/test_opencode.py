"""opencode (npm `opencode-ai`, pinned in .ci/agents), unmodified,
`opencode run` with a fresh HOME, driving `bench/agents:route` over OpenAI
chat completions (its `@ai-sdk/openai-compatible` provider) on a served
checkout whose member is the fake provider: it runs a real tool (its
`read` of a file in its work folder) and the result reaches the member."""

from __future__ import annotations

import json
from typing import Any

from benchwarmers.testing.script import FakeModel, FakeRequest, FakeToolCall

from .agents_support import Bench, agent_binary


def opencode(bench: Bench, prompt: str) -> Any:
    config = {
        "$schema": "https://opencode.ai/config.json",
        "provider": {
            "bench": {
                "npm": "@ai-sdk/openai-compatible",
                "name": "Benchwarmers",
                "options": {"baseURL": f"{bench.server.url}/v1", "apiKey": "gateway-key"},
                "models": {"bench/agents:route": {"name": "agents (route mode)"}},
            }
        },
        "model": "bench/bench/agents:route",
    }
    (bench.work / "opencode.json").write_text(json.dumps(config))
    done = bench.run([str(agent_binary("opencode")), "run", prompt], {})
    assert done.returncode == 0, f"opencode run failed ({done.returncode}):\n{done.stdout}\n{done.stderr}"
    return done


def test_opencode_tool_round_trip(bench: Any) -> None:
    def answer(request: FakeRequest) -> str:
        results = [r["content"] for m in request.messages for r in m.tool_results]
        return f"The file says: {results[-1]}" if results else "no tool result"

    def calls(request: FakeRequest) -> list[FakeToolCall]:
        if "read" not in request.tools or request.answering_tool_results:
            return []
        return [FakeToolCall("read", {"filePath": str(notes)})]

    with bench([("anthropic", FakeModel("alpha", answer=answer, tool_calls=calls))]) as b:
        notes = b.work / "notes.txt"
        notes.write_text("the secret word is periwinkle\n")
        done = opencode(b, "What does notes.txt say?")
        assert "periwinkle" in done.stdout
        last = b.fake.last("alpha")
        (sent,) = last.messages[-2].tool_calls
        assert sent["name"] == "read" and json.loads(sent["arguments"]) == {"filePath": str(notes)}
        (result,) = last.messages[-1].tool_results
        assert result["id"] == sent["id"] and "periwinkle" in result["content"]
