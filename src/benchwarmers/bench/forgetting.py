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
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

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
    weights = [age_weight(age) for age, _ in recent]
    split, why = _change(older, [useful for _, useful in recent])
    keep = CHANGE_KEEP if split else 1.0
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
