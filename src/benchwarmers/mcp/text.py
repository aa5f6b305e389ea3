"""The text of each tool's result: what an agent reads (the structured
content carries the same as data).

Written from the HTTP API's JSON shapes (the `bench` object, `/v1/models`
entries, `recorded`), which both backends return, so stdio and HTTP read
the same words. Every seat shows its call id beside its seat label and
alias, so the agent can name the seat and send its verdict from the text
alone.
"""

from __future__ import annotations

from typing import Any


def ask_text(bench: dict[str, Any]) -> str:
    seats = bench.get("seats", [])
    lines = [f"{bench.get('collection', '')} · shape {bench.get('shape', '')} · {len(seats)} seats", ""]
    merged = bench.get("merged")
    if merged:
        lines += _merged_section(merged)
    for seat in seats:
        lines += _seat_section(seat)
    for member in bench.get("leftOff", []):
        lines.append(f"Left off: {member['alias']}: {member['reason']}")
    calls = [s["call"] for s in seats if s.get("call") and s.get("status") in ("ok", "empty")]
    if merged and merged.get("call"):
        calls.append(merged["call"])
    if calls:
        lines += [
            "Verify before acting on any answer. Name every seat (label and model) when you report, "
            "and send a verdict (call id, useful true/false, a short note) for each seat you judged: "
            + ", ".join(calls),
        ]
    return "\n".join(lines).strip() + "\n"


def _seat_section(seat: dict[str, Any]) -> list[str]:
    flag = " · explorer" if seat.get("explorer") else ""
    heading = (
        f"## {seat['seat']} · {seat['alias']} · {seat['status']} · {float(seat.get('seconds', 0)):.1f} s"
        f"{flag} · call {seat.get('call') or '(none)'}"
    )
    if seat["status"] == "ok":
        body = seat.get("content", "").strip()
    elif seat["status"] == "empty":
        body = "(answered with nothing)"
    else:
        until = f" until {seat['freesAt']}" if seat.get("freesAt") else ""
        body = f"({seat['status']}{until}: {seat.get('error') or 'no answer'})"
    return [heading, "", body, ""]


def _merged_section(merged: dict[str, Any]) -> list[str]:
    if merged.get("status") != "ok":
        return [f"(No merged answer: {merged.get('note') or merged.get('error') or 'the merge failed'})", ""]
    lines = [
        f"## Merged · {merged['alias']} · call {merged['call']}",
        "",
        merged.get("content", "").strip(),
        "",
    ]
    for point in merged.get("agreement", []):
        held = ", ".join(point.get("heldBy", [])) or "none"
        against = ", ".join(point.get("contradictedBy", []))
        lines.append(
            f"- {point['point']} (held by {held}" + (f"; contradicted by {against})" if against else ")")
        )
    return lines + ([""] if merged.get("agreement") else [])


def collections_text(listing: list[dict[str, Any]]) -> str:
    if not listing:
        return "No collections you may ask yet (`benchwarmers collection add NAME --member ALIAS ...`).\n"
    lines = []
    for entry in listing:
        purpose = f" — {entry['purpose']}" if entry.get("purpose") else ""
        members = ", ".join(entry.get("members", []))
        lines.append(
            f"{entry['id']}{purpose}\n  members: {members}; seats: {entry.get('seats', '')}; "
            f"reply: {entry.get('reply', 'panel')}"
        )
    return "\n".join(lines) + "\n"


def verdict_text(recorded: dict[str, Any]) -> str:
    said = "useful" if recorded["useful"] else "not useful"
    changed = "" if recorded.get("changed", True) else " (already recorded; nothing changed)"
    note = f" — {recorded['note']}" if recorded.get("note") else ""
    return f"Verdict on {recorded['call']} ({recorded['alias']}): {said}{note}{changed}\n"


def pending_text(pending: list[str], *, checked: int) -> str:
    if not pending:
        return f"No seat waits for a verdict ({checked} call ids checked).\n"
    return (
        f"{len(pending)} seats have no verdict yet: {', '.join(pending)}\n"
        "Send a verdict (useful true/false, a short note) for each seat you judged.\n"
    )
