"""What a call cost: known prices and tokens give a known figure, cached
input is billed at its own price, and an unknown price is unknown."""

from __future__ import annotations

import pytest

from benchwarmers.calls.cost import Total, call_cost
from benchwarmers.types import Usage

pytestmark = pytest.mark.unit


def test_a_known_price_and_known_tokens_give_the_cost() -> None:
    # 1,000 in at $3 and 500 out at $15 per million: $0.003 + $0.0075.
    assert call_cost(Usage(1000, 500), 3.0, 15.0) == pytest.approx(0.0105)
    assert call_cost(Usage(2_000_000, 0), 0.5, 99.0) == pytest.approx(1.0)


def test_cached_input_is_billed_at_the_cached_price_and_never_twice() -> None:
    # 1,000 in of which 400 from the cache at $0.30: 600 x $3 + 400 x $0.30 + 100 x $15.
    assert call_cost(Usage(1000, 100, 400), 3.0, 15.0, 0.3) == pytest.approx((1800 + 120 + 1500) / 1e6)
    # No cached price: the input price (the most a cached token costs).
    assert call_cost(Usage(1000, 0, 400), 3.0, 15.0) == call_cost(Usage(1000, 0), 3.0, 15.0)
    # A provider reporting more cached than input tokens cannot make the cost negative.
    assert call_cost(Usage(10, 0, 50), 3.0, 15.0, 0.0) == 0.0


def test_free_is_zero_and_unknown_is_none_never_zero() -> None:
    assert call_cost(Usage(1000, 500), 0.0, 0.0) == 0.0
    assert call_cost(Usage(1000, 500), None, None) is None
    assert call_cost(Usage(1000, 500), 3.0, None) is None
    assert call_cost(Usage(0, 0), None, 1.0) is None  # no tokens does not make unknown known


def test_a_total_adds_the_known_and_says_when_it_left_some_out() -> None:
    assert Total.of([0.25, 0.5]) == Total(0.75, True)
    assert Total.of([0.25, None, 0.5]) == Total(0.75, False)
    assert Total.of([]) == Total(0.0, True)
