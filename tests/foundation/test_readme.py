"""The README stays true to the code: every `benchwarmers ...` line in its
code blocks names a command that exists, with options that command takes."""

from __future__ import annotations

import re
import shlex
from pathlib import Path
from typing import Any

import pytest
from typer.main import get_command

from benchwarmers.cli.main import app

README = Path(__file__).parents[2] / "README.md"


def _command_lines() -> list[str]:
    blocks = re.findall(r"```sh\n(.*?)```", README.read_text(encoding="utf-8"), flags=re.DOTALL)
    lines = "\n".join(blocks).replace("\\\n", " ").splitlines()
    found = []
    for line in lines:
        words = shlex.split(line, comments=True)
        while "benchwarmers" in words:  # `pip install . && benchwarmers serve`
            words = words[words.index("benchwarmers") + 1 :]
            found.append(shlex.join(words))
    return found


def _resolve(words: list[str]) -> tuple[Any, list[str]]:
    command: Any = get_command(app)
    rest = list(words)
    while rest and hasattr(command, "commands") and rest[0] in command.commands:
        command = command.commands[rest.pop(0)]
    return command, rest


def test_readme_shows_commands() -> None:
    assert len(_command_lines()) >= 15


@pytest.mark.parametrize("line", _command_lines())
def test_readme_command_exists(line: str) -> None:
    command, rest = _resolve(shlex.split(line))
    assert not hasattr(command, "commands"), f"{line!r}: no such subcommand"
    options = {opt for param in command.params for opt in (*param.opts, *param.secondary_opts)}
    for word in rest:
        if word.startswith("-"):
            assert word in options, f"{line!r}: {command.name} has no option {word}"
