"""Imports the graph cannot see: a module of ours named in a string and
imported at run time is an edge `lint-imports` (grimp) never checks, so a
layer can be crossed that way unseen. Counted here against grimp's graph:
every string naming one of our modules must be one the naming module also
imports for real, a resource anchor (`importlib.resources`, Jinja's
`PackageLoader`), or one of the string imports still left, listed below
with why. A new one fails this test."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import grimp
import pytest

pytestmark = pytest.mark.unit

SRC = Path(__file__).parents[1] / "src" / "benchwarmers"
OUR_MODULE = re.compile(r"^(benchwarmers(?:\.\w+)+)(?::\w+)?$")
RESOURCE_CALLS = {"files", "PackageLoader"}
# (naming module, named module): the string imports left, and why.
LEFT = {
    # The routers the app mounts, by name: the dashboard sits above the server, so the
    # server cannot import it; a composition root above both would (issue 38).
    **{
        ("benchwarmers.server.routes", f"benchwarmers.{name}"): "routers by name"
        for name in (
            "server.routes.health",
            "server.routes.openai_chat",
            "server.routes.responses",
            "server.routes.anthropic",
            "server.routes.gemini",
            "server.routes.ollama",
            "server.routes.bench_api",
            "server.routes.quotas",
            "server.routes.budgets",
            "server.routes.bench_ops",
            "server.routes.settings",
            "server.routes.decisions",
            "server.routes.mcp",
            "server.routes.metrics",
            "dashboard.pages",
            "dashboard.api",
            "dashboard.signin",
        )
    },
}


def _strings_naming_modules(path: Path, modules: set[str]) -> list[str]:
    """The string constants in `path` that name a module of ours, but
    docstrings and resource anchors."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    skipped: set[int] = set()
    for node in ast.walk(tree):
        body = getattr(node, "body", None)
        if isinstance(body, list) and body and isinstance(body[0], ast.Expr):
            skipped.add(id(body[0].value))  # a docstring
        if isinstance(node, ast.Call):
            called = node.func.attr if isinstance(node.func, ast.Attribute) else getattr(node.func, "id", "")
            if called in RESOURCE_CALLS:
                skipped.update(id(arg) for arg in node.args)
    named = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in skipped:
            match = OUR_MODULE.match(node.value)
            if match and match.group(1) in modules:
                named.append(match.group(1))
    return named


def test_no_module_of_ours_is_imported_by_a_string_the_graph_cannot_see() -> None:
    graph = grimp.build_graph("benchwarmers")
    modules = set(graph.modules)
    hidden: dict[tuple[str, str], str] = {}
    for path in SRC.rglob("*.py"):
        if "migrations" in path.parts:
            continue
        parts = path.relative_to(SRC.parent).with_suffix("").parts
        module = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
        for named in _strings_naming_modules(path, modules):
            seen = named == module or graph.direct_import_exists(importer=module, imported=named)
            if not seen:
                hidden[(module, named)] = LEFT.get((module, named), "NEW")
    assert {edge: why for edge, why in hidden.items() if why == "NEW"} == {}
    assert set(hidden) == set(LEFT)  # one taken away: take it off the list too
