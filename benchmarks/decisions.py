"""How fast do verdicts put the right models on the panel, in the product's own seating flow?

The simulation drives `benchwarmers.bench.decider.decide`, the function the
server's panel seating calls (`bench/decisions.py::seat_plan`), on a
`Table` and `Candidate`s built from the simulated bench the way
`decisions.seat_state` builds them from the store: members and non-members,
held out while resting (a 429) or failing (calls that fail in a row, until a
probe answers, probed on the next ask as `bench/revive.py` does), verdicts
forgotten with age and after a change (`bench/forgetting.py`, one simulated
day = `ASKS_PER_DAY` asks), pairs fitted in (`bench/pairs.py`), newcomers
explored first, promotion `auto`. tests/bench/test_decider_equivalence.py
checks that the server and this simulation seat the same way from the same state.

Two worlds:

- **easy** (the world this benchmark always had): 12 models of known
  usefulness per shape (short, long, code), each seat judged with p=0.35,
  verdicts honest and at once, nothing changes.
- **hard**: 16 models whose usefulness per shape follows an arena-like
  spread (a logistic of arena-style scores 1050-1320; the figures are this
  benchmark's own, shaped like a public leaderboard's, not copied from
  one); 30% of asks judged (every seat of a judged ask); verdicts wrong 15%
  of the time when the answer was useful and 5% when not; verdicts arrive
  a geometric ~10 asks late; four free-tier models answer 429 on 5% of
  calls and rest 5 asks; the best model degrades at a third of the run
  (0.35 less on every shape); a better newcomer arrives at half (onboarded
  and added to the collection: a newcomer, explored first); a member of the
  top three dies at two thirds (every call fails; it is retired 100 asks later).

`--pairs P`: on a share P of judged asks the user compares the seats two by
two instead of judging each (better / tie / both bad, from each answer's
usefulness; a tie between two useful answers goes to the truly better one
with the logistic of their difference).

`--judge A` (judge worlds): a judge model compares every pair of answered
seats on every ask, at once (as `panel/judge.py` does after each reply),
and agrees with what a person would say of the pair with probability A
(A = 0.7; A = 0.5 is a useless judge); when it disagrees it says the
other way round (a tie or both bad: a coin's "better"). Its coins are its
own, so the world's are the same as without it. Only "ours + judge" reads
its pairs, weighted exactly as the server weighs them (`bench/pairs.py`:
`agreement` on the asks a person compared in pairs, `pair_weight`); the
run is then ours with people's verdicts alone against ours with the
judge's too, paired by seed, and verdicts to settle count people's only.

Deciders, every one with the same seat layout (3 record seats from the
members + 1 explorer seat), the same eligibility (resting, failing,
retired are never seated), the same suite at the same weight
(`rating.SUITE_PER_TASK` a task), the same verdicts and pairs; regret
counts record seats only:

- ours: `decider.decide` (the product);
- raw ratio: (useful + suite + pair wins) / (all of them), explorer by
  rotation (fewest judged);
- thompson: record by posterior mean, explorer by the highest Beta draw
  among the rest, prior strength tuned;
- ucb: record by mean, explorer by the highest mean + c sqrt(ln N / n)
  among the rest, c tuned;
- bradley-terry (as LMArena fits it): a BT fit of the pairs (and the
  suite as games against a fixed 0.5 anchor), record by strength, explorer
  the fewest-compared;
- elo (as Open WebUI computes it): K=32 from 1000, a useful single verdict
  a win against every other seat of the ask, a not useful one a loss (its
  leaderboard's rule), pairs as games, suite as games against a 1000
  anchor; record by rating, explorer by rotation.

`--coins K` runs each seed K times, with K of each decider's own coin
streams (the explorer's draws, a tie's coin) and the world's coins the
same, and takes a seed's figures as their mean (unsettled counts runs):
ours' explorer draw alone moved its 96-seed mean verdicts to settle from
1641 to 1707 in the hard world, while UCB's, a fixed bound whose coins only
break ties, moved 12; one stream a seed measures a decider's luck with its
draws as much as its rule. Stream 0 is the one `--coins 1` (the default)
and every earlier table used.

Tuning is on seeds `--tune-seeds` (default 1000-1015) and reported on
`--first-seed` (default 0) onward: `--tune` prints the baselines' constants
tried and the best, and the run uses the constants in `TUNED`.

Printed per decider, mean ± one standard error over seeds: verdicts to
settle (verdicts until the record seats it would fill for every shape are
the truly best three of that moment and stay so to the end), unsettled
runs, regret, and ours minus it paired by seed (and that in standard
errors); in the hard world also judged asks to drop the degraded model
(until it first left every record), to adopt the newcomer (until it sat by
record on every shape for good: from then to the run's end; the suite seats
a better newcomer at once in every decider reading it, so when it first sat
measures the suite, not the seating), and seats given to the dead model
after it began failing.

The code: `decisions_world.py` (the worlds, the bench as the store keeps
it, and the decider's input read from it), `decisions_deciders.py` (ours
and the baselines), `decisions_sim.py` (one run, its `Outcome`), this file
(the runs over seeds, tuning, the tables). What the deciders read on every
ask is kept by what it reads (and `decider.rankings` keeps its fit), so a
48-seed run of the six takes minutes; the figures are those of computing
everything afresh on every ask.

Run: `python benchmarks/decisions.py --world hard --pairs 0.5 --seeds 48 --jobs 2 --coins 4`
(the held-out table of docs/benchmarks.md; `--coins 1` is four times quicker and
one draw of each decider's luck; `--tune` to choose the baselines' constants on
the tuning seeds first).
Judge worlds: `python benchmarks/decisions.py --world easy --pairs 0.5 --judged 0.3
--judge 0.7 --seeds 48 --jobs 2` (and `--judge 0.5`): ours alone against ours
with the judge, paired by seed, and the judge's agreement and weight at the end.
"""

from __future__ import annotations

import argparse
import math
import multiprocessing
import statistics
import time
from collections.abc import Callable

from decisions_deciders import TUNED, Decider, Ours, OursJudged, deciders
from decisions_sim import Outcome, simulate
from decisions_world import SHAPES, Bench, World, make_world

__all__ = [
    "SHAPES",
    "TUNED",
    "Bench",
    "Decider",
    "Ours",
    "OursJudged",
    "Outcome",
    "World",
    "deciders",
    "make_world",
    "simulate",
]


Runs = list[list[Outcome]]  # a decider's runs: per seed, one Outcome per decider coin stream


def _run(
    args: tuple[int, dict[str, dict[str, float]], int, int, int, bool, float, float, float | None],
) -> Outcome:
    index, tuned, seed, coins, asks, hard, pairs_share, judge, judged_share = args
    return simulate(deciders(tuned)[index], seed, asks, hard, pairs_share, judge, judged_share, coins)


def _per_seed(runs: Runs, value: Callable[[Outcome], float]) -> list[float]:
    """A seed's figure: its mean over the decider's coin streams, so a decider's own draws
    (ours' explorer draw moved a 96-seed mean by 66 verdicts) do not stand in for its merit."""
    return [statistics.mean(value(o) for o in seed_runs) for seed_runs in runs]


def _paired(a: Runs, b: Runs, value: Callable[[Outcome], float]) -> tuple[float, float]:
    return _mean_se([x - y for x, y in zip(_per_seed(a, value), _per_seed(b, value), strict=True)])


def _settle(o: Outcome) -> float:
    return float(o.settled_at)


def _regret(o: Outcome) -> float:
    return o.regret


def _mean_se(values: list[float]) -> tuple[float, float]:
    return statistics.mean(values), statistics.stdev(values) / math.sqrt(len(values))


def _run_all(
    pool: multiprocessing.pool.Pool,
    tuned: dict[str, dict[str, float]],
    names: list[str],
    seeds: range,
    args: argparse.Namespace,
) -> dict[str, Runs]:
    index = {d.name: i for i, d in enumerate(deciders(tuned))}
    work = [
        (index[n], tuned, seed, coin, args.asks, args.world == "hard", args.pairs, args.judge, args.judged)
        for n in names
        for seed in seeds
        for coin in range(args.coins)
    ]
    done = pool.map(_run, work, chunksize=1)
    results: dict[str, Runs] = {n: [[] for _ in seeds] for n in names}
    for (i, _, seed, *_), outcome in zip(work, done, strict=True):
        results[deciders(tuned)[i].name][seed - seeds.start].append(outcome)
    return results


def _tune(pool: multiprocessing.pool.Pool, args: argparse.Namespace) -> dict[str, dict[str, float]]:
    seeds = range(args.tune_seeds, args.tune_seeds + args.tune_count)
    tuned = {k: dict(v) for k, v in TUNED.items()}
    for name, key, values in (
        ("thompson", "prior", (0.5, 1.0, 2.0, 4.0)),
        ("ucb", "c", (0.1, 0.25, 0.5, 1.0)),
    ):
        scores = {}
        for value in values:
            trial = {**tuned, name: {key: value}}
            runs = _run_all(pool, trial, [name], seeds, args)[name]
            scores[value] = statistics.mean(_per_seed(runs, _settle)) + statistics.mean(
                _per_seed(runs, _regret)
            )
            print(f"tune {name} {key}={value}: settle+regret {scores[value]:.0f}", flush=True)
        tuned[name] = {key: min(scores, key=lambda v: scores[v])}
    print(f"tuned on seeds {seeds.start}-{seeds.stop - 1}: {tuned}")
    return tuned


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n", 1)[0])
    parser.add_argument("--world", choices=("easy", "hard"), default="hard")
    parser.add_argument("--pairs", type=float, default=0.0, help="share of judged asks judged in pairs")
    parser.add_argument("--seeds", type=int, default=48)
    parser.add_argument("--first-seed", type=int, default=0)
    parser.add_argument("--asks", type=int, default=1200)
    parser.add_argument("--jobs", type=int, default=1)
    parser.add_argument(
        "--coins",
        type=int,
        default=1,
        help="runs a seed with this many of each decider's own coin streams (the world's the same), "
        "its figures their mean",
    )
    parser.add_argument("--tune", action="store_true", help="choose the baselines' constants first")
    parser.add_argument("--tune-seeds", type=int, default=1000)
    parser.add_argument("--tune-count", type=int, default=16)
    parser.add_argument(
        "--judged", type=float, default=None, help="share of asks people judge (default: easy 1, hard 0.3)"
    )
    parser.add_argument(
        "--judge",
        type=float,
        default=0.0,
        help="a judge model agreeing with people this often: ours alone vs with it",
    )
    args = parser.parse_args()
    started = time.perf_counter()
    with multiprocessing.Pool(args.jobs) as pool:
        tuned = _tune(pool, args) if args.tune else TUNED
        names = [d.name for d in deciders(tuned) if d.name != OursJudged.name]
        if args.judge:
            names = ["ours", OursJudged.name]
        seeds = range(args.first_seed, args.first_seed + args.seeds)
        print(
            f"{args.world} world, pairs on {args.pairs:.0%} of judged asks, {args.asks} asks, "
            f"seeds {seeds.start}-{seeds.stop - 1}"
            + (f" x {args.coins} decider coin streams" if args.coins > 1 else "")
            + f", constants {tuned}"
            + (f", people judge {args.judged:.0%} of asks" if args.judged is not None else "")
            + (f", a judge agreeing with people {args.judge:.0%}" if args.judge else "")
        )
        results = _run_all(pool, tuned, names, seeds, args)
    if args.judge:
        _report_judge(results)
    else:
        _report(results, args.world == "hard")
    print(f"({time.perf_counter() - started:.0f}s)")


def _report(results: dict[str, Runs], hard: bool) -> None:
    ours = results["ours"]
    head = f"{'decider':<14} {'verdicts to settle':>18} {'unsettled':>9} {'regret':>14}"
    head += f" {'ours - it: settle':>22} {'regret':>18}"
    if hard:
        head += f" {'detect':>7} {'adopt':>6} {'dead seats':>16}"
    print(head)
    for name, runs in results.items():
        outcomes = [o for seed_runs in runs for o in seed_runs]
        settle, se = _mean_se(_per_seed(runs, _settle))
        reg, reg_se = _mean_se(_per_seed(runs, _regret))
        unsettled = f"{sum(not o.settled for o in outcomes)}/{len(outcomes)}"
        line = f"{name:<14} {settle:>10.0f} ± {se:>4.0f} {unsettled:>9} {reg:>7.1f} ± {reg_se:>4.1f}"
        if name != "ours":
            d, d_se = _paired(ours, runs, _settle)
            r, r_se = _paired(ours, runs, _regret)
            line += f" {d:>+8.0f} ± {d_se:>3.0f} ({_in_se(d, d_se)})"
            line += f" {r:>+6.1f} ± {r_se:>3.1f} ({_in_se(r, r_se)})"
        else:
            line += " " * 41
        if hard:
            det = statistics.median(_per_seed(runs, lambda o: o.detect))
            ado = statistics.median(_per_seed(runs, lambda o: o.adopt))
            dead = f"{max(o.dead_seats for o in outcomes)} (<={max(o.dead_last for o in outcomes)} asks)"
            line += f" {det:>7.0f} {ado:>6.0f} {dead:>16}"
        print(line)
    ours_settle, raw_settle = _per_seed(ours, _settle), _per_seed(results["raw ratio"], _settle)
    mean_share = statistics.mean(ours_settle) / statistics.mean(raw_settle)
    share, share_se = _mean_se([a / b for a, b in zip(ours_settle, raw_settle, strict=True) if b])
    print(
        f"ours / raw ratio: {mean_share:.2f} of the mean (per seed {share:.2f} ± {share_se:.2f}); "
        "detect, adopt: median judged asks; dead seats: most in a run (its last, asks after it began failing)"
    )


def _report_judge(results: dict[str, Runs]) -> None:
    """Ours with people's verdicts alone against ours with the judge's too, paired by seed."""
    alone, judged = results["ours"], results[OursJudged.name]
    print(f"{'decider':<14} {'verdicts to settle':>18} {'unsettled':>9} {'regret':>14}")
    for name, runs in results.items():
        outcomes = [o for seed_runs in runs for o in seed_runs]
        settle, se = _mean_se(_per_seed(runs, _settle))
        reg, reg_se = _mean_se(_per_seed(runs, _regret))
        unsettled = f"{sum(not o.settled for o in outcomes)}/{len(outcomes)}"
        print(f"{name:<14} {settle:>10.0f} ± {se:>4.0f} {unsettled:>9} {reg:>7.1f} ± {reg_se:>4.1f}")
    d, d_se = _paired(judged, alone, _settle)
    r, r_se = _paired(judged, alone, _regret)
    ratio = statistics.mean(_per_seed(judged, _settle)) / statistics.mean(_per_seed(alone, _settle))
    weight, weight_se = _mean_se(_per_seed(judged, lambda o: o.judge.weight))
    ran = [o for seed_runs in judged for o in seed_runs]
    share, share_se = _mean_se([o.judge.agreed / o.judge.compared for o in ran if o.judge.compared])
    compared = statistics.mean(o.judge.compared for o in ran)
    print(
        f"with the judge - alone, paired by seed: settle {d:+.0f} ± {d_se:.0f} ({_in_se(d, d_se)}), "
        f"regret {r:+.1f} ± {r_se:.1f} ({_in_se(r, r_se)}); with / alone {ratio:.2f} of the mean"
    )
    print(
        f"judge at the end: agreement measured {share:.2f} ± {share_se:.2f} over {compared:.0f} asks, "
        f"weight {weight:.3f} ± {weight_se:.3f}"
    )


def _in_se(diff: float, se: float) -> str:
    return f"{diff / se:>+5.1f} SE" if se else "  n/a"


if __name__ == "__main__":
    main()
