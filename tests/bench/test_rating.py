"""The pure rating model: verdicts move it the expected way, uncertainty
shrinks with data, weaker evidence only nudges, penalties say why."""

from __future__ import annotations

import random
from collections import Counter

import pytest

from benchwarmers.bench.rating import (
    Evidence,
    Posterior,
    SeatStats,
    Tally,
    beta_quantile,
    explorer_order,
    posterior,
    rank_evidence,
    rate,
)

pytestmark = pytest.mark.unit


def width(e: Evidence) -> float:
    lo, hi = rate(e).interval
    return hi - lo


def test_useful_verdicts_raise_and_not_useful_lower() -> None:
    blank = rate(Evidence("m"))
    liked = rate(Evidence("m", here=Tally(5, 0)))
    disliked = rate(Evidence("m", here=Tally(0, 5)))
    assert disliked.mean < blank.mean < liked.mean
    assert disliked.score < blank.score < liked.score
    assert liked.judged == 5


def test_uncertainty_shrinks_with_data_at_the_same_ratio() -> None:
    widths = [width(Evidence("m", here=Tally(3 * n, n))) for n in (1, 4, 16, 64)]
    assert widths == sorted(widths, reverse=True)
    assert widths[-1] < widths[0] / 3


def test_a_bayesian_estimate_not_a_raw_ratio() -> None:
    """One lucky verdict is a 100% raw ratio; here it is a modest estimate
    with a wide interval, against a long good record's narrow one."""
    average = [Evidence(f"avg{i}", here=Tally(10, 10)) for i in range(4)]
    ranked = {r.alias: r for r in rank_evidence([Evidence("lucky", here=Tally(1, 0)), *average])}
    lucky = ranked["lucky"]
    proven = rank_evidence([Evidence("proven", here=Tally(40, 8)), *average])[0]
    assert proven.alias == "proven"
    assert lucky.mean < 0.8 < proven.mean
    assert (lucky.interval[1] - lucky.interval[0]) > 3 * (proven.interval[1] - proven.interval[0])


def test_suite_is_a_prior_worth_a_few_verdicts() -> None:
    strong_suite = Evidence("a", suite_shape=Tally(6, 0))
    weak_suite = Evidence("b", suite_shape=Tally(0, 6))
    assert rate(strong_suite).mean > 0.6 > 0.4 > rate(weak_suite).mean
    # Thirty real verdicts outweigh a perfect suite.
    judged = Evidence("a", suite_shape=Tally(6, 0), here=Tally(3, 27))
    assert rate(judged).mean < 0.3
    # A much larger suite weighs no more than the cap.
    assert (
        posterior(Evidence("a", suite_shape=Tally(600, 0))).alpha
        == posterior(Evidence("a", suite_shape=Tally(12, 0))).alpha
        > posterior(Evidence("a", suite_shape=Tally(6, 0))).alpha
    )


def test_other_shapes_pool_as_hard_as_the_models_shapes_agree() -> None:
    # Good elsewhere: a prior here, worth a few verdicts at most, that ten real ones outweigh.
    good_elsewhere = rate(Evidence("m", same_collection=Tally(30, 0), other_shapes=(Tally(30, 0),)))
    assert good_elsewhere.mean > 0.8
    assert rate(Evidence("m", same_collection=Tally(30, 0), here=Tally(0, 10))).mean < 0.35
    # An all-rounder (its shapes agree) is pooled harder than a specialist (they differ).
    steady = Evidence("s", here=Tally(3, 1), same_collection=Tally(30, 10), other_shapes=(Tally(15, 5),) * 2)
    special = Evidence("p", here=Tally(3, 1), same_collection=Tally(4, 36), other_shapes=(Tally(2, 18),) * 2)
    steady_post, special_post = posterior(steady), posterior(special)
    own_weight = 4.0
    assert (
        steady_post.alpha + steady_post.beta - own_weight
        > special_post.alpha + special_post.beta - own_weight
    )
    assert special_post.mean > 0.4  # its three good answers here are not drowned by its other shapes


def test_penalties_lower_the_score_and_say_why() -> None:
    base = rate(Evidence("m", here=Tally(8, 2)))
    sick = rate(Evidence("m", here=Tally(8, 2), probes=4, probe_failures=2))
    slow = rate(Evidence("m", here=Tally(8, 2), first_byte_seconds=9.0, tokens_per_second=5.0))
    paid = rate(Evidence("m", here=Tally(8, 2), price_per_mtok=15.0))
    near = rate(Evidence("m", here=Tally(8, 2), near_limit=True))
    for worse, word in ((sick, "health"), (slow, "slow"), (paid, "costs"), (near, "rate limit")):
        assert worse.score < base.score
        assert worse.mean == base.mean  # penalties move the score, not the estimate of usefulness
        assert any(word in reason for reason in worse.reasons)
    assert "8 of 10 verdicts here useful" in base.reasons[0]


def test_explorer_order_rotates_when_nobody_judges() -> None:
    stats = {"a": SeatStats("a", 0, 0), "b": SeatStats("b", 0, 0), "c": SeatStats("c", 2, 5)}
    picks = []
    for turn in range(4):
        first, why = explorer_order(list(stats.values()), random.Random(turn))[0]
        picks.append(first)
        assert "few verdicts" in why
        s = stats[first]
        stats[first] = SeatStats(first, s.judged, s.seats + 1, float(turn + 1))
    assert picks == ["a", "b", "a", "b"]


def test_explorers_are_drawn_where_a_verdict_can_change_the_panel() -> None:
    """Past MIN_TRIES, an optimistic draw: a model that may be among the best
    is explored far more often than one everyone knows is weak, a model with
    a wide posterior before a settled one of the same mean, and close
    challengers take turns (a draw, not a fixed bound)."""
    rng = random.Random(7)
    contender = SeatStats("contender", 10, 10, posterior=Posterior(7, 3))
    weak = SeatStats("weak", 10, 10, posterior=Posterior(2, 8))
    firsts = Counter(explorer_order([contender, weak], rng)[0][0] for _ in range(400))
    assert firsts["contender"] > 20 * max(firsts["weak"], 1)
    unsure = SeatStats("unsure", 3, 3, posterior=Posterior(1.5, 1.5))
    settled = SeatStats("settled", 300, 300, posterior=Posterior(150, 150))
    top = [explorer_order([unsure, settled], rng)[0] for _ in range(400)]
    assert {alias for alias, _ in top} == {"unsure"}
    assert all("optimistic draw" in why for _, why in top)
    close = [SeatStats(name, 20, 20, posterior=Posterior(14, 6)) for name in ("one", "two")]
    turns = Counter(explorer_order(close, rng)[0][0] for _ in range(400))
    assert min(turns["one"], turns["two"]) > 100


def test_a_well_known_challenger_gives_the_seat_to_one_that_may_be_better() -> None:
    """The point of drawing from the upper tail: a challenger measured well
    enough to be known just short of the panel stops taking the explorer
    seat from one a little lower whose interval still reaches higher (a
    plain Thompson draw gave the well-known one about 60% of the seats)."""
    rng = random.Random(11)
    known = SeatStats("known", 100, 100, posterior=Posterior(60, 40))
    unsure = SeatStats("unsure", 30, 30, posterior=Posterior(17, 13))
    firsts = Counter(explorer_order([known, unsure], rng)[0][0] for _ in range(400))
    assert firsts["unsure"] > 400 * 0.75


def test_a_seated_model_keeps_its_seat_until_clearly_beaten() -> None:
    seated = Evidence("seated", here=Tally(14, 6))
    lucky = Evidence("lucky", here=Tally(15, 5))
    assert [r.alias for r in rank_evidence([seated, lucky])] == ["lucky", "seated"]
    held = rank_evidence([seated, lucky], seated={"seated"})
    assert [r.alias for r in held] == ["seated", "lucky"]
    assert any("seated now" in reason for reason in held[0].reasons)
    clearly = Evidence("clearly", here=Tally(19, 1))
    assert rank_evidence([seated, clearly], seated={"seated"})[0].alias == "clearly"


def test_beta_quantiles() -> None:
    assert abs(beta_quantile(0.05, 1, 1) - 0.05) < 1e-6
    assert abs(beta_quantile(0.5, 2, 3) - 0.3857275681) < 1e-6
    assert abs(beta_quantile(0.05, 10, 2) - 0.6356405) < 1e-5


def test_a_bench_where_every_verdict_was_useful_still_ranks() -> None:
    """Hundreds of useful verdicts and no other kind pull the population base
    toward 1; a model with no bad verdict must still get an interval."""
    ranked = rank_evidence([Evidence("liked", here=Tally(500, 0)), Evidence("new")])
    assert [r.alias for r in ranked] == ["liked", "new"]
    assert all(0 < r.interval[0] < r.interval[1] <= 1 for r in ranked)
