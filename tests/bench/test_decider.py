"""The Decider (one seating flow), forgetting and pairs: pure rules, values in, seats out."""

from __future__ import annotations

import random
from collections import Counter

import pytest

from benchwarmers.bench.decider import Candidate, Table, decide, rankings
from benchwarmers.bench.forgetting import CHANGE_KEEP, pair_discount, pair_score, recall, recall_shapes
from benchwarmers.bench.pairs import PairCounts, joint
from benchwarmers.bench.rating import Evidence, Posterior, Tally

pytestmark = pytest.mark.unit


def cand(alias: str, good: float = 0, bad: float = 0, *, member: bool = True, **kw: object) -> Candidate:
    return Candidate(alias, Evidence(alias, here=Tally(good, bad)), member, **kw)  # type: ignore[arg-type]


def test_untried_explorers_rotate_when_nobody_judges() -> None:
    table = Table(members=("m",), explorer_seats=1)
    seats = {"a": 0, "b": 0}
    picks = []
    for turn in range(4):
        candidates = [cand("m", 8, 2), *(cand(a, member=False, seats=n) for a, n in seats.items())]
        candidates.append(cand("c", 1, 1, member=False, seats=5))
        decision = decide(table, candidates, rng=random.Random(turn))
        (pick,) = decision.explorers
        assert "few verdicts" in decision.why[pick]
        picks.append(pick)
        seats[pick] += 1
    assert picks == ["a", "b", "a", "b"]


def test_a_model_compared_in_pairs_was_tried() -> None:
    """Pairs are tries too: a model with no single verdict but two pairs
    here leaves the rotation of the untried, whose seat goes to one that
    was neither judged nor compared."""
    table = Table(members=("m",), explorer_seats=1)
    candidates = [cand("m", 8, 2), cand("paired", member=False), cand("fresh", member=False, seats=9)]
    pairs = PairCounts()
    pairs.add("m", "paired", "better")
    pairs.add("paired", "m", "tie")
    decision = decide(table, candidates, pairs=pairs, rng=random.Random(0))
    assert decision.explorers == ("fresh",) and "few verdicts or pairs" in decision.why["fresh"]
    alone = decide(table, candidates, rng=random.Random(0))
    assert alone.explorers == ("paired",)  # no pairs: it is the least seated of the untried


def test_newcomers_are_explored_first() -> None:
    table = Table(members=("m",), explorer_seats=1)
    fresh = cand("fresh", member=False, newcomer=True, seats=3)
    decision = decide(table, [cand("m", 8, 2), cand("old", member=False), fresh])
    assert decision.explorers == ("fresh",) and "new on the bench" in decision.why["fresh"]


def test_an_explorer_earns_its_seat_only_while_it_may_beat_the_weakest() -> None:
    """A tried model whose interval no longer reaches above the weakest
    record seat gets no exploring: the seat goes to the next best by record,
    saying so; one whose interval still reaches takes it by an optimistic draw."""
    table = Table(members=("a", "b"), explorer_seats=1)
    weak = cand("weak", 10, 90, member=False)
    settled = [cand("a", 80, 20), cand("b", 75, 25), weak, cand("meh", 30, 70, member=False)]
    decision = decide(table, settled, rng=random.Random(1))
    assert decision.explorers == ("meh",) and "next best by record" in decision.why["meh"]
    contender = cand("contender", 7, 3, member=False)
    picks = Counter(
        decide(table, [*settled, contender], rng=random.Random(i)).explorers[0] for i in range(40)
    )
    assert picks == Counter({"contender": 40})


def test_a_settled_seat_is_kept_against_a_challenger_judged_on_few_answers() -> None:
    """A member seated by record and judged on many answers here keeps its
    seat against a challenger with a higher estimate read from a few
    answers (saying so); judged on enough answers, the challenger takes it;
    a newcomer is not kept; a seat whose model the change detector flagged is
    kept only against a challenger whose mean is inside its interval (a chance
    dip), not against one above all of it (a real drop)."""
    table = Table(members=("a", "b", "c"), seats=2, explorer_seats=1, seated=("a", "b"))
    settled = [cand("a", 60, 40), cand("b", 70, 30)]
    kept = decide(table, [*settled, cand("c", 4, 0)], rng=random.Random(0))
    assert set(kept.record) == {"a", "b"} and kept.explorers == ("c",)
    (c,) = [r for r in kept.rankings if r.alias == "c"]
    assert any("kept out of a's settled seat: judged on 4 answers" in why for why in c.reasons)
    assert c.score < next(r.score for r in kept.rankings if r.alias == "a")
    assert set(decide(table, [*settled, cand("c", 16, 0)], rng=random.Random(0)).record) == {"b", "c"}
    newcomer = cand("c", 4, 0, newcomer=True)
    assert set(decide(table, [*settled, newcomer], rng=random.Random(0)).record) == {"b", "c"}
    dipped = Candidate("a", Evidence("a", here=Tally(21, 14), changed="changed: 2 of its last 8"), True)
    inside = decide(table, [dipped, settled[1], cand("c", 3, 1)], rng=random.Random(0))
    (c,) = [r for r in inside.rankings if r.alias == "c"]
    (a,) = [r for r in inside.rankings if r.alias == "a"]
    assert a.interval[0] < c.mean < a.interval[1] and c.mean > a.mean  # c would take it on its estimate
    assert set(inside.record) == {"a", "b"}
    assert any("kept out of a's settled seat: judged on 4 answers" in why for why in c.reasons)
    above = decide(table, [dipped, settled[1], cand("c", 4, 0)], rng=random.Random(0))
    assert next(r.mean for r in above.rankings if r.alias == "c") > a.interval[1]
    assert set(above.record) == {"b", "c"}
    young = [cand("a", 12, 8), cand("b", 14, 6), cand("c", 4, 0)]  # nobody judged on 30 answers yet
    assert set(decide(table, young, rng=random.Random(0)).record) == {"b", "c"}


def test_an_answer_compared_in_several_pairs_is_one_answer_judged() -> None:
    """People's pairs count a model's answers once each, however many pairs
    of its ask they were in; a judge model's pairs count none. Fifteen asks'
    answers, each in three pairs, are fifteen: enough to take a settled seat."""
    pairs = PairCounts()
    for ask in range(15):
        pairs.add("c", "a", "better", ask=ask)
        pairs.add("c", "b", "better", ask=ask)
        pairs.add("c", "d", "tie", ask=ask)
        pairs.add("c", "a", "better")  # a judge model's: no ask, no answer
    assert (pairs.answers["c"], pairs.answers["a"], pairs.answers["d"]) == (15, 15, 15)
    table = Table(members=("a", "b", "c"), seats=2, explorer_seats=1, seated=("a", "b"))
    candidates = [cand("a", 60, 40), cand("b", 70, 30), cand("c")]
    assert "c" in decide(table, candidates, pairs=pairs, rng=random.Random(0)).record
    few = PairCounts()
    for ask in range(3):
        for _ in range(10):
            few.add("c", "a", "better", ask=ask)
    assert few.answers["c"] == 3
    assert "c" not in decide(table, candidates, pairs=few, rng=random.Random(0)).record


def test_a_failing_or_resting_member_gives_its_seat_to_the_next_best() -> None:
    table = Table(members=("a", "b", "c"), seats=2)
    candidates = [
        cand("a", 9, 1, held_out="failing: its last 2 calls failed; held out until a probe answers"),
        cand("b", 8, 2),
        cand("c", 5, 5),
    ]
    decision = decide(table, candidates)
    assert decision.record == ("b", "c")
    left = dict(decision.left_off)
    assert left["a"].startswith("failing") and left["a"].endswith("its seat went to c")
    # Uncapped: a non-member stands in only under promotion auto.
    resting = cand("a", 9, 1, held_out="resting (rate limited)")
    uncapped = [resting, cand("b", 8, 2), cand("x", 9, 1, member=False)]
    assert decide(Table(members=("a", "b")), uncapped).record == ("b",)
    auto = decide(Table(members=("a", "b"), promotion="auto"), uncapped)
    assert auto.record == ("b", "x") and dict(auto.left_off)["a"].endswith("its seat went to x")


@pytest.mark.parametrize("promotion", ["auto", "suggest", "never"])
def test_promotion_of_a_clearly_better_explorer(promotion: str) -> None:
    table = Table(members=("a", "b"), explorer_seats=1, promotion=promotion)
    candidates = [cand("a", 40, 10), cand("b", 20, 30), cand("star", 38, 2, member=False)]
    decision = decide(table, candidates)
    if promotion == "auto":
        assert decision.record == ("a", "star")
        assert "promoted" in decision.why["star"]
        assert decision.explorers == ("b",)  # the member it displaced is the one left to explore
        alone = decide(Table(members=("a", "b"), promotion="auto"), candidates)
        assert "its seat went to star" in dict(alone.left_off)["b"]
    else:
        assert decision.record == ("a", "b")
    assert bool(decision.suggestions) == (promotion == "suggest")
    # Barely better is not clearly better: nobody is promoted or suggested.
    close = decide(table, [cand("a", 40, 10), cand("b", 26, 24), cand("near", 6, 4, member=False)])
    assert close.record == ("a", "b") and not close.suggestions


def test_capped_record_is_best_first_uncapped_keeps_member_order() -> None:
    members = [cand("low", 2, 8), cand("high", 9, 1), cand("mid", 5, 5)]
    assert decide(Table(members=("low", "high", "mid"), seats=2), members).record == ("high", "mid")
    assert decide(Table(members=("low", "high", "mid")), members).record == ("low", "high", "mid")


def test_a_degraded_model_is_noticed_in_tens_of_verdicts() -> None:
    """200 verdicts at 80%, then it answers badly: within a few dozen of the
    new verdicts the detector reopens its record around what it does now."""
    older = Tally(160, 40)
    noticed_after = None
    for bad_streak in range(1, 60):
        recent = [(0.0, i % 4 == 0) for i in range(bad_streak)]  # newest first, 25% useful
        recalled = recall(older, recent)
        if recalled.changed:
            noticed_after = bad_streak
            break
    assert noticed_after is not None and noticed_after <= 24
    assert recalled.tally.total < older.total * CHANGE_KEEP + noticed_after + 1
    # A steady model is not taken for a changed one.
    steady = [(0.0, i % 5 != 0) for i in range(64)]
    assert recall(older, steady).changed == ""


def test_a_change_on_every_shape_is_seen_on_them_together() -> None:
    """A model good at code and fair at prose degrades on every shape: its
    newest verdicts, a few per shape, show no change on any shape alone but
    do on the shapes together, and each shape's record reopens. Shapes that
    differ but hold steady are not taken for a change: each verdict is
    compared with its own shape's record."""
    older = {"short": Tally(36, 24), "long": Tally(30, 30), "code": Tally(54, 6)}
    worse = {
        "short": [False, False, True],
        "long": [False, False, True],
        "code": [False, True, False, True, False],
    }

    def shapes(newest: dict[str, list[bool]]) -> dict[str, tuple[Tally, list[tuple[float, bool]]]]:
        return {s: (older[s], [(float(day), u) for day, u in enumerate(newest[s] * 6)]) for s in older}

    alone = {s: recall(o, r) for s, (o, r) in shapes(worse).items()}
    assert not any(r.changed for r in alone.values())
    together = recall_shapes(shapes(worse))
    assert all(r.changed.startswith("changed on every shape") for r in together.values())
    assert together["code"].tally.total < alone["code"].tally.total
    steady = {"short": [True, False, True], "long": [False, True, False], "code": [True, True, True, True]}
    assert not any(r.changed for r in recall_shapes(shapes(steady)).values())


def test_pairs_show_a_change_the_verdicts_alone_do_not() -> None:
    """A model's single verdicts are too few to show its change, but it now
    loses the pairs it used to win: read beside the verdicts, its pairs
    reopen its record, and its pairs from before the change count less."""
    older = {"short": Tally(14, 6), "code": Tally(14, 6)}
    # Newest first: a day's verdicts and pairs (ages in days), then the weeks before.
    recent = {s: [(0.0, False), (1.0, True), (2.0, False)] for s in older}
    before = [(float(day), pair_score("better", True)) for day in range(5, 25)]
    lost = [(float(day % 4), pair_score("better", False)) for day in range(12)]
    pairs = {s: sorted(lost + before) for s in older}
    shapes = {s: (older[s], recent[s]) for s in older}
    assert not any(r.changed for r in recall_shapes(shapes).values())
    together = recall_shapes(shapes, pairs=pairs)
    assert all(r.changed.startswith("changed on every shape") for r in together.values())
    since = together["short"].since
    assert since <= 5.0  # the change began after most of the pairs it won
    assert pair_discount({"m": since}, "m", "other", 10.0) == CHANGE_KEEP
    assert pair_discount({"m": since}, "other", "m", 0.0) == 1.0
    assert pair_discount({}, "m", "other", 10.0) == 1.0
    # A model that fares in its pairs as it always did is not flagged.
    steady = {s: sorted((float(d), pair_score("better", d % 3 != 0)) for d in range(30)) for s in older}
    assert not any(r.changed for r in recall_shapes(shapes, pairs=steady).values())
    assert pair_score("tie", False) == 0.5 and pair_score("both_bad", True) == 0.0


def test_a_change_the_pairs_showed_is_said_in_pairs() -> None:
    """The reason of a change seen in pairs names the pairs: a model judged
    in pairs alone, that won them all and now loses them on every shape,
    is not "changed: 0 of its last 0 verdicts here useful" (nothing said of
    what showed it); verdicts and pairs both in the newest part are both said."""
    won = [(float(day), pair_score("better", True)) for day in range(5, 45)]
    lost = [(day / 10, pair_score("better", False)) for day in range(16)]
    pairs = {s: sorted(lost + won) for s in ("short", "code")}
    alone = recall_shapes({s: (Tally(), []) for s in pairs}, pairs=pairs)
    for recalled in alone.values():
        assert recalled.changed.startswith("changed on every shape"), recalled.changed
        assert "won 0 of its last" in recalled.changed and " pairs here" in recalled.changed
        assert "of its last 0 verdicts" not in recalled.changed
    both = {"short": (Tally(), [(0.05, False), (0.15, False), (3.0, True)]), "code": (Tally(), [])}
    said = recall_shapes(both, pairs=pairs)["short"].changed
    assert "of its last 2 verdicts here useful and won 0 of its last" in said, said


def test_old_verdicts_count_less() -> None:
    fresh = recall(Tally(), [(0.0, True)] * 10).tally
    month_old = recall(Tally(), [(30.0, True)] * 10).tally
    assert fresh.good == pytest.approx(10) and month_old.good == pytest.approx(5)


def test_pairs_fit_into_the_posterior() -> None:
    posts = {"a": Posterior(6, 4), "b": Posterior(6, 4), "c": Posterior(6, 4)}
    assert joint(posts, PairCounts()) == posts
    pairs = PairCounts()
    for _ in range(6):
        pairs.add("a", "b", "better")
    fitted = joint(posts, pairs)
    assert fitted["a"].mean > posts["a"].mean > fitted["b"].mean
    assert fitted["a"].sd < posts["a"].sd  # pairs are information: the interval narrows
    assert fitted["c"] == posts["c"]
    ties = PairCounts()
    for _ in range(6):
        ties.add("a", "b", "tie")
    tied = joint(posts, ties)
    assert tied["a"].mean == pytest.approx(tied["b"].mean) and tied["a"].sd < posts["a"].sd


def test_both_bad_lowers_both_and_pairs_reorder_the_ranking() -> None:
    table = Table(members=("a", "b", "c"))
    candidates = [cand("a", 5, 5), cand("b", 5, 5), cand("c", 5, 5)]
    bad = PairCounts()
    for _ in range(4):
        bad.add("a", "b", "both_bad")
    rated = {r.alias: r for r in rankings(table, candidates, bad)}
    assert rated["a"].mean < rated["c"].mean and rated["b"].mean < rated["c"].mean
    better = PairCounts()
    for _ in range(4):
        better.add("c", "a", "better")
    order = [r.alias for r in rankings(table, candidates, better)]
    assert order[0] == "c" and order[-1] == "a"
    assert any("pairs: preferred 4" in why for why in rankings(table, candidates, better)[0].reasons)


def test_a_both_bad_pair_is_said_as_one_not_as_verdicts_nobody_gave() -> None:
    """A model judged only in one "both bad" pair read "0 of 0.5 verdicts
    here useful (weighed by age)" on the leaderboard, beside its 0 verdicts;
    the pair's half "not useful" still counts, said as what it is."""
    table = Table(members=("a", "b"))
    bad = PairCounts()
    bad.add("a", "b", "both_bad")
    (first, *_), judged = rankings(table, [cand("a"), cand("b")], bad), cand("a", 2, 1)
    assert "no verdicts here yet" in first.reasons[0], first.reasons
    assert "both bad in pairs, read as 0.5 verdicts not useful" in first.reasons[0]
    rated = {r.alias: r for r in rankings(table, [judged, cand("b")], bad)}
    assert "2 of 3 verdicts here useful" in rated["a"].reasons[0], rated["a"].reasons
    alone = {r.alias: r.mean for r in rankings(table, [cand("a"), cand("b")], PairCounts())}
    assert first.mean < alone[first.alias], "the pair still lowers it"


def test_rankings_are_fitted_once_per_evidence(monkeypatch: pytest.MonkeyPatch) -> None:
    """The fit is kept by what it reads: the same evidence is fitted once,
    a model resting anew re-sorts without a re-fit, a new verdict re-fits."""
    from benchwarmers.bench import decider

    fits = []
    fit = decider._fit
    monkeypatch.setattr(decider, "_fit", lambda *args: fits.append(1) or fit(*args))
    monkeypatch.setattr(decider, "_FITTED", {})
    monkeypatch.setattr(decider, "_RATED", {})
    table = Table(members=("a", "b"), explorer_seats=1)
    pairs = PairCounts()
    pairs.add("a", "b", "better")
    first = rankings(table, [cand("a", 7, 3), cand("b", 3, 7)], pairs)
    assert rankings(table, [cand("a", 7, 3), cand("b", 3, 7)], pairs) == first
    resting = rankings(table, [cand("a", 7, 3, held_out="resting"), cand("b", 3, 7)], pairs)
    assert [r.alias for r in resting] == ["b", "a"] and not resting[1].eligible
    assert len(fits) == 1
    moved = rankings(table, [cand("a", 7, 4), cand("b", 3, 7)], pairs)
    assert moved[0].mean < first[0].mean and len(fits) == 2


def test_a_pairs_reason_reads_as_counts_not_the_weights_float() -> None:
    """Pairs weighed by age read "pairs: preferred 3.86607, not preferred 0"
    on the Leaderboard's next-panel reasons: now a tenth at most, and said to
    be weighted (older pairs and a judge model's count less); whole pairs and
    ties read as counts."""
    table = Table(members=("a", "b"))
    candidates = [cand("a", 5, 5), cand("b", 5, 5)]
    aged = PairCounts()
    aged.add("a", "b", "better", weight=0.96652)
    aged.add("a", "b", "better", weight=2.9)
    why = {r.alias: r.reasons[-1] for r in rankings(table, candidates, aged)}
    assert why == {
        "a": "pairs: preferred 3.9, not preferred 0 (weighted)",
        "b": "pairs: preferred 0, not preferred 3.9 (weighted)",
    }
    whole = PairCounts()
    whole.add("a", "b", "better")
    whole.add("a", "b", "tie")
    assert {r.alias: r.reasons[-1] for r in rankings(table, candidates, whole)}["a"] == (
        "pairs: preferred 1.5, not preferred 0.5"
    )
