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
# (naming module, named module): the string imports left, and why. None are: the
# routers are imported by the composition root (`assembly.py`), the adapters by `providers/kinds.py`.
LEFT: dict[tuple[str, str], str] = {}


def _strings_naming_modules(path: Path, modules: set[str]) -> list[str]:
    """The string constants in `path` that name a module of ours, but
    docstrings and resource anchors."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    skipped: set[int] = set()
    strings: list[ast.Constant] = []
    for node in ast.walk(tree):  # once: walking the tree costs more than parsing it
        if isinstance(node, ast.Constant):
            if isinstance(node.value, str):
                strings.append(node)
            continue
        body = getattr(node, "body", None)
        if isinstance(body, list) and body and isinstance(body[0], ast.Expr):
            skipped.add(id(body[0].value))  # a docstring
        if isinstance(node, ast.Call):
            called = node.func.attr if isinstance(node.func, ast.Attribute) else getattr(node.func, "id", "")
            if called in RESOURCE_CALLS:
                skipped.update(id(arg) for arg in node.args)
    named = []
    for node in strings:
        if id(node) not in skipped:
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
