"""The text of each tool's result: what an agent reads (the structured
content carries the same as data).

Written from what both backends return (a panel as the typed
`PanelReply`; `/v1/models` entries and `recorded` as the HTTP API's JSON),
so stdio and HTTP read the same words. Every seat shows its call id beside
its seat label and alias, so the agent can name the seat and send its
verdict from the text alone.

An answer's leading think block (`reasoning.split`, the one reading the
CLI, the dashboard and the merger share) is left out of the text, one line
saying how long it was in its place: thousands of characters of a model's
working would fill the agent's context and are not what the seat answered.
The structured content's `bench` object keeps the text as written, as the
gateway's replies do (docs/formats.md, "A think block in the answer").
"""

from __future__ import annotations

from typing import Any

from benchwarmers.formats.base import model_name
from benchwarmers.reasoning import split
from benchwarmers.types import Merged, PanelReply, Seat


def ask_text(reply: PanelReply) -> str:
    seats, merged = reply.seats, reply.merged
    lines = [f"{model_name(reply.collection)} · shape {reply.shape} · {len(seats)} seats", ""]
    if merged is not None:
        lines += _merged_section(merged)
    for seat in seats:
        lines += _seat_section(seat)
    for member in reply.left_off:
        lines.append(f"Left off: {member.alias}: {member.reason}")
    calls = [s.call for s in seats if s.call and s.status in ("ok", "empty")]
    if merged is not None and merged.call and merged.call not in calls:  # a seat's answer may stand in
        calls.append(merged.call)
    if calls:
        lines += [
            "Verify before acting on any answer. Name every seat (label and model) when you report, "
            "and send a verdict (call id, useful true/false, a short note) for each seat you judged: "
            + ", ".join(calls),
        ]
    if sum(bool(s.call) and s.status in ("ok", "empty") for s in seats) >= 2:  # two answers: a pair says more
        lines.append(
            "Or compare two seats of this ask in one verdict: `better` and `worse` (call ids), "
            "`tie` or `both_bad` (two call ids), or `best` (one call id: better than every other seat "
            "that answered)."
        )
    return "\n".join(lines).strip() + "\n"


def _seat_section(seat: Seat) -> list[str]:
    flag = " · explorer" if seat.explorer else ""
    heading = (
        f"## {seat.seat} · {seat.alias} · {seat.status} · {seat.seconds:.1f} s"
        f"{flag} · call {seat.call or '(none)'}"
    )
    if seat.status == "ok":
        return [heading, "", *_answer(seat.content)]
    if seat.status == "empty":
        return [heading, "", "(answered with nothing)", ""]
    until = f" until {seat.frees_at}" if seat.frees_at else ""
    return [heading, "", f"({seat.status}{until}: {seat.error or 'no answer'})", ""]


def _answer(text: str) -> list[str]:
    """An answer's lines as the agent reads them: its leading think block
    left out, one line in its place saying how long it was, in the CLI's
    words (`reasoning folded`); an answer without one as it is."""
    reasoning, answer, closed = split(text)
    if reasoning is None:
        return [text.strip(), ""]
    answer = answer.strip()
    cut = "" if closed else ", cut before it ended"
    after = "" if answer else "; no answer after it"
    note = f"(reasoning folded: {len(reasoning):,} characters left out{cut}{after})"
    return [note, "", answer, ""] if answer else [note, ""]


def _merged_section(merged: Merged) -> list[str]:
    if merged.status != "ok":
        return [f"(No merged answer: {merged.note or merged.error or 'the merge failed'})", ""]
    lines = [f"## Merged · {merged.alias} · call {merged.call}", ""]
    if merged.note:  # a merge after others failed, or a seat's answer standing in for one
        lines += [f"({merged.note})", ""]
    lines += _answer(merged.content)
    for point in merged.agreement:
        held = ", ".join(point.held_by) or "none"
        against = ", ".join(point.contradicted_by)
        lines.append(
            f"- {point.point} (held by {held}" + (f"; contradicted by {against})" if against else ")")
        )
    return lines + ([""] if merged.agreement else [])


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
    if "pairs" in recorded:
        return "".join(pair_text(pair) for pair in recorded["pairs"])
    said = "useful" if recorded["useful"] else "not useful"
    changed = "" if recorded.get("changed", True) else " (already recorded; nothing changed)"
    note = f" — {recorded['note']}" if recorded.get("note") else ""
    return f"Verdict on {recorded['call']} ({recorded['alias']}): {said}{note}{changed}\n"


def pair_text(pair: dict[str, Any]) -> str:
    """One recorded pair on a line: `c_1 (alpha) better than c_2 (beta)`."""
    between = {"better": "better than", "tie": "as good as", "both_bad": "and, both not useful,"}[
        pair["outcome"]
    ]
    changed = "" if pair.get("changed", True) else " (already recorded; nothing changed)"
    note = f" — {pair['note']}" if pair.get("note") else ""
    better, worse = f"{pair['better']} ({pair['betterAlias']})", f"{pair['worse']} ({pair['worseAlias']})"
    return f"{better} {between} {worse}{note}{changed}\n"


def pending_text(pending: list[str], *, checked: int) -> str:
    if not pending:
        return f"No seat waits for a verdict ({checked} call ids checked).\n"
    return (
        f"{len(pending)} seats have no verdict yet: {', '.join(pending)}\n"
        "Send a verdict (useful true/false, a short note) for each seat you judged.\n"
    )
