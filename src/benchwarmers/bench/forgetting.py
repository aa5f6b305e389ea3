"""Forgetting: how much an old verdict still counts, and when a model changed.

Pure arithmetic (no store, no clock), shared by the server (`decisions.py`
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

  A change once seen is **remembered**: the detector also reads the record
  as it stood before each of the newest verdicts came (`_change_point`),
  and a change point it saw then stays one while the verdicts since it are
  still `CHANGE_HOLD_Z` standard errors from those before it. Without
  this, the verdicts after a change outgrow the split that saw it and the
  change washes out of every split (half of the newest part before it),
  and the old record counts whole again until enough new ones outvote it.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Hashable, Mapping, Sequence
from dataclasses import dataclass
from itertools import accumulate
from typing import TypeVar

from benchwarmers.bench.rating import Tally

HALF_LIFE_DAYS = 30.0
# Verdicts this recent are read one by one (their age and order); older ones as a tally.
RECENT_DAYS = 60.0
FLOOR: float = 0.5 ** (RECENT_DAYS / HALF_LIFE_DAYS)
# The detector compares the newest k verdicts with the rest, for each k here.
CHANGE_SPLITS = (8, 16, 32, 64)
CHANGE_Z = 3.5
CHANGE_KEEP = 0.1
# The rest must be at least this many times the newest part, so a model's
# first verdicts are not taken for a change.
CHANGE_REST_FACTOR = 1.5
# A change seen as the record stood before any of its newest CHANGE_MEMORY verdicts came
# (1: now only) stays one while the verdicts since it are CHANGE_HOLD_Z standard errors
# from those before it.
CHANGE_MEMORY = 256
CHANGE_HOLD_Z = 2.0
PRIOR_READS_CHANGE = True
CHANGE_LAST_ONLY = False
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


def as_recorded(tally: Tally, recalled: Recalled | None) -> Tally:
    """A model's verdicts on another shape, as the prior of this one reads
    them: whole, unless the detector saw that shape change (then as
    forgetting counts them: before the change, a tenth). A model that got
    worse everywhere is otherwise pulled back toward its old record on
    every shape by its own other shapes."""
    if PRIOR_READS_CHANGE and recalled is not None and recalled.changed:
        return recalled.tally
    return tally


def recall(older: Tally, recent: Sequence[tuple[float, bool]], older_weight: float = FLOOR) -> Recalled:
    """`older`: the verdicts before the recent window (each counts
    `older_weight`: `FLOOR`, or the weight at the age where reading one by
    one stopped); `recent`: (age in days, useful) of the window's verdicts, newest first."""
    return _recalled(older, recent, older_weight, _change(older, [useful for _, useful in recent]))


def recall_shapes(
    shapes: Mapping[K, tuple[Tally, Sequence[tuple[float, bool]]]], older_weight: float = FLOOR
) -> dict[K, Recalled]:
    """`recall` of each shape of one model in one collection (shape ->
    (older, recent) as `recall` takes them), with the change detector read
    on every shape at once too: when no shape alone shows a change and all
    of them together do, each shape splits where the newest part begins in
    it. The shapes' recent verdicts are merged newest first (by age; among
    those of one age, each shape's newest in turn, in the mapping's order:
    the server and the simulation give the same)."""
    alone = {k: _change(older, [u for _, u in recent]) for k, (older, recent) in shapes.items()}
    pooled: dict[K, tuple[int, str]] = {}
    if len(shapes) > 1 and not any(split for split, _ in alone.values()):
        pooled = _change_across(shapes)
    return {
        k: _recalled(older, recent, older_weight, pooled.get(k) or alone[k])
        for k, (older, recent) in shapes.items()
    }


def _recalled(
    older: Tally, recent: Sequence[tuple[float, bool]], older_weight: float, change: tuple[int, str]
) -> Recalled:
    weights = [age_weight(age) for age, _ in recent]
    split, why = change
    keep = CHANGE_KEEP if why else 1.0
    good = bad = 0.0
    for index, ((_, useful), weight) in enumerate(zip(recent, weights, strict=True)):
        w = weight if index < split else weight * keep
        if useful:
            good += w
        else:
            bad += w
    floor = older_weight * keep
    return Recalled(Tally(good + older.good * floor, bad + older.bad * floor), why)


def _z(new_good: float, new_n: float, rest_good: float, rest_n: float) -> float:
    """How far the newest part's rate is from the rest's, in standard errors (signed)."""
    p_new = (new_good + 0.5) / (new_n + 1)
    p_rest = (rest_good + 0.5) / (rest_n + 1)
    spread = math.sqrt(p_new * (1 - p_new) / new_n + p_rest * (1 - p_rest) / rest_n)
    return (p_new - p_rest) / spread


def _change_point(n: int, total: float, z: Callable[[int, int], float]) -> tuple[int, float]:
    """(c, its z now): the newest `c` of a model's `n` recent verdicts began
    with a change the detector saw, now or when it read them before ((0, 0):
    none). `total`: its verdicts, the older tally's too; `z(j, c)`: the signed
    distance of the verdicts from the `j`-th newest to the `c`-th from all
    before them.

    Read afresh on every ask, the detector would forget a change it saw: once
    the verdicts since it outgrow a split, the newest part is no longer all
    after it and the rest no longer all before, and the change washes out
    (the degraded model of the simulation's hard world, flagged, unflagged,
    its old record back). So it also reads the model's record as it stood
    `j` verdicts ago, for every `j` within `CHANGE_MEMORY` (the store keeps
    the verdicts, so no state is kept: the server and the simulation read the
    same), and a change point seen then stays a change while the verdicts
    since it are still `CHANGE_HOLD_Z` standard errors from those before it,
    the same way round: a real change only grows clearer as its verdicts
    come, a chance swing fades into the verdicts after it."""
    seen: dict[int, float] = {}
    for j in range(min(n, CHANGE_MEMORY)):
        best_c, best = 0, 0.0
        for k in CHANGE_SPLITS:
            c = j + k
            if c > n:
                break
            if total - c < CHANGE_REST_FACTOR * k:
                continue
            score = z(j, c)
            if abs(score) > max(CHANGE_Z, abs(best)):
                best_c, best = c, score
        if best_c and best_c not in seen:
            seen[best_c] = best if j == 0 else z(0, best_c)  # its distance now
            if seen[best_c] * best <= 0:  # it moved the other way since: no change kept
                seen[best_c] = 0.0
            if CHANGE_LAST_ONLY:
                break
    held_c, held = 0, 0.0
    for c, now in seen.items():
        if abs(now) > max(CHANGE_HOLD_Z, abs(held)):
            held_c, held = c, now
    return held_c, held


def _change(older: Tally, newest_first: Sequence[bool]) -> tuple[int, str]:
    """(split, why): the newest `split` verdicts are far from the rest (0: no change)."""
    goods = list(accumulate((1 if useful else 0 for useful in newest_first), initial=0))
    n = len(newest_first)
    total_good, total = older.good + goods[n], older.total + n

    def z(j: int, c: int) -> float:
        return _z(goods[c] - goods[j], c - j, total_good - goods[c], total - c)

    split, _ = _change_point(n, total, z)
    if not split:
        return 0, ""
    rest = (total_good - goods[split]) / (total - split)
    return split, (
        f"changed: {goods[split]} of its last {split} verdicts useful against "
        f"{rest:.0%} before; older verdicts count {CHANGE_KEEP:.0%}"
    )


def _change_across(
    shapes: Mapping[K, tuple[Tally, Sequence[tuple[float, bool]]]],
) -> dict[K, tuple[int, str]]:
    """Per shape (split, why) of a change seen on every shape at once (empty: none).

    For the newest verdicts of all shapes merged, each is compared with its
    own shape's record before the split: z = sum(useful - p_shape) over the
    spread of that sum (each verdict's own, and the error of p_shape). Only a
    change the same way on every shape among them (two at least) counts: one
    shape's chance swing is the per-shape detector's to judge. Remembered as
    `_change_point` says, over the merged verdicts."""
    order = list(shapes)
    merged = sorted(
        (
            (age, order.index(k), i, useful)
            for k, (_, recent) in shapes.items()
            for i, (age, useful) in enumerate(recent)
        ),
        key=lambda row: (row[0], row[2], row[1]),  # same age: each shape's newest first, in turn
    )
    n = len(merged)
    # Per shape: its verdicts and useful ones among the newest x merged, for every x.
    counts = [[0] * (n + 1) for _ in order]
    goods = [[0] * (n + 1) for _ in order]
    for x, (_, s, _, useful) in enumerate(merged):
        for index in range(len(order)):
            counts[index][x + 1] = counts[index][x]
            goods[index][x + 1] = goods[index][x]
        counts[s][x + 1] += 1
        goods[s][x + 1] += 1 if useful else 0
    totals = [
        (older.good + sum(1 for _, u in recent if u), older.total + len(recent))
        for older, recent in shapes.values()
    ]

    def z(j: int, c: int) -> float:
        gaps: list[float] = []
        variance = 0.0
        for index, (good, total) in enumerate(totals):
            here = counts[index][c] - counts[index][j]
            rest_n = total - counts[index][c]
            if not here or rest_n <= 0:
                continue
            p = (good - goods[index][c] + 0.5) / (rest_n + 1)
            gaps.append(goods[index][c] - goods[index][j] - here * p)
            variance += here * p * (1 - p) * (1 + here / rest_n)
        gap = sum(gaps)
        # A change on every shape: two shapes at least, each moved the same way.
        if len(gaps) < 2 or variance <= 0 or any(g * gap < 0 for g in gaps):
            return 0.0
        return gap / math.sqrt(variance)

    split, score = _change_point(n, sum(total for _, total in totals), z)
    if not split:
        return {}
    return {
        key: (
            counts[index][split],
            f"changed on every shape: {goods[index][split]} of its last {counts[index][split]} verdicts "
            f"here useful, its newest {split} across shapes {abs(score):.1f} standard errors from its "
            f"record; older verdicts count {CHANGE_KEEP:.0%}",
        )
        for index, key in enumerate(order)
    }
