"""The change detector's memory (`bench/forgetting.py`): a change it saw
stays seen while the verdicts since it still say so, and a chance swing
does not."""

from __future__ import annotations

import pytest

from benchwarmers.bench.forgetting import CHANGE_KEEP, recall, recall_shapes
from benchwarmers.bench.rating import Tally

pytestmark = pytest.mark.unit


def _newest_first(pattern: str) -> list[tuple[float, bool]]:
    """'1' useful, '0' not, oldest first in `pattern`: as recall takes them (newest first, age 0)."""
    return [(0.0, c == "1") for c in reversed(pattern)]


def test_a_degraded_model_stays_flagged_as_its_new_verdicts_grow() -> None:
    """27 verdicts at 6 in 7 useful, then a third: the newest 8 or 16 first
    show the change; once the verdicts since it outgrow those splits (and
    the rest is too short for the split at 32), the newest part reads half
    before and half after, and a detector reading afresh let the old record
    count whole again. The change point it saw stays, its evidence clearer
    with every verdict since."""
    before = "1110111" * 3 + "111011"
    flagged_at = None
    for m in range(1, 61):
        recalled = recall(Tally(), _newest_first(before + ("001" * 20)[:m]))
        if flagged_at is None:
            flagged_at = m if recalled.changed else None
            continue
        assert recalled.changed, f"unflagged after {m} verdicts since the change (flagged at {flagged_at})"
        # The old record counts a tenth: the tally is mostly what it does now.
        assert recalled.tally.good < m / 3 + 1 + len(before) * CHANGE_KEEP
    assert flagged_at is not None and flagged_at <= 16


def test_a_chance_swing_is_let_go() -> None:
    """A steady model (7 in 10 useful) with 8 bad verdicts in a row: a
    change by the detector's threshold then, but as its usual verdicts
    follow, the verdicts since that point come back toward its record and
    the older ones count whole again."""
    steady = "1101101101" * 10
    assert recall(Tally(), _newest_first(steady + "0" * 8)).changed
    after = steady + "0" * 8 + "1101101101" * 4
    assert recall(Tally(), _newest_first(after)).changed == ""


def test_a_change_on_every_shape_stays_seen_together() -> None:
    """A model worse on every shape, a few verdicts a shape: the shapes read
    together see the change, and keep seeing it as its verdicts since grow
    past the splits on each shape's rest."""
    before = "1110111" * 2  # 14 a shape, 6 in 7 useful
    kept = []
    for m in range(1, 31):
        since = ("001" * 10)[:m]
        shapes = {s: (Tally(), _newest_first(before + since)) for s in ("short", "long", "code")}
        together = recall_shapes(shapes)
        kept.append(all(r.changed for r in together.values()))
    first = kept.index(True)
    assert first < 12 and all(kept[first:])
