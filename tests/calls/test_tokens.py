"""The one token estimate, here what a call cut before it was counted used."""

from __future__ import annotations

import pytest

from benchwarmers.calls.tokens import prompt_tokens, spent_estimate
from benchwarmers.types import Request, Usage, user

pytestmark = pytest.mark.unit


def test_a_cut_call_costs_its_prompt_and_the_text_that_arrived() -> None:
    request = Request((user("x" * 400),))
    assert spent_estimate(request, "") == Usage(prompt_tokens(request), 0)
    # Rounded up: a piece of text is at least a token.
    assert spent_estimate(request, "abcde") == Usage(prompt_tokens(request), 2)


def test_each_request_gets_its_own_estimate_however_they_alternate() -> None:
    """The last request's estimate is kept (a call asks it several times):
    another request, even one equal to it, is estimated afresh."""
    short, long = Request((user("x" * 40),)), Request((user("x" * 4000),))
    assert prompt_tokens(short) == 11
    assert prompt_tokens(short) == 11
    assert prompt_tokens(long) == 1001
    assert prompt_tokens(short) == 11
    assert prompt_tokens(Request((user("x" * 400),))) == 101
