"""How much a judge model's pair verdicts count (`bench/pairs.py`): its
agreement with people counted per ask, a weight that starts low, rises
with agreement and falls to about nothing for a judge that agrees half
the time; a person's pair always counts 1."""

from __future__ import annotations

import pytest

from benchwarmers.bench.pairs import JUDGE_PRIOR, JudgeAgreement, agreement, judge_weight, pair_weight

pytestmark = pytest.mark.unit


def test_agreement_counts_asks_where_both_compared_a_same_pair() -> None:
    people = [
        ("ask1", "x|y", "better", "x"),
        ("ask2", "x|y", "tie", ""),
        ("ask3", "x|y", "better", "y"),
        ("ask4", "p|q", "better", "p"),  # the judge compared another pair of this ask
        ("ask5", "x|y", "better", "x"),
        ("ask5", "x|z", "better", "x"),
    ]
    judge = [
        ("ask1", "x|y", "better", "x"),  # agreed
        ("ask2", "x|y", "both_bad", ""),  # another outcome: not agreed
        ("ask3", "x|y", "better", "x"),  # the other way round: not agreed
        ("ask4", "p|r", "better", "p"),  # no person compared p and r
        ("ask5", "x|y", "better", "x"),  # one of its two pairs agreed: half an ask
        ("ask5", "x|z", "better", "z"),
        ("ask6", "x|y", "better", "x"),  # nobody judged ask6
    ]
    assert agreement(people, judge) == JudgeAgreement(agreed=1.5, compared=4)
    assert agreement([], judge) == JudgeAgreement()


def test_the_weight_starts_low_and_follows_agreement() -> None:
    start = JudgeAgreement().weight
    a, b = JUDGE_PRIOR
    assert start == pytest.approx(a * (a + 1) / ((a + b) * (a + b + 1)), abs=0.005)  # E[r^2] of the prior
    assert start < 0.1
    # A judge that agrees 70% of the time is reliable r = 0.4 (weight -> 0.16) as the asks pile up.
    seventy = [judge_weight(0.7 * n, n) for n in (10, 100, 1000)]
    assert seventy[-1] == pytest.approx(0.16, abs=0.02)
    assert seventy[1] > start
    # A useless one (50%) falls to about nothing, and a judge that always agrees toward 1.
    useless = [judge_weight(0.5 * n, n) for n in (10, 100, 1000)]
    assert useless[0] < start and useless[-1] < 0.005
    assert useless == sorted(useless, reverse=True)
    assert judge_weight(100, 100) > 0.8
    # Disagreeing more than half the time is no worse than useless: the weight is never negative.
    assert 0 <= judge_weight(10, 100) < useless[1]


def test_a_person_counts_one_a_judge_its_weight() -> None:
    earned = JudgeAgreement(agreed=70, compared=100)
    assert pair_weight("person", earned) == 1.0
    assert pair_weight("judge", earned) == earned.weight == judge_weight(70, 100)
    assert earned.as_json() == {"agreed": 70, "compared": 100, "weight": round(earned.weight, 3)}
    # Where a person judged the same pair, the person's verdict stands alone.
    assert pair_weight("judge", earned, person_too=True) == 0.0
    assert pair_weight("person", earned, person_too=True) == 1.0
