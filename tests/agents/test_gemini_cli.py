"""Gemini CLI (npm `@google/gemini-cli`, pinned in .ci/agents), unmodified,
in non-interactive mode with a fresh HOME, driving `bench/agents:route`
over the Gemini API on a served checkout whose member is the fake
provider: it answers, and it runs a real tool (reading a file in its work
folder) whose result reaches the member (issue 40, item 11)."""

from __future__ import annotations

import json
from typing import Any

from benchwarmers.testing.script import FakeModel, FakeRequest, FakeToolCall

from .agents_support import Bench, agent_binary

ROUTE = "bench/agents:route"


def gemini(bench: Bench, prompt: str) -> Any:
    """`gemini -p PROMPT` as docs/agents.md sets it up: the base URL, a key,
    the API-key auth chosen in settings.json, the work folder trusted."""
    settings = bench.home / ".gemini" / "settings.json"
    settings.parent.mkdir(parents=True, exist_ok=True)
    settings.write_text(json.dumps({"security": {"auth": {"selectedType": "gemini-api-key"}}}))
    env = {
        "GOOGLE_GEMINI_BASE_URL": bench.server.url,
        "GEMINI_API_KEY": "gateway-key",
        "GEMINI_CLI_TRUST_WORKSPACE": "true",
    }
    done = bench.run([str(agent_binary("gemini")), "-m", ROUTE, "-y", "-p", prompt], env)
    assert done.returncode == 0, f"gemini failed ({done.returncode}):\n{done.stdout}\n{done.stderr}"
    return done


def test_gemini_cli_answers_and_reads_a_file_through_route_mode(bench: Any) -> None:
    def answer(request: FakeRequest) -> str:
        results = [str(r["content"]) for m in request.messages for r in m.tool_results]
        return f"The file says: {results[-1]}" if results else "Hello from the bench."

    def calls(request: FakeRequest) -> list[FakeToolCall]:
        if "read_file" not in request.tools or request.answering_tool_results:
            return []
        return [FakeToolCall("read_file", {"absolute_path": str(notes), "file_path": str(notes)})]

    with bench([("gemini", FakeModel("alpha", answer=answer, tool_calls=calls))]) as b:
        notes = b.work / "notes.txt"
        notes.write_text("the secret word is periwinkle\n")
        done = gemini(b, "What does notes.txt say?")
        assert "periwinkle" in done.stdout, done.stdout + done.stderr
        asked = [r for r in b.fake.requests if r.model == "alpha"]
        assert asked and any("read_file" in r.tools for r in asked)
        last = [r for r in asked if r.answering_tool_results][-1]
        (result,) = last.messages[-1].tool_results
        assert "periwinkle" in str(result["content"])
