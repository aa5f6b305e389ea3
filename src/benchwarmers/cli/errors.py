"""Every error the CLI meets ends as one clear line on stderr and a non-zero
exit: our own errors, usage mistakes, files we cannot read, a store we cannot
open. A traceback is for us, not for the person at the terminal; set
`BENCHWARMERS_DEBUG=1` to get it anyway.

A reader that goes away (`benchwarmers ask ... | head`) is not an error:
the command stops printing, lets its work finish (a panel's seats are
still recorded) and exits 0 without a word.

`OneLineErrors` is the app's group class: it runs the command line in
click's non-standalone mode and turns whatever escapes into that line, so it
covers every command group registered under the app, and typer's CliRunner
sees the same output a terminal does.
"""

from __future__ import annotations

import os
import re
import sys
from collections.abc import Sequence
from typing import Any

from rich.console import Console
from rich.text import Text
from sqlalchemy.exc import SQLAlchemyError
from typer import Abort, TyperException
from typer.core import TyperGroup

from benchwarmers.core import environment
from benchwarmers.errors import BenchwarmersError

DEBUG_ENV = environment.DEBUG.name
_stderr = Console(stderr=True, soft_wrap=True, highlight=False)

# C0 controls but tab and newline, DEL and C1: a terminal acts on them (ESC
# starts a sequence that may clear the screen, hide text or, OSC 52, write the
# clipboard; CSI is C1's ESC[), so a model's or a provider's text (an answer, an
# upstream's error in a probe or a one-line error) never passes one through.
_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")


def as_text(text: str) -> str:
    """A model's or a provider's words for the terminal: each control
    character shown as a mark naming it (`⟨U+001B⟩`), a line ending in CR LF
    ending as any other."""
    return _CONTROL.sub(lambda found: f"⟨U+{ord(found.group()):04X}⟩", text.replace("\r\n", "\n"))


class ReaderGone(Exception):
    """Standard output's reader closed the pipe; nothing more will be read."""


def stop_writing() -> None:
    """Point standard output at /dev/null, so the interpreter's last flush
    cannot fail again on the closed pipe."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, sys.stdout.fileno())
    os.close(devnull)


class OneLineErrors(TyperGroup):
    def main(  # type: ignore[override]
        self,
        args: Sequence[str] | None = None,
        prog_name: str | None = None,
        complete_var: str | None = None,
        standalone_mode: bool = True,
        **extra: Any,
    ) -> Any:
        if not standalone_mode:
            return super().main(args, prog_name, complete_var, standalone_mode=False, **extra)
        try:
            outcome = super().main(args, prog_name, complete_var, standalone_mode=False, **extra)
        except SystemExit:
            raise
        except (ReaderGone, BrokenPipeError):
            stop_writing()
            sys.exit(0)
        except BaseException as exc:
            if os.environ.get(DEBUG_ENV) and not isinstance(exc, TyperException | Abort):
                raise
            if type(exc).__name__ == "NoArgsIsHelpError":  # typer already printed the help
                sys.exit(getattr(exc, "exit_code", 2))
            message, code = describe(exc)
            print_error(message)
            sys.exit(code)
        sys.exit(outcome if isinstance(outcome, int) else 0)


def describe(exc: BaseException) -> tuple[str, int]:
    """The line to show for an exception, and the exit code."""
    if isinstance(exc, TyperException):  # typer's (vendored click's) usage and parameter errors
        ctx = getattr(exc, "ctx", None)
        hint = f" (see '{ctx.command_path} --help')" if ctx is not None else ""
        return exc.format_message() + hint, exc.exit_code
    if isinstance(exc, Abort | KeyboardInterrupt):
        return "aborted", 130
    if isinstance(exc, BenchwarmersError):
        return str(exc), 1
    if isinstance(exc, SQLAlchemyError):
        cause = getattr(exc, "orig", None) or exc
        return f"store error: {cause}", 1
    if isinstance(exc, OSError):
        where = f"{exc.filename}: " if exc.filename else ""
        return f"{where}{(exc.strerror or str(exc)).lower()}", 1
    return f"internal error: {type(exc).__name__}: {exc} (set {DEBUG_ENV}=1 for the traceback)", 1


def print_error(message: str) -> None:
    line = as_text(" ".join(message.split()))  # one line, whatever the message held
    _stderr.print(Text.assemble(("error: ", "bold red"), line))


def print_note(message: str) -> None:
    """A plain line on stderr (what a command used), apart from its output."""
    _stderr.print(Text(as_text(message)))


def print_warning(message: str) -> None:
    _stderr.print(Text.assemble(("warning: ", "bold yellow"), as_text(" ".join(message.split()))))
