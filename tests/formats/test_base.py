"""The per-ask quorum and deadline every format reads the same way: the
body's `bench` object, then the `x-bench-quorum` / `x-bench-deadline`
headers, which win."""

from __future__ import annotations

from typing import Any

import pytest

from benchwarmers.errors import UserError
from benchwarmers.formats import anthropic, gemini, ollama, openai_chat, responses
from benchwarmers.formats.base import with_header_options

pytestmark = pytest.mark.unit

BENCH = {"bench": {"quorum": 2, "deadline": 5}}
BODIES: dict[str, tuple[Any, dict[str, Any]]] = {
    "openai_chat": (
        openai_chat.parse_ask,
        {"model": "bench/trio", "messages": [{"role": "user", "content": "hi"}]},
    ),
    "responses": (responses.parse_ask, {"model": "bench/trio", "input": "hi"}),
    "anthropic": (
        anthropic.parse_ask,
        {"model": "bench/trio", "max_tokens": 9, "messages": [{"role": "user", "content": "hi"}]},
    ),
    "gemini": (
        lambda body: gemini.parse_ask(body, model="bench/trio"),
        {"contents": [{"role": "user", "parts": [{"text": "hi"}]}]},
    ),
    "ollama": (ollama.parse_ask, {"model": "bench/trio", "messages": [{"role": "user", "content": "hi"}]}),
}


@pytest.mark.parametrize("name", list(BODIES))
def test_every_format_reads_the_bench_object(name: str) -> None:
    parse, body = BODIES[name]
    ask = parse({**body, **BENCH})
    assert (ask.quorum, ask.deadline) == (2, 5.0)
    assert (parse(body).quorum, parse(body).deadline) == (0, 0.0)
    with pytest.raises(UserError, match=r"bench\.quorum must be at least 1 seat"):
        parse({**body, "bench": {"quorum": 0}})


@pytest.mark.parametrize("name", list(BODIES))
def test_every_format_seats_the_bench_objects_extras(name: str) -> None:
    parse, body = BODIES[name]
    assert parse({**body, "bench": {"with": ["extra"]}}).extra_aliases == ("extra",)
    with pytest.raises(UserError, match=r"bench\.with"):
        parse({**body, "bench": {"with": "extra"}})


@pytest.mark.parametrize("name", list(BODIES))
def test_every_format_asks_exactly_the_bench_objects_seats(name: str) -> None:
    """`bench.seats`: a follow-up over the API to the seats of an earlier reply, or to one of them."""
    parse, body = BODIES[name]
    assert parse({**body, "bench": {"seats": ["beta", "alpha"]}}).only_aliases == ("beta", "alpha")
    assert parse(body).only_aliases == ()
    refused = {
        "seats": (r"bench\.seats must be a list of model aliases, not a string", "alpha"),
        "empty": (r"bench\.seats must name at least one model alias", []),
        "blank": (r"bench\.seats\[1\] must be a model alias, not a string", ["alpha", ""]),
        "number": (r"bench\.seats\[0\] must be a model alias, not a number", [3]),
    }
    for pattern, seats in refused.values():
        with pytest.raises(UserError, match=pattern):
            parse({**body, "bench": {"seats": seats}})
    with pytest.raises(UserError, match=r"bench\.with cannot add to it"):
        parse({**body, "bench": {"seats": ["alpha"], "with": ["gamma"]}})


def test_the_headers_win_over_the_body() -> None:
    parse, body = BODIES["openai_chat"]
    ask = with_header_options(parse({**body, **BENCH}), {"x-bench-quorum": "3"})
    assert (ask.quorum, ask.deadline) == (3, 5.0)
    ask = with_header_options(ask, {"x-bench-deadline": "2.5"})
    assert (ask.quorum, ask.deadline) == (3, 2.5)


def test_route_mode_has_no_seats_to_cut() -> None:
    parse, body = BODIES["openai_chat"]
    ask = parse({**body, "model": "bench/trio:route", "bench": {"quorum": 0}})
    assert with_header_options(ask, {"x-bench-quorum": "nonsense"}).quorum == 0


HUGE = "1" + "0" * 400  # a whole number past a float's range


@pytest.mark.parametrize(
    ("headers", "message"),
    [
        ({"x-bench-quorum": "inf"}, "x-bench-quorum must be a whole number of seats"),
        ({"x-bench-quorum": "nan"}, "x-bench-quorum must be a whole number of seats"),
        ({"x-bench-quorum": "1e400"}, "x-bench-quorum must be a whole number of seats"),
        ({"x-bench-quorum": "1" * 5000}, "x-bench-quorum must be a whole number of seats, not '111"),
        ({"x-bench-deadline": HUGE}, "x-bench-deadline must be at most 86400 seconds"),
    ],
)
def test_a_number_past_a_floats_range_is_a_user_error(headers: dict[str, str], message: str) -> None:
    """int(inf) and math.isfinite of a 400-digit number raised (a 500 in every format)."""
    parse, body = BODIES["openai_chat"]
    with pytest.raises(UserError, match=message) as raised:
        with_header_options(parse(body), headers)
    assert len(str(raised.value)) < 200  # a long header is not sent back whole


def test_a_body_deadline_past_a_floats_range_is_a_user_error() -> None:
    parse, body = BODIES["anthropic"]
    with pytest.raises(UserError, match=r"bench\.deadline must be at most 86400 seconds"):
        parse({**body, "bench": {"deadline": int(HUGE)}})
