"""A reasoning model's leading think block told from its answer (`benchwarmers.reasoning`)."""

from __future__ import annotations

import pytest

from benchwarmers.reasoning import Split, answer_of, split

pytestmark = pytest.mark.unit


# Texts and how they split: the dashboard's reading (`bw.reasoning`) is checked against
# the same table (tests/dashboard/test_browser_reasoning.py).
LEADING = [
    ("<think>\nLet me add.\n</think>\n\nIt is 4.", Split("Let me add.", "It is 4.")),
    ("  \n<think>sum</think>4", Split("sum", "4")),
    ("<thinking>weigh it</thinking>\n\nYes.", Split("weigh it", "Yes.")),
    ("<THINK>loud</THINK> quiet", Split("loud", "quiet")),
    ("\ufeff<think>a</think>b", Split("a", "b")),
    ("<think>\n\n</think>\n\nJust the answer.", Split("", "Just the answer.")),
    # The opening tag left to the chat template: the reasoning starts the text.
    ("Okay, the user wants 2+2.\n</think>\n\nIt is 4.", Split("Okay, the user wants 2+2.", "It is 4.")),
    ("hmm</thinking>fine", Split("hmm", "fine")),
    # A block of one name ends only at its own closing tag.
    ("<thinking>a </think> b</thinking>c", Split("a </think> b", "c")),
    # Cut while it reasoned: all reasoning, no answer.
    ("<think>still going", Split("still going", "", closed=False)),
    ("<thinking>", Split("", "", closed=False)),
]
NONE = [
    "It is 4.",
    "",
    "The tag <think>x</think> marks reasoning.",  # not leading: the answer's own text
    "Close it with `</think>` after the reasoning.",  # quoted, not a closing
    "Say <think>, then </think>.",  # an opening before the closing: an answer about tags
    "<thinker>no</thinker>",
]


@pytest.mark.parametrize(("text", "expected"), LEADING)
def test_a_leading_block_is_reasoning_and_the_rest_the_answer(text: str, expected: Split) -> None:
    assert split(text) == expected
    assert answer_of(text) == expected.answer


@pytest.mark.parametrize("text", NONE)
def test_text_without_a_leading_block_is_all_answer(text: str) -> None:
    assert split(text) == Split(None, text)
    assert answer_of(text) == text
