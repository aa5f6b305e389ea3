"""Call ids in an agent's transcript, for `pending_verdicts`.

A Claude Code transcript is a JSONL file of the session's messages; every
panel the agent asked left its seats' call ids in it (in the `ask` tool's
result text). Any id-shaped string counts: the server then keeps only
those that are answered seats without a verdict, so a stray match costs
nothing. The plugin's Stop hook does the same scan with the standard
library only (it must run where this package is not installed).
"""

from __future__ import annotations

import re
from pathlib import Path

from benchwarmers.core import CALL_ID_PREFIX
from benchwarmers.errors import UserError

# `c_` and 20 URL-safe characters (`calls.log.new_call_id`), standing alone.
CALL_ID = re.compile(r"(?<![A-Za-z0-9_-])" + CALL_ID_PREFIX + r"[A-Za-z0-9_-]{20}(?![A-Za-z0-9_-])")
TRANSCRIPT_SUFFIX = ".jsonl"
# A long session's transcript runs to tens of megabytes; beyond this it is not one.
MAX_TRANSCRIPT_BYTES = 200 * 1024 * 1024


def call_ids_in_text(text: str) -> list[str]:
    """Every call id in `text`, first appearance first, each once."""
    return list(dict.fromkeys(CALL_ID.findall(text)))


def call_ids_in_transcript(path: str) -> list[str]:
    """The call ids in a JSONL transcript file, or a UserError saying why it
    cannot be read. Only `.jsonl` files are read: the tool must not become
    a way to read arbitrary files on the machine it runs on."""
    file = Path(path).expanduser()
    if file.suffix != TRANSCRIPT_SUFFIX:
        raise UserError(f"transcript_path must be a {TRANSCRIPT_SUFFIX} transcript file, not {path!r}")
    try:
        if not file.is_file():
            raise UserError(f"no transcript file at {path!r}")
        if file.stat().st_size > MAX_TRANSCRIPT_BYTES:
            raise UserError(
                f"{path!r} is larger than {MAX_TRANSCRIPT_BYTES // 2**20} MB; pass `calls` instead"
            )
        text = file.read_text(encoding="utf-8", errors="replace")
    except OSError as exc:
        raise UserError(f"cannot read the transcript {path!r}: {exc.strerror or exc}") from None
    return call_ids_in_text(text)
