"""The `ask` tool's text as an agent reads it: a reasoning model's leading
think block is left out, one line saying how long it was in its place (as
`benchwarmers ask` prints it), while the structured content's `bench`
object keeps the text as the model wrote it, as the gateway's replies do."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from benchwarmers.mcp.text import ask_text
from benchwarmers.testing import script
from benchwarmers.testing.script import FakeModel
from benchwarmers.types import Merged, PanelReply, Seat

from .mcp_support import http_client, stdio_session, tool_text

THINKING = "The capital of France: Lyon? No, Paris; surely Paris."
MERGER_THINKING = "Both seats say Paris; one reasoned its way there."
DUO = {"duo": {"members": ["plain", "r1"], "merger": "judge"}}


def reasoning_duo() -> list[FakeModel]:
    """A seat without a block, a seat with `<think>`, a merger with `<thinking>`."""
    return [
        FakeModel("plain", answer="It is Paris."),
        FakeModel("r1", answer="Paris.", thinking=THINKING, think_tag="think"),
        FakeModel(
            "judge",
            answer=script.merger("Merged: Paris.", script.PLAIN_REPORT),
            thinking=MERGER_THINKING,
            think_tag="thinking",
        ),
    ]


def section(text: str, heading: str) -> str:
    """The body under the `## ` heading that holds `heading`, up to the next
    heading or the lines on judging that follow the last seat."""
    start = next(i for i, line in enumerate(text.split("\n")) if line.startswith("## ") and heading in line)
    lines = text.split("\n")[start + 1 :]
    ends = ("## ", "Verify before acting")
    end = next((i for i, line in enumerate(lines) if line.startswith(ends)), len(lines))
    return "\n".join(lines[:end]).strip()


def folded_as_written(text: str, bench: dict[str, Any]) -> None:
    """The text folds each block; the plain seat is unchanged; `bench` is as written."""
    assert section(text, " · r1 · ok") == f"(reasoning folded: {len(THINKING)} characters left out)\n\nParis."
    assert section(text, " · plain · ok") == "It is Paris."
    merged = section(text, "Merged · judge")
    assert merged == f"(reasoning folded: {len(MERGER_THINKING)} characters left out)\n\nMerged: Paris."
    assert "surely" not in text and "one reasoned" not in text and "think>" not in text
    seats = {seat["alias"]: seat["content"] for seat in bench["seats"]}
    assert seats == {"plain": "It is Paris.", "r1": f"<think>\n{THINKING}\n</think>\n\nParis."}
    assert bench["merged"]["content"] == f"<thinking>\n{MERGER_THINKING}\n</thinking>\n\nMerged: Paris."


async def test_the_ask_tool_folds_a_think_block_over_http(bench_server: Any) -> None:
    """An agent calling `ask` read every reasoning seat's working whole,
    thousands of characters of it in its context; the CLI, the dashboard
    and the merger already read past it."""
    with bench_server(reasoning_duo(), DUO) as server:
        async with http_client(server.url + "/mcp") as client:
            asked = await client.call_tool("ask", {"collection": "duo", "prompt": "capital?", "merged": True})
    assert not asked.is_error, tool_text(asked)
    folded_as_written(tool_text(asked), asked.structured_content["bench"])


async def test_the_ask_tool_folds_a_think_block_over_stdio(bench_server: Any, tmp_path: Path) -> None:
    """`benchwarmers mcp` reads the server's `bench` object back (the text as
    written) and writes the same folded text."""
    with bench_server(reasoning_duo(), DUO) as server:
        async with stdio_session(server.url, tmp_path / "stderr.log") as client:
            asked = await client.call_tool("ask", {"collection": "duo", "prompt": "capital?", "merged": True})
    assert not asked.is_error, tool_text(asked)
    folded_as_written(tool_text(asked), asked.structured_content["bench"])


def one_seat(content: str) -> str:
    """The text under a lone seat's heading, its answer `content`."""
    seat = Seat("c_r1", "Seat 1", "r1", "ok", 1.0, content)
    return section(ask_text(PanelReply("c", "chat", (seat,))), "r1")


@pytest.mark.parametrize(
    ("content", "shown"),
    [
        # No opening tag: the reasoning began with the text and `</think>` ends it.
        ("working it out\n</think>\n\n42", "(reasoning folded: 14 characters left out)\n\n42"),
        # Cut while it reasoned: all of it is reasoning and nothing is the answer.
        (
            "<think>\nstill going",
            "(reasoning folded: 11 characters left out, cut before it ended; no answer after it)",
        ),
        ("<think>done</think>", "(reasoning folded: 4 characters left out; no answer after it)"),
        (f"<THINK>{'x' * 12_000}</THINK>42", "(reasoning folded: 12,000 characters left out)\n\n42"),
    ],
)
def test_every_form_of_a_leading_block_is_folded_by_the_one_rule(content: str, shown: str) -> None:
    assert one_seat(content) == shown


@pytest.mark.parametrize(
    "content",
    ["It is 42.", "Write `</think>` to close it.", "An answer, then <think>not leading</think> text."],
)
def test_an_answer_with_no_leading_block_is_unchanged(content: str) -> None:
    assert one_seat(content) == content
    seat = Seat("c_r1", "Seat 1", "r1", "ok", 1.0, content)
    merged = Merged("c_m", "judge", "ok", 1.0, content)
    assert section(ask_text(PanelReply("c", "merged", (seat,), merged=merged)), "Merged · judge") == content
