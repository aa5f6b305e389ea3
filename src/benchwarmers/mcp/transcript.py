"""Call ids in an agent's transcript, for `pending_verdicts`.

A Claude Code transcript is a JSONL file of the session's messages; every
panel the agent asked left its seats' call ids in it (in the `ask` tool's
result text). Any id-shaped string counts: the server then keeps only
those that are answered seats without a verdict, so a stray match costs
nothing. The plugin's Stop hook does the same scan with the standard
library only (it must run where this package is not installed).

A path names a file on the machine that reads it, so reading one is
guarded: only `.jsonl` files, only under the agents' own folders
(`transcript_roots`: Claude Code's and Codex's, or the folders in
`BENCHWARMERS_TRANSCRIPT_DIRS`), symlinks resolved first, at most
`MAX_TRANSCRIPT_BYTES`; a path refused for any of those reasons, missing or
unreadable gets one and the same answer, so the tool tells nobody whether
some file exists. The server's MCP tool reads paths only for its local
owner (`mcp/server.py`), off the event loop.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from pathlib import Path

from benchwarmers.core import CALL_ID_PREFIX, environment
from benchwarmers.errors import UserError

# `c_` and 20 URL-safe characters (`calls.call_ids.new_call_id`), standing alone.
CALL_ID = re.compile(r"(?<![A-Za-z0-9_-])" + CALL_ID_PREFIX + r"[A-Za-z0-9_-]{20}(?![A-Za-z0-9_-])")
TRANSCRIPT_SUFFIX = ".jsonl"
# A long session's transcript runs to tens of megabytes; beyond this it is not one.
MAX_TRANSCRIPT_BYTES = 64 * 1024 * 1024
TRANSCRIPT_DIRS_ENV = environment.TRANSCRIPT_DIRS.name
UNREADABLE = (
    "no readable transcript at that path: it must be a .jsonl file under an agent's own folder "
    "(~/.claude, ~/.codex, or the folders in " + TRANSCRIPT_DIRS_ENV + "); or send `calls` instead"
)


def call_ids_in_text(text: str) -> list[str]:
    """Every call id in `text`, first appearance first, each once."""
    return list(dict.fromkeys(CALL_ID.findall(text)))


def transcript_roots(environ: Mapping[str, str] | None = None) -> list[Path]:
    """The folders transcripts may be read from, resolved."""
    env = os.environ if environ is None else environ
    listed = env.get(TRANSCRIPT_DIRS_ENV, "").strip()
    if listed:
        folders = [Path(p).expanduser() for p in listed.split(os.pathsep) if p.strip()]
    else:
        home = Path.home()
        folders = [
            Path(env.get(environment.CLAUDE_CONFIG_DIR.name) or home / ".claude"),
            Path(env.get(environment.CODEX_HOME.name) or home / ".codex"),
        ]
    return [folder.resolve() for folder in folders]


def call_ids_in_transcript(path: str) -> list[str]:
    """The call ids in a JSONL transcript file under `transcript_roots`, or
    `UserError(UNREADABLE)` (one answer for every reason it cannot be read).
    Blocking file I/O: call it in a thread from async code."""
    try:
        file = Path(path).expanduser().resolve()
        allowed = file.suffix == TRANSCRIPT_SUFFIX and any(file.is_relative_to(r) for r in transcript_roots())
        if not allowed or not file.is_file():
            raise UserError(UNREADABLE)
        with file.open("rb") as handle:
            raw = handle.read(MAX_TRANSCRIPT_BYTES + 1)
    except (OSError, RuntimeError, ValueError):
        raise UserError(UNREADABLE) from None
    if len(raw) > MAX_TRANSCRIPT_BYTES:
        raise UserError(
            f"the transcript is larger than {MAX_TRANSCRIPT_BYTES // 2**20} MB; send `calls` instead"
        )
    return call_ids_in_text(raw.decode("utf-8", errors="replace"))
