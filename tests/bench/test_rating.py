"""The pure rating model: verdicts move it the expected way, uncertainty
shrinks with data, weaker evidence only nudges, penalties say why."""

from __future__ import annotations

import pytest

from benchwarmers.bench.rating import (
    Evidence,
    Tally,
    beta_quantile,
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


def test_the_suite_fades_as_verdicts_come_and_after_a_change() -> None:
    """Suite tasks are worth half a verdict each with no verdicts here, less
    as the user's own verdicts come, and almost nothing once the model changed."""
    suite = Tally(6, 0)
    alone = posterior(Evidence("m", suite_shape=suite))
    judged = posterior(Evidence("m", here=Tally(4, 4), suite_shape=suite))
    changed = posterior(Evidence("m", here=Tally(4, 4), suite_shape=suite, changed="changed: ..."))
    assert alone.alpha - alone.beta == pytest.approx(3.0 * 1.0, abs=0.01)  # 6 tasks x 0.5, no fade
    assert 0.5 < judged.mean < alone.mean and changed.mean < judged.mean
    assert changed.mean == pytest.approx(0.5, abs=0.03)


def test_a_seated_model_keeps_its_seat_until_clearly_beaten() -> None:
    seated = Evidence("seated", here=Tally(14, 6))
    lucky = Evidence("lucky", here=Tally(15, 5))
    assert [r.alias for r in rank_evidence([seated, lucky])] == ["lucky", "seated"]
    held = rank_evidence([seated, lucky], seated={"seated"})
    assert [r.alias for r in held] == ["seated", "lucky"]
    assert any("seated now" in reason for reason in held[0].reasons)
    clearly = Evidence("clearly", here=Tally(19, 1))
    assert rank_evidence([seated, clearly], seated={"seated"})[0].alias == "clearly"


def test_a_changed_model_keeps_no_seat_by_incumbency() -> None:
    """Its record is of what it was: a model the change detector flagged is
    held up by nothing, and a challenger a little better takes its seat."""
    changed = Evidence("changed", here=Tally(14, 6), changed="changed: ...")
    lucky = Evidence("lucky", here=Tally(15, 5))
    held = rank_evidence([changed, lucky], seated={"changed"})
    assert [r.alias for r in held] == ["lucky", "changed"]
    assert not any("seated now" in reason for reason in held[1].reasons)


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
