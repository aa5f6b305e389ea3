"""The index of environment variables (`config/environment.py`) is the one
place a variable is named: docs/cli.md's table is it written out, and no
module reads a variable, or names one as a constant, past it."""

from __future__ import annotations

import asyncio
import re
from pathlib import Path

import pytest

from benchwarmers import client_env, metrics, runtime
from benchwarmers.config import environment, home, keys
from benchwarmers.mcp.server import build_server

pytestmark = pytest.mark.unit

ROOT = Path(__file__).parents[2]
SRC = ROOT / "src" / "benchwarmers"
INDEX = SRC / "config" / "environment.py"
# A variable's name written straight into a read of the environment, or a constant of one.
LITERAL_READ = re.compile(r"""(?:environ|env|getenv)(?:\.get)?[\[(]\s*["'][A-Z][A-Z0-9_]+["']""")
LITERAL_CONSTANT = re.compile(r"""^\s*[A-Z_]*_ENV\s*=\s*["']""", re.MULTILINE)


def test_the_docs_table_is_the_index() -> None:
    doc = (ROOT / "docs" / "cli.md").read_text(encoding="utf-8")
    section = doc.split("## Environment\n", 1)[1]
    assert environment.markdown_table() in section, environment.markdown_table()
    documented = set(re.findall(r"^\| `([A-Z][A-Z0-9_<>]+)` \|", section, re.MULTILINE))
    assert documented == {var.name for var in environment.ENVIRONMENT if not var.internal}


def test_no_module_names_a_variable_past_the_index() -> None:
    """Every read takes its name from the index (metrics.py, below `config`,
    spells its one name, held equal below)."""
    strays = []
    for path in SRC.rglob("*.py"):
        if path == INDEX or "testing" in path.parts or "migrations" in path.parts:
            continue
        text = path.read_text(encoding="utf-8")
        found = LITERAL_READ.findall(text) + LITERAL_CONSTANT.findall(text)
        if path.name == "metrics.py" and path.parent == SRC:
            assert environment.PROMETHEUS_MULTIPROC.name == metrics.MULTIPROC_ENV
            found = [f for f in found if "MULTIPROC_ENV" not in f]
        strays += [(path.relative_to(SRC), f) for f in found]
    assert strays == []


def test_an_mcp_tool_named_is_the_one_that_does_it() -> None:
    """A variable's help that names an MCP tool names a real one; the
    transcript folders' help names the tool that reads transcripts (it said
    `verdict`, which reads none)."""
    tools = {tool.name: tool for tool in asyncio.run(build_server(lambda ctx: None).list_tools())}
    named = {var.name: re.findall(r"MCP `(\w+)` tool", var.does) for var in environment.ENVIRONMENT}
    assert {name for names in named.values() for name in names} <= set(tools)
    readers = [name for name, tool in tools.items() if "transcript_path" in tool.input_schema["properties"]]
    assert named[environment.TRANSCRIPT_DIRS.name] == readers == ["pending_verdicts"]


def test_the_readers_use_the_index_names() -> None:
    assert environment.HOME.name == home.HOME_ENV
    assert keys.env_var_name("my-hub") == environment.ENDPOINT_KEY.named("MY_HUB").name
    assert environment.DATABASE_URL.name == runtime.DATABASE_URL_ENV
    assert environment.CLIENT_URL.default == client_env.DEFAULT_URL


def test_a_read_is_stripped_and_blank_is_unset() -> None:
    assert environment.HOME.read({"BENCHWARMERS_HOME": "  /data  "}) == "/data"
    assert environment.HOME.read({"BENCHWARMERS_HOME": "   "}) == ""
    assert environment.HOME.read({}) == ""
