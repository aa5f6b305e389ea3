"""What a command needs around it: the console it prints to, the core
services opened for the length of one command (as the owner), and a way to
read a secret.

    def list_things() -> None:
        rows = with_core(lambda core: core.admin.models())
"""

from __future__ import annotations

import asyncio
import sys
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import TypeVar

import typer
from rich.console import Console

from benchwarmers.core import Core
from benchwarmers.errors import UserError

T = TypeVar("T")

console = Console(highlight=False)


def with_core(work: Callable[[Core], Awaitable[T]], home: Path | None = None) -> T:
    """Open the core services (data folder and database from the
    environment unless `home` is given), run `work` with them, close them
    (letting any panel still running finish first)."""

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
