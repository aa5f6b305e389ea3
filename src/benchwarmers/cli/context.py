"""What a command needs around it: the console it prints to, the core
services opened for the length of one command (as the owner), and a way to
read a secret.

    def list_things() -> None:
        rows = with_core(lambda core: core.admin.models())
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
import sys
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Annotated, Any, TypeVar

import typer
from rich.console import Console

from benchwarmers.cli.errors import ReaderGone, print_note, stop_writing
from benchwarmers.core import POINTER_FILE, Core, home_and_source
from benchwarmers.errors import UserError

T = TypeVar("T")


class _Console(Console):
    def on_broken_pipe(self) -> None:
        """The reader left (`| head`): an ordinary exception, so async work
        below unwinds and closes as usual (rich's own SystemExit does not)."""
        self.quiet = True
        stop_writing()
        raise ReaderGone


# Not a terminal (a pipe, a file, a test): lines are not wrapped at 80
# columns, so a message, a path or a command stays on one line.
console = _Console(highlight=False, soft_wrap=not sys.stdout.isatty())


class Verbosity:
    """`benchwarmers --verbose`: say more on stderr (the data folder used)."""

    on = False
    home_said = False


def say_data_folder() -> None:
    """Once per command, on stderr: the data folder it reads and writes, and
    what chose it. Always when a `.benchwarmers-home` file in the working
    directory chose it (a command run from another project's folder reads
    that project's bench); else with `--verbose`."""
    if Verbosity.home_said:
        return
    Verbosity.home_said = True
    folder, source = home_and_source()
    if Verbosity.on or source.endswith(POINTER_FILE):
        print_note(f"data folder {folder} (from {source})")


def with_core(work: Callable[[Core], Awaitable[T]], home: Path | None = None) -> T:
    """Open the core services (data folder and database from the
    environment unless `home` is given), run `work` with them, close them
    (letting any panel still running finish first)."""
    if home is None:
        say_data_folder()

    async def main() -> T:
        async with Core.open(home=home) as core:
            return await work(core)

    return asyncio.run(main())


def read_secret(prompt: str) -> str:
    """A key typed without echo at a terminal, or the first line of standard
    input when it is piped (`pass show hub | benchwarmers endpoint add ... --key`)."""
    if sys.stdin.isatty():
        secret: str = typer.prompt(prompt, hide_input=True)
    else:
        secret = sys.stdin.readline()
    secret = secret.strip()
    if not secret:
        raise UserError("no key given")
    return secret


# `--json` on every listing command: the rows for scripts, in place of the table.
JsonFlag = Annotated[bool, typer.Option("--json", help="Print the list as JSON (for scripts).")]


def print_json(data: Any) -> None:
    """Rows as JSON on stdout: dataclasses as objects (their fields),
    times as ISO 8601 in UTC, paths as strings."""
    typer.echo(json.dumps(_plain(data), indent=2, ensure_ascii=False))


def _plain(value: Any) -> Any:
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: _plain(getattr(value, f.name)) for f in dataclasses.fields(value)}
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple | set | frozenset):
        return [_plain(v) for v in value]
    if isinstance(value, datetime):
        return (value if value.tzinfo else value.replace(tzinfo=UTC)).isoformat()
    if isinstance(value, Path):
        return str(value)
    return value
