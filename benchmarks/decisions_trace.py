"""Why one run of the seating simulation settled late: ours on one seed, traced.

`decisions.py` says how many verdicts a run took to settle; this says
where they went. For each shape: the truly best three, every change of the
record seats over the run (marked WRONG while they are not the best three,
in the easy world's sense), the explorer seats each model had until the
record was last wrong, and, at the asks named with `--at`, the ranking the
record was read from (score, mean, 90% interval, verdicts, pairs). A
screen's slowest seeds, traced, show what a change must fix (docs/benchmarks.md,
"The easy world's shortfall").

Run: `python benchmarks/decisions_trace.py 1036 --world easy --at 780,790`
"""

from __future__ import annotations

import argparse
import random
from collections import Counter

from decisions_deciders import Ours
from decisions_sim import simulate
from decisions_world import SHAPES, Bench, make_world, pair_counts, seat_state

from benchwarmers.bench.decider import decide


class Traced(Ours):
    """Ours, keeping every record it reports and every seat it gives."""

    def __init__(self, at: set[int]) -> None:
        self.at = at
        self.views: list[tuple[int, str, frozenset[str]]] = []
        self.seated: list[tuple[int, str, tuple[str, ...]]] = []

    def view(self, bench: Bench, shape: str, t: int) -> set[str]:
        record = super().view(bench, shape, t)
        self.views.append((t, shape, frozenset(record)))
        return record

    def seats(self, bench: Bench, shape: str, t: int, rng: random.Random) -> tuple[list[str], list[str]]:
        record, explorers = super().seats(bench, shape, t, rng)
        self.seated.append((t, shape, tuple(explorers)))
        if t in self.at:
            table, candidates = seat_state(bench, shape, t)
            decision = decide(table, candidates, pairs=pair_counts(bench, shape, t), explore=False)
            print(f"ask {t}, {shape}: record {', '.join(decision.record)}; explorer {', '.join(explorers)}")
            for r in decision.rankings[:7]:
                pairs = next((x for x in r.reasons if x.startswith("pairs")), "no pairs")
                print(
                    f"  {r.alias:<8} score {r.score:.3f} mean {r.mean:.3f} "
                    f"[{r.interval[0]:.2f}, {r.interval[1]:.2f}] verdicts {r.judged}; {pairs}"
                )
        return record, explorers


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n", 1)[0])
    parser.add_argument("seed", type=int)
    parser.add_argument("--world", choices=("easy", "hard"), default="easy")
    parser.add_argument("--pairs", type=float, default=0.5)
    parser.add_argument("--asks", type=int, default=1200)
    parser.add_argument("--at", default="", help="asks at which to print the ranking, comma-separated")
    args = parser.parse_args()
    traced = Traced({int(a) for a in args.at.split(",") if a})
    outcome = simulate(traced, args.seed, args.asks, args.world == "hard", args.pairs)
    world = make_world(args.world == "hard", args.asks)
    print(f"seed {args.seed}: settled after {outcome.settled_at} verdicts, regret {outcome.regret:.1f}")
    for shape in SHAPES:
        history = [(t, record) for t, s, record in traced.views if s == shape]
        wrong = [t for t, record in history if not world.right(set(record), shape, t)]
        last = wrong[-1] if wrong else -1
        print(f"{shape}: best {', '.join(sorted(world.best(shape, 0)))}; record last wrong at ask {last}")
        explored = Counter(e[0] for t, s, e in traced.seated if s == shape and e and t <= last)
        print(f"  explorer seats until then: {dict(explored.most_common())}")
        before: frozenset[str] = frozenset()
        for t, record in history:
            if record != before:
                mark = "" if world.right(set(record), shape, t) else "  WRONG"
                print(f"  ask {t}: {', '.join(sorted(record))}{mark}")
                before = record


if __name__ == "__main__":
    main()
