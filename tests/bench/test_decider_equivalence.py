"""The simulation and the server seat the same way: the same store state,
given to the server's panel seating (`panel.plan.plan_panel`, through
`decisions.seat_plan`) and to the simulation's decider
(`benchmarks/decisions.py`, which builds the decider's input from its own
bench), yields the same record seats and the same explorer."""

from __future__ import annotations

import random
import sys
from collections import defaultdict
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from sqlalchemy import update

from benchwarmers.bench.forgetting import CHANGE_KEEP, age_weight, pair_score
from benchwarmers.bench.pair_reads import pair_counts
from benchwarmers.bench.rating import Tally
from benchwarmers.panel.plan import plan_panel
from benchwarmers.runtime import Runtime
from benchwarmers.store.collections import add_collection
from benchwarmers.store.models import add_model, set_status
from benchwarmers.store.schema import Model, PairVerdict, SuiteResult
from benchwarmers.types import Ask, Request, user

from .conftest import Seat, judge_pair

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))
import decisions as simulation
import decisions_world
from decisions_world import ASKS_PER_DAY

pytestmark = pytest.mark.unit

MEMBERS = ("atlas", "boreal", "cobalt", "dune", "ember", "tired", "broken", "fallen")
OUTSIDERS = ("fjord", "gale", "heath")
# (alias, shape) -> verdicts in the order given (True: useful).
VERDICTS: dict[tuple[str, str], list[bool]] = {
    ("atlas", "short"): [True] * 7 + [False] * 2,
    ("boreal", "short"): [True] * 5 + [False] * 3,
    ("cobalt", "short"): [True] * 2 + [False] * 6,
    ("dune", "short"): [True, False],
    ("dune", "code"): [True] * 6,
    ("ember", "short"): [False] * 4,
    ("tired", "short"): [True] * 9,
    ("broken", "short"): [True] * 8,
    ("fjord", "short"): [True] * 4 + [False],
    ("gale", "short"): [False, False, True],
    ("heath", "short"): [True, False, True],
    # Good on every shape, then worse: too few verdicts for a change on any
    # shape alone, one on every shape at once (`forgetting.recall_shapes`).
    ("fallen", "short"): [True] * 14 + [False] * 4,
    ("fallen", "long"): [True] * 14 + [False] * 4,
    ("fallen", "code"): [True] * 14 + [False] * 4,
}
SUITE = {("atlas", "short"): (5, 1), ("cobalt", "short"): (6, 0), ("heath", "code"): (2, 4)}
# Pairs judged on short: (days ago, better, worse, outcome). "fallen" won its pairs before its
# change and loses them now: the detector reads them, and those before its change count less.
PAIRS = [
    (6, "fallen", "atlas", "better"),
    (5, "fallen", "boreal", "better"),
    (4, "fallen", "atlas", "better"),
    (3, "boreal", "cobalt", "tie"),
    (0, "atlas", "fallen", "better"),
    (0, "boreal", "fallen", "better"),
    (0, "cobalt", "dune", "both_bad"),
]


@pytest.mark.parametrize("seed", [1, 2, 3, 4])
async def test_the_server_and_the_simulation_seat_alike(offline: Runtime, seat: Seat, seed: int) -> None:
    store = offline.store
    for alias in (*MEMBERS, *OUTSIDERS):
        await add_model(store, alias, "local", alias + "-served")
    await add_collection(store, "trio", list(MEMBERS), seats=3, explorer_seats=1, promotion="auto")
    await set_status(store, "tired", "resting", resting_until=datetime.now(UTC) + timedelta(hours=1))
    async with store.write() as session:  # two calls in a row failed (calls/health.py)
        await session.execute(update(Model).where(Model.alias == "broken").values(failures=2))
        for (alias, shape), (passed, failed) in SUITE.items():
            for i in range(passed + failed):
                session.add(
                    SuiteResult(
                        run_id="r",
                        alias=alias,
                        task=f"{shape}{i}",
                        shape=shape,
                        at=datetime.now(UTC),
                        passed=i < passed,
                    )
                )
    # The same facts, as the simulation keeps them.
    bench = simulation.Bench(
        MEMBERS,
        {
            (a, s): Tally(*map(float, SUITE.get((a, s), (0, 0))))
            for a in (*MEMBERS, *OUTSIDERS)
            for s in simulation.SHAPES
        },
        on_bench=[*MEMBERS, *OUTSIDERS],
    )
    order = 0
    for (alias, shape), verdicts in VERDICTS.items():
        for useful in verdicts:
            await seat(alias, shape=shape, useful=useful)
            bench.verdicts[alias, shape].append((0, useful))
            order += 1
            bench.seats[alias, shape] += 1
            bench.last_seated[alias, shape] = float(order)
    for i, (days, better, worse, outcome) in enumerate(PAIRS):
        await judge_pair(store, "trio", i, better, worse, outcome)
        async with store.write() as session:  # judged `days` ago (and an hour: whole days)
            when = datetime.now(UTC) - timedelta(days=days, hours=1)
            await session.execute(update(PairVerdict).where(PairVerdict.ask_id == f"ask{i}").values(at=when))
        at = -ASKS_PER_DAY * days + i  # an ask of that day, one per pair as on the server (now: day 0)
        bench.pairs["short"].append((at, better, worse, outcome))
        bench.fared[better, "short"].append((at, pair_score(outcome, True)))
        bench.fared[worse, "short"].append((at, pair_score(outcome, False)))
    bench.resting_until["tired"] = 10**9
    bench.failures["broken"] = 2
    bench.joined = defaultdict(int)  # every model was added just now: all newcomers, as on the server

    ask = Ask("trio", "panel", Request((user("what is the capital of France?"),)))
    plan = await plan_panel(offline, ask, rng=random.Random(seed))
    served_record = [s.model.alias for s in plan.seating.seats if not s.explorer]
    served_explorers = [s.model.alias for s in plan.seating.seats if s.explorer]

    record, explorers = simulation.Ours().seats(bench, "short", 0, random.Random(seed))
    fallen = decisions_world.evidence_of(bench, "fallen", "short", 0)
    assert fallen.changed.startswith("changed on every shape")
    assert fallen.changed_since == 0.0  # its pairs before today count less, on both sides
    served_pairs = await pair_counts(store, "trio", "short", datetime.now(UTC), {"fallen": 0.0})
    assert served_pairs is not None
    simulated = decisions_world.pair_counts(bench, "short", 0)
    assert served_pairs.record("fallen") == pytest.approx(simulated.record("fallen"))
    assert served_pairs.answers == pytest.approx(simulated.answers)
    assert simulated.answers["fallen"] == pytest.approx(2 + 3 * CHANGE_KEEP * age_weight(5.0), rel=0.2)
    assert simulated.record("fallen") == pytest.approx((3 * CHANGE_KEEP * age_weight(5.0), 2.0), rel=0.2)
    assert served_record == record
    assert served_explorers == explorers[:1]
    left = {m.alias: m.reason for m in plan.seating.left_off}
    assert left["broken"].startswith("failing") and "resting" in left["tired"]
    assert "broken" not in (*record, *explorers) and "tired" not in (*record, *explorers)
