"""`pending_verdicts` reads a transcript path only as far as it must: never
for a key holder over HTTP (a path names a file on the server), only
`.jsonl` files under the agents' folders, one answer for every refusal (no
existence oracle), a size cap, and the read off the event loop."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from benchwarmers.errors import UserError
from benchwarmers.mcp import transcript
from benchwarmers.mcp.transcript import UNREADABLE, call_ids_in_transcript

from .mcp_support import http_client, make_key, sample_transcript, tool_text

ID = "c_" + "a" * 20


def _refusal(path: Path | str) -> str:
    with pytest.raises(UserError) as caught:
        call_ids_in_transcript(str(path))
    return str(caught.value)


def test_every_refusal_reads_the_same(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, counts: Callable[[str], None]
) -> None:
    root = tmp_path / "agent"
    root.mkdir()
    monkeypatch.setenv(transcript.TRANSCRIPT_DIRS_ENV, str(root))
    outside = tmp_path / "secret.jsonl"
    outside.write_text(f'{{"text": "{ID}"}}\n')
    (root / "notes.txt").write_text(ID)
    (root / "link.jsonl").symlink_to(outside)
    (root / "dir.jsonl").mkdir()
    refusals = {
        "outside the folders": _refusal(outside),
        "missing outside": _refusal(tmp_path / "missing.jsonl"),
        "missing inside": _refusal(root / "missing.jsonl"),
        "not .jsonl": _refusal(root / "notes.txt"),
        "symlink out": _refusal(root / "link.jsonl"),
        "a folder": _refusal(root / "dir.jsonl"),
        "dot-dot": _refusal(f"{root}/../secret.jsonl"),
        "system file": _refusal("/etc/passwd"),
    }
    counts(f"transcript refusals: {len(refusals)} cases, {len(set(refusals.values()))} distinct answer")
    assert set(refusals.values()) == {UNREADABLE}
    inside = root / "session.jsonl"
    inside.write_text(f'{{"text": "{ID}"}}\n')
    assert call_ids_in_transcript(str(inside)) == [ID]


def test_a_transcript_over_the_cap_is_refused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(transcript, "MAX_TRANSCRIPT_BYTES", 1000)
    big = tmp_path / "big.jsonl"
    big.write_text(ID + " " + "x" * 2000)
    assert "larger than" in _refusal(big)


async def test_a_key_holder_over_http_never_has_a_path_read(bench_server: Any, tmp_path: Path) -> None:
    with bench_server() as server:
        key = make_key(server.home, "laptop", ("trio",))
        path = sample_transcript(tmp_path / "session.jsonl", ID)
        async with http_client(server.url + "/mcp", key=key, mode="legacy") as client:
            result = await client.call_tool("pending_verdicts", {"transcript_path": str(path)})
            assert result.is_error and "read only for the server's local owner" in tool_text(result)
            by_calls = await client.call_tool("pending_verdicts", {"calls": [ID]})
            assert not by_calls.is_error, tool_text(by_calls)
