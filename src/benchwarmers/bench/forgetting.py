"""Forgetting: how much an old verdict still counts, and when a model changed.

Pure arithmetic (no store, no clock), shared by the server (`evidence.py`
hands it the verdicts of the recent window with their age, and the older
ones as one tally) and the simulation (`benchmarks/decisions.py` hands it
the same), so both forget the same way.

Two mechanisms, because each alone is wrong somewhere:

- **An age discount**: a verdict `d` days old counts `0.5 ** (d / HALF_LIFE_DAYS)`,
  never less than the weight at the window's edge (`RECENT_DAYS`): older
  verdicts are kept only as a tally, their ages unknown, so they all count
  that floor. A long half-life costs a world that does not change almost
  nothing; alone it would take months to notice a model that got worse.
- **A change detector**: the newest verdicts of a model here are compared
  with everything before them at a few split points (`CHANGE_SPLITS`); when
  the newest part is further from the rest than `CHANGE_Z` standard errors
  (both parts' sampling error), everything before the split counts
  `CHANGE_KEEP` of its weight. The model's interval reopens around what it
  does now, so a model that degraded is noticed in tens of verdicts, and
  one that improved is too. The split with the largest distance wins, so as
  verdicts after a change pile up the split stays at the change.

  The detector reads each shape alone, and also **every shape of the
  collection at once** (`recall_shapes`): a model that was updated or
  degraded usually changed on every shape, and its verdicts across the
  shapes are three times as many, so the change is seen sooner. Shapes
  differ (a model good at code and poor at prose), so the pooled test
  compares each of the newest verdicts with its own shape's record before
  the split (a stratified test: the sum of useful less expected over its
  spread), never one shape's rate with another's. A change seen on every
  shape at once splits each shape where the newest part begins in it.

  That test reads the model's **pairs** too (how it fared in each: won,
  a tie, lost or both bad; people's pairs, a judge model's are left to the
  rating), each against its own shape's pairs before the split: with pairs
  on half the judged asks a model is in three pairs for every verdict, and
  a degraded model starts losing the pairs it used to win before its
  verdicts alone show it. Because it reads more, and pairs' opponents vary,
  its bar is higher (`CHANGE_Z_ACROSS`), and it flags only a drop (a model
  that got worse everywhere; a rise is left to each shape's own test).
  When it flags a change, the
  model's pairs from before it count `CHANGE_KEEP` as well
  (`pair_discount`, by the age where the change began: `Recalled.since`),
  or its old wins would keep it seated; its pairs since count whole.
"""

from __future__ import annotations

import math
from collections.abc import Hashable, Mapping, Sequence
from dataclasses import dataclass
from typing import TypeVar

from benchwarmers.bench.rating import Tally

HALF_LIFE_DAYS = 30.0
# Verdicts this recent are read one by one (their age and order); older ones as a tally.
RECENT_DAYS = 60.0
FLOOR: float = 0.5 ** (RECENT_DAYS / HALF_LIFE_DAYS)
# The detector compares the newest k verdicts with the rest, for each k here.
CHANGE_SPLITS = (8, 16, 32, 64)
CHANGE_Z = 3.5
# The test on every shape at once, pairs read too: a higher bar (at 3.5, 48 hard tuning seeds x 2
# coin streams settled 32 verdicts later than today; at 4.0, 11: docs/benchmarks.md, issue 35).
CHANGE_Z_ACROSS = 4.0
CHANGE_KEEP = 0.1
# The rest must be at least this many times the newest part, so a model's
# first verdicts are not taken for a change.
CHANGE_REST_FACTOR = 1.5
K = TypeVar("K", bound=Hashable)


def age_weight(age_days: float) -> float:
    """What one verdict (or pair) this old counts."""
    weight: float = 0.5 ** (max(age_days, 0.0) / HALF_LIFE_DAYS)
    return max(FLOOR, weight)


@dataclass(frozen=True, slots=True)
class Recalled:
    """A model's verdicts here as rating reads them."""

    tally: Tally  # discounted by age, and by the change when there was one
    changed: str = ""  # why the older verdicts count less ("" when no change was seen)
    # Age in days of the oldest verdict (or pair) after the change: its pairs older than this
    # count `CHANGE_KEEP` too (`pair_discount`); infinite when no change was seen.
    since: float = math.inf


def recall(older: Tally, recent: Sequence[tuple[float, bool]], older_weight: float = FLOOR) -> Recalled:
    """`older`: the verdicts before the recent window (each counts
    `older_weight`: `FLOOR`, or the weight at the age where reading one by
    one stopped); `recent`: (age in days, useful) of the window's verdicts, newest first."""
    split, why = _change(older, [useful for _, useful in recent])
    since = recent[split - 1][0] if split else math.inf
    return _recalled(older, recent, older_weight, (split, why, since))


def recall_shapes(
    shapes: Mapping[K, tuple[Tally, Sequence[tuple[float, bool]]]],
    older_weight: float = FLOOR,
    pairs: Mapping[K, Sequence[tuple[float, float]]] | None = None,
) -> dict[K, Recalled]:
    """`recall` of each shape of one model in one collection (shape ->
    (older, recent) as `recall` takes them), with the change detector read
    on every shape at once too: when no shape alone shows a change and all
    of them together do, each shape splits where the newest part begins in
    it. `pairs`: per shape, how the model fared in its pairs of the recent
    window, newest first (age in days, 1 won, 0.5 a tie, 0 lost or both
    bad): the detector reads them beside the verdicts, each against its own
    shape's pairs before the split. The shapes' recent verdicts (and pairs)
    are merged newest first (by age; among those of one age, each shape's
    newest in turn, in the mapping's order: the server and the simulation
    give the same)."""
    alone = {k: _change(older, [u for _, u in recent]) for k, (older, recent) in shapes.items()}
    changes = {
        k: (split, why, shapes[k][1][split - 1][0] if split else math.inf)
        for k, (split, why) in alone.items()
    }
    if not any(split for split, _ in alone.values()):
        changes.update(_change_across(shapes, pairs or {}))
    return {k: _recalled(older, recent, older_weight, changes[k]) for k, (older, recent) in shapes.items()}


def pair_score(outcome: str, better: bool) -> float:
    """How a model fared in one pair, as the detector reads it (`recall_shapes`'
    `pairs`): 1 won, 0.5 a tie, 0 lost or both bad; `better`: it is the pair's first."""
    if outcome == "tie":
        return 0.5
    return 1.0 if outcome == "better" and better else 0.0


def pair_discount(since: Mapping[str, float], better: str, worse: str, age: float) -> float:
    """What a pair this old counts beside its age weight: `CHANGE_KEEP` for
    each of the two whose change (`Recalled.since`, by alias) came after it."""
    keep = 1.0
    for alias in (better, worse):
        if age > since.get(alias, math.inf):
            keep *= CHANGE_KEEP
    return keep


def _recalled(
    older: Tally, recent: Sequence[tuple[float, bool]], older_weight: float, change: tuple[int, str, float]
) -> Recalled:
    weights = [age_weight(age) for age, _ in recent]
    split, why, since = change
    keep = CHANGE_KEEP if why else 1.0
    good = bad = 0.0
    for index, ((_, useful), weight) in enumerate(zip(recent, weights, strict=True)):
        w = weight if index < split else weight * keep
        if useful:
            good += w
        else:
            bad += w
    floor = older_weight * keep
    tally = Tally(good + older.good * floor, bad + older.bad * floor)
    return Recalled(tally, why, since if why else math.inf)


def _change(older: Tally, newest_first: Sequence[bool]) -> tuple[int, str]:
    """(split, why): the newest `split` verdicts are far from the rest (0: no change)."""
    best, best_z, why = 0, CHANGE_Z, ""
    for k in CHANGE_SPLITS:
        if k > len(newest_first):
            break
        new_good = sum(newest_first[:k])
        rest_good = older.good + sum(newest_first[k:])
        rest_total = older.total + len(newest_first) - k
        if rest_total < CHANGE_REST_FACTOR * k:
            continue
        p_new = (new_good + 0.5) / (k + 1)
        p_rest = (rest_good + 0.5) / (rest_total + 1)
        spread = math.sqrt(p_new * (1 - p_new) / k + p_rest * (1 - p_rest) / rest_total)
        z = abs(p_new - p_rest) / spread
        if z > best_z:
            best, best_z = k, z
            why = (
                f"changed: {new_good} of its last {k} verdicts useful against "
                f"{rest_good / rest_total:.0%} before; older verdicts count {CHANGE_KEEP:.0%}"
            )
    return best, why


def _change_across(
    shapes: Mapping[K, tuple[Tally, Sequence[tuple[float, bool]]]],
    pairs: Mapping[K, Sequence[tuple[float, float]]],
) -> dict[K, tuple[int, str, float]]:
    """Per shape (split, why, since) of a change seen on every shape at once (empty: none).

    For the newest k of all shapes' verdicts and pairs merged, each is
    compared with its own stratum's record before the split (a shape's
    verdicts, or its pairs): z = sum(outcome - p_stratum) over the spread
    of that sum (each one's own, and the error of p_stratum). Only a drop
    the same way on every shape among them counts, and two strata at least:
    one shape's chance swing in verdicts alone is the per-shape detector's to judge."""
    strata: list[tuple[K, Tally, list[float]]] = []  # (shape, older, outcomes newest first)
    ages: list[list[float]] = []  # each stratum's ages, in the same order
    for key, (older, recent) in shapes.items():
        strata.append((key, older, [float(u) for _, u in recent]))
        ages.append([a for a, _ in recent])
        if key in pairs:
            strata.append((key, Tally(), [score for _, score in pairs[key]]))
            ages.append([a for a, _ in pairs[key]])
    merged = sorted(
        ((age, index, i) for index, row in enumerate(ages) for i, age in enumerate(row)),
        key=lambda row: (row[0], row[2], row[1]),  # same age: each stratum's newest first, in turn
    )
    best_z, best_k = CHANGE_Z_ACROSS, 0
    for k in CHANGE_SPLITS:
        if k > len(merged):
            break
        new = merged[:k]
        rest_total = sum(older.total for older, _ in shapes.values()) + len(merged) - k
        if rest_total < CHANGE_REST_FACTOR * k:
            continue
        gaps: dict[K, float] = {}
        variance = 0.0
        used = 0
        for index, (key, older, outcomes) in enumerate(strata):
            n = sum(1 for _, s, _ in new if s == index)
            if not n:
                continue
            after = outcomes[n:]
            rest_good, rest_n = older.good + sum(after), older.total + len(after)
            if rest_n <= 0:
                continue
            p = (rest_good + 0.5) / (rest_n + 1)
            gaps[key] = gaps.get(key, 0.0) + sum(outcomes[:n]) - n * p
            variance += n * p * (1 - p) * (1 + n / rest_n)
            used += 1
        gap = sum(gaps.values())
        # A change on every shape: two strata at least, each shape moved the same way.
        # Only a drop: pairs' opponents vary, and rises flagged on them cost a world that
        # does not change (easy world, tuning seeds: +191 verdicts to settle both ways, +25 drops only).
        if used < 2 or variance <= 0 or gap >= 0 or any(g * gap < 0 for g in gaps.values()):
            continue
        z = abs(gap) / math.sqrt(variance)
        if z > best_z:
            best_z, best_k = z, k
    if not best_k:
        return {}
    new = merged[:best_k]
    since = new[-1][0]
    out = {}
    for index, (key, _, outcomes) in enumerate(strata):
        if index and strata[index - 1][0] == key:
            continue  # the shape's pairs: its verdicts' stratum says the split
        split = sum(1 for _, s, _ in new if s == index)
        useful = int(sum(outcomes[:split]))
        # What of this shape fell in the newest part, in words: its verdicts, its pairs, or both.
        said = [f"{useful} of its last {split} verdicts here useful"] if split else []
        if index + 1 < len(strata) and strata[index + 1][0] == key:
            paired = sum(1 for _, s, _ in new if s == index + 1)
            if paired:
                won = sum(strata[index + 1][2][:paired])
                said.append(f"won {won:g} of its last {paired} pairs here")
        out[key] = (
            split,
            f"changed on every shape: {' and '.join(said) or 'nothing new here'}, its newest "
            f"{best_k} verdicts and pairs across shapes {best_z:.1f} standard errors from its record; "
            f"older verdicts and pairs count {CHANGE_KEEP:.0%}",
            since,
        )
    return out
