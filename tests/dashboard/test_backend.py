"""The Ask page's body read by the backend: the shared history
(`messages`) and each seat's own thread (`threads`), refused naming the field."""

from __future__ import annotations

from typing import Any

import pytest

from benchwarmers.dashboard.backend import conversation, threads
from benchwarmers.dashboard.fields import FieldError

pytestmark = pytest.mark.unit

SEATS = ("alpha", "beta")


def said(thread: tuple[Any, ...]) -> list[tuple[str, str]]:
    return [(m.role, m.text) for m in thread]


def test_each_seat_s_thread_is_its_turns_then_the_question() -> None:
    body = {
        "prompt": "Second?",
        "messages": [{"role": "user", "content": "First?"}, {"role": "assistant", "content": "picked"}],
        "threads": {
            "alpha": [{"role": "user", "content": "First?"}, {"role": "assistant", "content": "alpha's"}],
            "beta": [{"role": "user", "content": "First?"}, {"role": "assistant", "content": "beta's"}],
        },
    }
    assert said(conversation(body)) == [("user", "First?"), ("assistant", "picked"), ("user", "Second?")]
    own = dict(threads(body, SEATS))
    assert said(own["alpha"]) == [("user", "First?"), ("assistant", "alpha's"), ("user", "Second?")]
    assert said(own["beta"]) == [("user", "First?"), ("assistant", "beta's"), ("user", "Second?")]
    hash(threads(body, SEATS))  # an `Ask` holds it: frozen and hashable


@pytest.mark.parametrize("given", [None, {}])
def test_no_threads_is_none(given: object) -> None:
    assert threads({"prompt": "x", "threads": given}, SEATS) == ()
    assert threads({"prompt": "x"}, ()) == ()


@pytest.mark.parametrize(
    ("given", "seats", "says"),
    [
        ([], SEATS, "threads must be an object"),
        ("alpha", SEATS, "threads must be an object"),
        ({"gamma": []}, SEATS, "threads name seats not asked: gamma (the seats asked are alpha, beta)"),
        ({"alpha": []}, (), "threads name seats not asked: alpha (no seats were named (seats))"),
        ({"alpha": "First?"}, SEATS, 'threads["alpha"] must be a list of {"role", "content"}'),
        ({"alpha": [{"role": "system", "content": "x"}]}, SEATS, 'threads["alpha"][0] must be'),
        ({"alpha": [{"role": "user", "content": " "}]}, SEATS, 'threads["alpha"][0] must be'),
        ({"alpha": [{"role": "user"}]}, SEATS, 'threads["alpha"][0] must be'),
        ({"beta": [{"role": "user", "content": "x"}, "no"]}, SEATS, 'threads["beta"][1] must be'),
    ],
)
def test_a_wrong_thread_is_refused_naming_threads(given: object, seats: tuple[str, ...], says: str) -> None:
    with pytest.raises(FieldError) as refused:
        threads({"prompt": "Second?", "threads": given}, seats)
    assert refused.value.field == "threads" and refused.value.status == 400
    assert says in str(refused.value)


def test_a_thread_ends_with_the_user_s_turn_as_messages_do() -> None:
    """Without a `prompt`, the question is the history's last turn: a
    thread whose last turn is an answer is refused."""
    body = {
        "messages": [{"role": "user", "content": "First?"}],
        "threads": {"alpha": [{"role": "user", "content": "First?"}, {"role": "assistant", "content": "a"}]},
    }
    assert said(conversation(body)) == [("user", "First?")]
    with pytest.raises(FieldError) as refused:
        threads(body, SEATS)
    assert refused.value.field == "threads"
    assert (
        str(refused.value)
        == 'threads["alpha"]: the last turn must be the user\'s: it is what the seats answer'
    )
    with pytest.raises(FieldError) as wrong:
        conversation({"messages": [{"role": "assistant", "content": "a"}]})
    assert wrong.value.field == "messages"
    assert str(wrong.value) == "the last turn must be the user's: it is what the seats answer"
