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
) -> dict[K, tuple[int, str]]:
    """Per shape (split, why) of a change seen on every shape at once (empty: none).

    For the newest k verdicts of all shapes merged, each is compared with
    its own shape's record before the split: z = sum(useful - p_shape) over
    the spread of that sum (each verdict's own, and the error of p_shape).
    Only a change the same way on every shape among them (two at least)
    counts: one shape's chance swing is the per-shape detector's to judge."""
    order = list(shapes)
    merged = sorted(
        (
            (age, order.index(k), i, useful)
            for k, (_, recent) in shapes.items()
            for i, (age, useful) in enumerate(recent)
        ),
        key=lambda row: (row[0], row[2], row[1]),  # same age: each shape's newest first, in turn
    )
    best_z, best_k = CHANGE_Z, 0
    for k in CHANGE_SPLITS:
        if k > len(merged):
            break
        new = merged[:k]
        rest_total = sum(older.total for older, _ in shapes.values()) + len(merged) - k
        if rest_total < CHANGE_REST_FACTOR * k:
            continue
        gaps: list[float] = []
        variance = 0.0
        for index, key in enumerate(order):
            here = [useful for _, s, _, useful in new if s == index]
            if not here:
                continue
            older, recent = shapes[key]
            after = [u for _, u in recent[len(here) :]]
            rest_good, rest_n = older.good + sum(after), older.total + len(after)
            if rest_n <= 0:
                continue
            p = (rest_good + 0.5) / (rest_n + 1)
            gaps.append(sum(here) - len(here) * p)
            variance += len(here) * p * (1 - p) * (1 + len(here) / rest_n)
        gap = sum(gaps)
        # A change on every shape: two shapes at least, each moved the same way.
        if len(gaps) < 2 or variance <= 0 or any(g * gap < 0 for g in gaps):
            continue
        z = abs(gap) / math.sqrt(variance)
        if z > best_z:
            best_z, best_k = z, k
    if not best_k:
        return {}
    new = merged[:best_k]
    out = {}
    for index, key in enumerate(order):
        split = sum(1 for _, s, _, _ in new if s == index)
        useful = sum(u for _, s, _, u in new if s == index)
        out[key] = (
            split,
            f"changed on every shape: {useful} of its last {split} verdicts here useful, its newest "
            f"{best_k} across shapes {best_z:.1f} standard errors from its record; "
            f"older verdicts count {CHANGE_KEEP:.0%}",
        )
    return out
