"""Codex CLI (npm `@openai/codex`, pinned in .ci/agents), unmodified,
`codex exec` with a fresh CODEX_HOME, driving `bench/agents:route` over the
Responses API (its only wire) on a served checkout whose member is the fake
provider: it answers, and it runs a real tool (a shell command reading a
file in its work folder) whose output reaches the member."""

from __future__ import annotations

import json
from typing import Any

from benchwarmers.testing.script import FakeModel, FakeRequest, FakeToolCall

from .agents_support import Bench, agent_binary

CONFIG = """\
model = "bench/agents:route"
model_provider = "bench"

[model_providers.bench]
name = "Benchwarmers"
base_url = "{url}/v1"
wire_api = "responses"
env_key = "BENCHWARMERS_KEY"
"""


def codex(bench: Bench, prompt: str) -> Any:
    codex_home = bench.home / ".codex"
    codex_home.mkdir(exist_ok=True)
    (codex_home / "config.toml").write_text(CONFIG.format(url=bench.server.url))
    # Codex puts its sandbox helper on PATH from CODEX_HOME, and refuses to
    # when that is under the temp folder (where pytest's folders are):
    # TMPDIR elsewhere makes a pytest folder an ordinary one to it.
    tmp = bench.home / "tmp"
    tmp.mkdir(exist_ok=True)
    env = {"CODEX_HOME": str(codex_home), "BENCHWARMERS_KEY": "gateway-key", "TMPDIR": str(tmp)}
    done = bench.run([str(agent_binary("codex")), "exec", "--skip-git-repo-check", prompt], env)
    assert done.returncode == 0, f"codex exec failed ({done.returncode}):\n{done.stdout}\n{done.stderr}"
    return done


def test_codex_exec_answers_through_route_mode_over_responses(bench: Any) -> None:
    with bench([("anthropic", FakeModel("alpha", answer="Hello from the bench."))]) as b:
        done = codex(b, "say hello")
        assert "Hello from the bench." in done.stdout
        turn = b.fake.last("alpha")
        assert turn.stream and turn.prompt == "say hello"
        assert "exec_command" in turn.tools and "web_search" not in turn.tools
        assert "Codex" in turn.system  # its instructions and developer items


def test_codex_exec_tool_round_trip(bench: Any) -> None:
    def answer(request: FakeRequest) -> str:
        results = [r["content"] for m in request.messages for r in m.tool_results]
        return f"The file says: {results[-1]}" if results else "no tool result"

    def calls(request: FakeRequest) -> list[FakeToolCall]:
        if "exec_command" not in request.tools or request.answering_tool_results:
            return []
        return [FakeToolCall("exec_command", {"cmd": "cat notes.txt"})]

    with bench([("openai", FakeModel("alpha", answer=answer, tool_calls=calls))]) as b:
        (b.work / "notes.txt").write_text("the secret word is periwinkle\n")
        done = codex(b, "What does notes.txt say?")
        assert "periwinkle" in done.stdout
        last = b.fake.last("alpha")
        (sent,) = last.messages[-2].tool_calls
        assert sent["name"] == "exec_command" and json.loads(sent["arguments"]) == {"cmd": "cat notes.txt"}
        (result,) = last.messages[-1].tool_results
        assert result["id"] == sent["id"] and "periwinkle" in result["content"]
