"""The README and docs stay true to the code: every `benchwarmers ...` line in
their shell blocks names a command that exists, with options that command
takes; and docs/cli.md describes every command and every option there is."""

from __future__ import annotations

import functools
import re
import shlex
from pathlib import Path
from typing import Any

import pytest
from typer.main import get_command

from benchwarmers.cli.main import app

pytestmark = pytest.mark.unit

ROOT = Path(__file__).parents[2]
README = ROOT / "README.md"
CLI_DOC = ROOT / "docs" / "cli.md"
PAGES = [README, *sorted((ROOT / "docs").glob("*.md"))]


@functools.cache
def _cli() -> Any:
    """The click tree typer builds from `app`, built once (a build costs more than a test)."""
    return get_command(app)


def _command_lines(page: Path) -> list[str]:
    blocks = re.findall(r"```sh\n(.*?)```", page.read_text(encoding="utf-8"), flags=re.DOTALL)
    lines = "\n".join(blocks).replace("\\\n", " ").splitlines()
    top_level = set(_cli().commands)
    found = []
    for line in lines:
        words = shlex.split(line, comments=True)
        for i, word in enumerate(words):
            # The command where it starts a line or follows `&&`, `;`, `|`, `--`,
            # or where a command name follows it; not a server or service *named*
            # benchwarmers (`claude mcp add ... benchwarmers URL`, `compose exec benchwarmers`).
            starts = i == 0 or words[i - 1] in ("&&", ";", "|", "--")
            if word == "benchwarmers" and (starts or (words[i + 1 : i + 2] and words[i + 1] in top_level)):
                found.append(shlex.join(words[i + 1 :]))
    return found


def _all_lines() -> list[tuple[str, str]]:
    return [(page.relative_to(ROOT).as_posix(), line) for page in PAGES for line in _command_lines(page)]


def _resolve(words: list[str]) -> tuple[Any, list[str]]:
    command: Any = _cli()
    rest = list(words)
    while rest and hasattr(command, "commands") and rest[0] in command.commands:
        command = command.commands[rest.pop(0)]
    return command, rest


def _leaf_commands() -> list[tuple[str, Any]]:
    found: list[tuple[str, Any]] = []

    def walk(command: Any, path: list[str]) -> None:
        if hasattr(command, "commands"):
            for name, sub in command.commands.items():
                walk(sub, [*path, name])
        else:
            found.append((" ".join(path), command))

    walk(_cli(), [])
    return found


def test_readme_shows_commands() -> None:
    assert len(_command_lines(README)) >= 15


@pytest.mark.parametrize(("page", "line"), _all_lines())
def test_shown_command_exists(page: str, line: str) -> None:
    command, rest = _resolve(shlex.split(line))
    assert not hasattr(command, "commands"), f"{page}: {line!r}: no such subcommand"
    options = {opt for param in command.params for opt in (*param.opts, *param.secondary_opts)}
    for word in rest:
        if word.startswith("-"):
            assert word in options, f"{page}: {line!r}: {command.name} has no option {word}"


@pytest.mark.parametrize(("path", "command"), _leaf_commands(), ids=lambda v: v if isinstance(v, str) else "")
def test_cli_doc_describes_every_option(path: str, command: Any) -> None:
    """docs/cli.md has a heading per command and names each of its options
    in that command's section."""
    text = CLI_DOC.read_text(encoding="utf-8")
    heading = re.search(rf"^### `benchwarmers {re.escape(path)}\b[^\n]*$", text, flags=re.MULTILINE)
    assert heading, f"docs/cli.md has no section for `benchwarmers {path}`"
    following = text[heading.end() :]
    section = (
        following[: m.start()] if (m := re.search(r"^#{2,3} ", following, flags=re.MULTILINE)) else following
    )
    for param in command.params:
        for opt in (*param.opts, *param.secondary_opts):
            if opt.startswith("-") and opt not in ("--help", "-h"):
                assert f"`{opt}`" in section, f"docs/cli.md: `benchwarmers {path}` does not describe {opt}"


def test_cli_doc_names_no_missing_command() -> None:
    documented = re.findall(
        r"^### `benchwarmers ([a-z -]+?)(?: [A-Z\[]|`)", CLI_DOC.read_text(), flags=re.MULTILINE
    )
    real = {path for path, _ in _leaf_commands()}
    unknown = set(documented) - real
    assert not unknown, f"docs/cli.md documents commands that do not exist: {unknown}"
