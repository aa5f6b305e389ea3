"""The Claude Code plugin in `plugin/` and the marketplace manifest at the
repository root: each JSON file against the structure Claude Code reads,
the markdown files' front matter, and the Stop hook run as Claude Code
runs it (JSON on stdin) against the live server."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import jsonschema
import pytest
import yaml

from benchwarmers import __version__
from tests.serving import free_port

from .mcp_support import http_client, sample_transcript, seat_calls, tool_text

ROOT = Path(__file__).resolve().parents[2]
PLUGIN = ROOT / "plugin"
HOOK = PLUGIN / "hooks" / "remind_verdicts.py"

NAME = {"type": "string", "pattern": "^[a-z0-9]+(-[a-z0-9]+)*$"}
PERSON = {"type": "object", "required": ["name"], "properties": {"name": {"type": "string", "minLength": 1}}}
STRINGS = {"type": "array", "items": {"type": "string"}}

PLUGIN_SCHEMA = {
    "type": "object",
    "required": ["name", "version", "description"],
    "properties": {
        "name": NAME,
        "version": {"type": "string", "pattern": r"^\d+\.\d+\.\d+"},
        "description": {"type": "string", "minLength": 10},
        "author": PERSON,
        "license": {"type": "string"},
        "keywords": STRINGS,
    },
    "additionalProperties": False,
}

MCP_SCHEMA = {
    "type": "object",
    "required": ["mcpServers"],
    "additionalProperties": False,
    "properties": {
        "mcpServers": {
            "type": "object",
            "minProperties": 1,
            "additionalProperties": {
                "type": "object",
                "required": ["type", "url"],
                "additionalProperties": False,
                "properties": {
                    "type": {"enum": ["http"]},
                    "url": {"type": "string"},
                    "headers": {"type": "object", "additionalProperties": {"type": "string"}},
                },
            },
        }
    },
}

HOOK_COMMAND = {
    "type": "object",
    "required": ["type", "command"],
    "additionalProperties": False,
    "properties": {
        "type": {"enum": ["command"]},
        "command": {"type": "string"},
        "timeout": {"type": "number", "exclusiveMinimum": 0},
    },
}
HOOKS_SCHEMA = {
    "type": "object",
    "required": ["hooks"],
    "additionalProperties": False,
    "properties": {
        "description": {"type": "string"},
        "hooks": {
            "type": "object",
            "additionalProperties": False,
            "properties": {
                "Stop": {
                    "type": "array",
                    "minItems": 1,
                    "items": {
                        "type": "object",
                        "required": ["hooks"],
                        "additionalProperties": False,
                        "properties": {
                            "matcher": {"type": "string"},
                            "hooks": {"type": "array", "minItems": 1, "items": HOOK_COMMAND},
                        },
                    },
                }
            },
        },
    },
}

MARKETPLACE_SCHEMA = {
    "type": "object",
    "required": ["name", "owner", "plugins"],
    "additionalProperties": False,
    "properties": {
        "name": NAME,
        "owner": PERSON,
        "metadata": {
            "type": "object",
            "additionalProperties": False,
            "properties": {"description": {"type": "string"}, "version": {"type": "string"}},
        },
        "plugins": {
            "type": "array",
            "minItems": 1,
            "items": {
                "type": "object",
                "required": ["name", "source"],
                "additionalProperties": False,
                "properties": {
                    "name": NAME,
                    "source": {"type": "string", "pattern": r"^\./"},
                    "description": {"type": "string"},
                    "version": {"type": "string"},
                    "category": {"type": "string"},
                    "keywords": STRINGS,
                },
            },
        },
    },
}


def load(path: Path) -> Any:
    return json.loads(path.read_text())


def front_matter(path: Path) -> dict[str, Any]:
    text = path.read_text()
    assert text.startswith("---\n"), f"{path} has no front matter"
    head, _, body = text[4:].partition("\n---\n")
    assert body.strip(), f"{path} has no body"
    fields: dict[str, Any] = yaml.safe_load(head)
    return fields


def test_manifests_have_the_structure_claude_code_reads() -> None:
    manifest = load(PLUGIN / ".claude-plugin" / "plugin.json")
    jsonschema.validate(manifest, PLUGIN_SCHEMA)
    assert manifest["name"] == "benchwarmers" and manifest["version"] == __version__

    marketplace = load(ROOT / ".claude-plugin" / "marketplace.json")
    jsonschema.validate(marketplace, MARKETPLACE_SCHEMA)
    [entry] = marketplace["plugins"]
    assert entry["name"] == manifest["name"] and entry["version"] == manifest["version"]
    assert (ROOT / entry["source"] / ".claude-plugin" / "plugin.json").is_file()


def expand(value: str, env: dict[str, str]) -> str:
    """Claude Code's expansion of `${VAR}` and `${VAR:-default}` in `.mcp.json`."""
    return re.sub(r"\$\{(\w+)(?::-([^}]*))?\}", lambda m: env.get(m[1]) or (m[2] or ""), value)


def test_mcp_json_points_at_the_local_server() -> None:
    config = load(PLUGIN / ".mcp.json")
    jsonschema.validate(config, MCP_SCHEMA)
    server = config["mcpServers"]["benchwarmers"]
    assert server["type"] == "http"
    # By default the local server; BENCHWARMERS_URL moves it, as it moves the CLI and the hook.
    assert expand(server["url"], {}) == "http://127.0.0.1:8122/mcp"
    assert expand(server["url"], {"BENCHWARMERS_URL": "http://10.0.0.2:9000"}) == "http://10.0.0.2:9000/mcp"
    # The key comes from the environment; with none set, a placeholder no key matches (an empty
    # header value is not legal HTTP): the local owner where keys are not required.
    assert expand(server["headers"]["Authorization"], {}) == "Bearer none"
    assert expand(server["headers"]["Authorization"], {"BENCHWARMERS_KEY": "bw_k"}) == "Bearer bw_k"


def test_stop_hook_runs_the_reminder_script() -> None:
    hooks = load(PLUGIN / "hooks" / "hooks.json")
    jsonschema.validate(hooks, HOOKS_SCHEMA)
    [group] = hooks["hooks"]["Stop"]
    [hook] = group["hooks"]
    assert hook["command"] == 'python3 "${CLAUDE_PLUGIN_ROOT}/hooks/remind_verdicts.py"'
    assert HOOK.is_file()


def test_command_and_skill_front_matter() -> None:
    command = front_matter(PLUGIN / "commands" / "ask.md")
    assert set(command) == {"description", "argument-hint"}
    assert "$ARGUMENTS" in (PLUGIN / "commands" / "ask.md").read_text()
    skill = front_matter(PLUGIN / "skills" / "panel" / "SKILL.md")
    assert set(skill) == {"name", "description"} and skill["name"] == "panel"
    body = (PLUGIN / "skills" / "panel" / "SKILL.md").read_text().lower()
    for rule in ("when a panel helps", "verify before acting", "verdict", "name every seat", "`better`"):
        assert rule in body, rule


def run_hook(event: dict[str, Any], url: str, state: Path) -> str:
    env = {**os.environ, "BENCHWARMERS_URL": url, "CLAUDE_PLUGIN_DATA": str(state)}
    done = subprocess.run(
        [sys.executable, str(HOOK)],
        input=json.dumps(event),
        capture_output=True,
        text=True,
        env=env,
        timeout=30,
    )
    assert done.returncode == 0, done.stderr
    return done.stdout.strip()


async def test_stop_hook_reminds_once_of_seats_without_a_verdict(bench_server: Any, tmp_path: Path) -> None:
    with bench_server() as server:
        async with http_client(server.url + "/mcp", mode="legacy") as client:
            asked = await client.call_tool("ask", {"collection": "trio", "prompt": "hi"})
            fast, mid, slow = seat_calls(asked.structured_content["bench"])
            await client.call_tool("verdict", {"call": fast, "useful": True})
        transcript = sample_transcript(tmp_path / "session.jsonl", tool_text(asked))
        event = {"session_id": "s1", "transcript_path": str(transcript), "stop_hook_active": False}
        state = tmp_path / "plugin-data"

        continuing = run_hook({**event, "stop_hook_active": True}, server.url, state)
        assert continuing == ""

        first = json.loads(run_hook(event, server.url, state))
        assert first["decision"] == "block"
        assert mid in first["reason"] and slow in first["reason"] and fast not in first["reason"]
        assert "verdict" in first["reason"]

        assert run_hook(event, server.url, state) == "", "the same seats are reminded of only once"


@pytest.mark.parametrize("problem", ["no server", "no transcript", "not json"])
def test_stop_hook_is_silent_when_it_cannot_help(tmp_path: Path, problem: str) -> None:
    transcript = sample_transcript(tmp_path / "session.jsonl", "call c_" + "a" * 20)
    event: Any = {"transcript_path": str(transcript), "stop_hook_active": False}
    if problem == "no transcript":
        event["transcript_path"] = str(tmp_path / "missing.jsonl")
    env = {**os.environ, "BENCHWARMERS_URL": f"http://127.0.0.1:{free_port()}"}
    stdin = "{" if problem == "not json" else json.dumps(event)
    done = subprocess.run(
        [sys.executable, str(HOOK)], input=stdin, capture_output=True, text=True, env=env, timeout=30
    )
    assert (done.returncode, done.stdout, done.stderr) == (0, "", "")
