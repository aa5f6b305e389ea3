"""Claude Code `Stop` hook: remind the agent, once, of panel seats it was
shown and has not judged.

Reads the hook's JSON on stdin (`transcript_path`, `stop_hook_active`),
finds the call ids in the session's transcript, asks the Benchwarmers
server which of them are answered seats without a verdict (`POST
/bench/pending`), and prints `{"decision": "block", "reason": ...}` naming
the ones not yet reminded of, so the agent sends its verdicts before it
stops. Each seat is reminded of once per session (remembered in a small
state file); when `stop_hook_active` is true (the agent is already
continuing because of a Stop hook) it says nothing, so it can never loop.

Standard library only: it runs wherever Claude Code runs, with or without
the benchwarmers package. Any failure (no server, unreadable transcript)
is silent: a reminder is never worth blocking the agent's work.

Environment: BENCHWARMERS_URL (default http://127.0.0.1:8122),
BENCHWARMERS_KEY (a gateway key, if keys are on), CLAUDE_PLUGIN_DATA
(where state is kept; else the temp folder).
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import sys
import tempfile
import urllib.request
from pathlib import Path
from typing import Any

DEFAULT_URL = "http://127.0.0.1:8122"
TIMEOUT_SECONDS = 8
# A call id: `c_` and 20 URL-safe characters (benchwarmers.calls.log.new_call_id).
CALL_ID = re.compile(r"(?<![A-Za-z0-9_-])c_[A-Za-z0-9_-]{20}(?![A-Za-z0-9_-])")


def main() -> int:
    try:
        event = json.load(sys.stdin)
    except ValueError:
        return 0
    if not isinstance(event, dict) or event.get("stop_hook_active"):
        return 0
    transcript = event.get("transcript_path")
    if not isinstance(transcript, str) or not transcript:
        return 0
    try:
        text = Path(transcript).expanduser().read_text(encoding="utf-8", errors="replace")
    except OSError:
        return 0
    calls = list(dict.fromkeys(CALL_ID.findall(text)))
    if not calls:
        return 0
    try:
        pending = ask_pending(calls)
    except (OSError, ValueError, KeyError, TypeError):
        return 0
    state = state_file(transcript)
    reminded = read_reminded(state)
    fresh = [call for call in pending if call not in reminded]
    if not fresh:
        return 0
    write_reminded(state, reminded | set(fresh))
    print(json.dumps({"decision": "block", "reason": reminder(fresh)}))
    return 0


def ask_pending(calls: list[str]) -> list[str]:
    url = (os.environ.get("BENCHWARMERS_URL", "").strip() or DEFAULT_URL).rstrip("/") + "/bench/pending"
    headers = {"content-type": "application/json"}
    key = os.environ.get("BENCHWARMERS_KEY", "").strip()
    if key:
        headers["authorization"] = f"Bearer {key}"
    request = urllib.request.Request(url, data=json.dumps({"calls": calls}).encode(), headers=headers)
    with urllib.request.urlopen(request, timeout=TIMEOUT_SECONDS) as reply:
        body: dict[str, Any] = json.load(reply)
    return [call for call in body["pending"] if isinstance(call, str)]


def reminder(calls: list[str]) -> str:
    return (
        f"Benchwarmers: {len(calls)} panel seat(s) you were shown have no verdict yet: {', '.join(calls)}. "
        "For each seat whose answer you read and judged, call the benchwarmers `verdict` tool with its "
        "call id, useful true or false, and a short note on why; skip seats you did not use. "
        "This reminder comes once."
    )


def state_file(transcript: str) -> Path:
    data = os.environ.get("CLAUDE_PLUGIN_DATA", "").strip()
    folder = Path(data) if data else Path(tempfile.gettempdir()) / "benchwarmers"
    digest = hashlib.sha256(transcript.encode()).hexdigest()[:24]
    return folder / f"reminded-{digest}.json"


def read_reminded(state: Path) -> set[str]:
    try:
        stored = json.loads(state.read_text())
    except (OSError, ValueError):
        return set()
    return {call for call in stored if isinstance(call, str)} if isinstance(stored, list) else set()


def write_reminded(state: Path, calls: set[str]) -> None:
    try:
        state.parent.mkdir(parents=True, exist_ok=True)
        state.write_text(json.dumps(sorted(calls)))
    except OSError:
        pass  # without state the reminder may repeat next stop; never fail the hook


if __name__ == "__main__":
    sys.exit(main())
