"""Help text in the words docs/cli.md uses: `--port N`, `--host TEXT`, and
nothing after a flag or an argument's name.

typer labels each parameter with its Python type (`<bool>` after `--demo`
and `--help`, `<str>` after `--host` and after every argument), which reads
as something to type. click's convention, which the docs follow, is a
metavar for a value and none for a flag. typer draws that column from
`display_type_rich` on its own option and argument classes, and builds the
help option itself, so the one place to change it for every command is
there: `use_plain_metavars()`, called once by `cli.main` before any command
is built. A metavar a command chose itself (`--endpoint NAME BASE_URL`)
is kept.
"""

from __future__ import annotations

from typing import Any

from typer.core import TyperArgument, TyperOption

_BY_TYPE = {"str": "TEXT", "list[str]": "TEXT", "int": "N", "float": "N", "Path": "PATH"}


def _option_label(option: TyperOption, ctx: Any) -> str | None:
    if option.metavar is not None:
        return option.metavar
    if option.is_flag:
        return None
    bare = option.bare_type()  # typer's name of the annotation: str, int, list[str], Path
    label = _BY_TYPE.get(bare, bare.upper())
    return label + "..." if option.nargs != 1 else label


def _argument_label(argument: TyperArgument, ctx: Any) -> str | None:
    return None  # the argument's name already says what goes there


def use_plain_metavars() -> None:
    TyperOption.display_type_rich = _option_label  # type: ignore[method-assign,assignment]
    TyperArgument.display_type_rich = _argument_label  # type: ignore[method-assign,assignment]
