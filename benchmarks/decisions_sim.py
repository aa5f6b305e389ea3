"""One simulated run of the seating simulation (`decisions.py`): a decider
seats 1200 asks in a world, users judge some of them (late, noisy, in pairs
on some), and the run's figures come out as an `Outcome`."""

from __future__ import annotations

import math
import random
from collections.abc import Callable
from dataclasses import dataclass, field

from decisions_deciders import Decider
from decisions_world import (
    ASKS_PER_DAY,
    FREE_TIER,
    REST_ASKS,
    SHAPES,
    SUITE_TASKS_PER_SHAPE,
    Bench,
    World,
    _logistic,
    judge_agreement,
    make_world,
)

from benchwarmers.bench.forgetting import pair_score
from benchwarmers.bench.pairs import JudgeAgreement, pair_weight
from benchwarmers.bench.rating import Tally
from benchwarmers.calls.health import FAILING_AFTER


@dataclass
class Outcome:
    settled_at: int
    settled: bool
    verdicts: int
    regret: float
    detect: int = 0  # judged asks from the degradation until the degraded model left every record
    # Judged asks from the newcomer's arrival until it sat by record on every shape for good (to
    # the run's end; the run's judged asks since its arrival when it did not keep them): when it
    # first sat says little (the suite seats a better newcomer at once in every decider reading it).
    adopt: int = 0
    dead_seats: int = 0  # seats given to the dead model after it began failing
    dead_last: int = 0  # asks after it began failing of its last seat
    judge: JudgeAgreement = field(default_factory=JudgeAgreement)  # its agreement with people at the end


def _suite(world: World, rng: random.Random) -> dict[tuple[str, str], Tally]:
    suite = {}
    for alias, ps in world.base.items():
        for shape, p in zip(SHAPES, ps, strict=True):
            chance = min(0.95, max(0.05, p + rng.gauss(0.0, 0.12)))
            passed = sum(rng.random() < chance for _ in range(SUITE_TASKS_PER_SHAPE))
            suite[alias, shape] = Tally(float(passed), float(SUITE_TASKS_PER_SHAPE - passed))
    return suite


def simulate(
    decider: Decider,
    seed: int,
    asks: int,
    hard: bool,
    pairs_share: float,
    judge: float = 0.0,
    judged_share: float | None = None,
    coin_stream: int = 0,
) -> Outcome:
    world = make_world(hard, asks)
    world_rng = random.Random(seed)  # the world's coins: the same for every decider
    suite = _suite(world, world_rng)
    shapes = [world_rng.choice(SHAPES) for _ in range(asks)]
    judged_ask = [world_rng.random() for _ in range(asks)]
    pairwise_ask = [world_rng.random() < pairs_share for _ in range(asks)]
    delays = [
        (min(60, int(math.log(1 - world_rng.random()) / math.log(0.9))) if hard else 0) for _ in range(asks)
    ]
    coins = [
        {a: (world_rng.random(), world_rng.random(), world_rng.random()) for a in world.base}
        for _ in range(asks)
    ]
    # The decider's own coins: stream 0 is the one every earlier figure used; `coin_stream` picks another
    # stream with the world's coins unchanged (decisions.py --coins averages a seed over several).
    rng = random.Random(seed * 7919 + 1 + coin_stream * 1_000_003)
    judge_rng = random.Random(seed * 104729 + 7)  # the judge's own coins: the world's stay as they were
    judging = judge > 0 and getattr(decider, "judge", False)

    members = tuple(a for a in world.base if a != world.newcomer)
    bench = Bench(members, suite, on_bench=list(members))
    judge_rate = (0.30 if hard else 1.0) if judged_share is None else judged_share
    seat_judge = 1.0 if hard else 0.35
    pending: list[tuple[int, Callable[[], None]]] = []
    verdicts = regret = 0.0
    last_wrong = 0
    judged_asks = 0
    out = Outcome(0, False, 0, 0.0)
    detect_from = adopt_from = None
    detected: int | None = None
    adopted: int | None = None  # judged asks at which it last took a record seat it kept on every shape
    failing_from = None
    views: dict[str, tuple[object, set[str]]] = {}

    def view(shape: str, t: int) -> set[str]:
        held = frozenset(a for a in bench.on_bench if bench.held_out(a, t))
        key = (bench.version[shape], t // ASKS_PER_DAY, held)
        cached = views.get(shape)
        if cached is None or cached[0] != key:
            views[shape] = (key, decider.view(bench, shape, t))
        return views[shape][1]

    for t, shape in enumerate(shapes):
        # The world moves.
        if hard and t == world.arrive_at:  # onboarded and added to the collection
            bench.on_bench.append(world.newcomer)
            bench.members = (*bench.members, world.newcomer)
            bench.joined[world.newcomer] = t
            adopt_from = judged_asks
        if hard and t == world.degrade_at:
            detect_from = judged_asks
        if hard and t == world.retire_at:
            bench.retired.add(world.dead)
        # Verdicts that arrive now.
        arrived = [work for at, work in pending if at <= t]
        pending = [(at, work) for at, work in pending if at > t]
        for work in arrived:
            work()
        # Probes of the held-out failing models (bench/revive.py: at once, at most every REVIVE_EVERY).
        for alias in list(bench.failures):
            if bench.failures[alias] >= FAILING_AFTER and world.alive(alias, t):
                bench.failures[alias] = 0
        record, explorers = decider.seats(bench, shape, t, rng)
        bench.record[shape] = tuple(record)
        best = world.best(shape, t)
        top = sum(world.quality(a, shape, t) for a in best)
        seated = [*record, *explorers]
        answered: dict[str, bool] = {}
        got = 0.0
        for alias in seated:
            bench.seats[alias, shape] += 1
            bench.last_seated[alias, shape] = float(t + 1)
            _, useful_coin, limit_coin = coins[t][alias]
            if not world.alive(alias, t):
                if failing_from is None:
                    failing_from = t
                out.dead_seats += 1
                out.dead_last = t - failing_from
                bench.failures[alias] += 1
                continue
            if hard and alias in FREE_TIER and limit_coin < 0.05:
                bench.resting_until[alias] = t + REST_ASKS
                continue
            bench.failures[alias] = 0
            answered[alias] = useful_coin < world.quality(alias, shape, t)
            if alias in record:
                got += world.quality(alias, shape, t)
        regret += top - got
        # The user judges (some asks, some seats), late.
        if judged_ask[t] < judge_rate and answered:
            judged_asks += 1
            when = t + delays[t]
            if pairwise_ask[t] and len(answered) > 1:
                names = list(answered)
                for i, a in enumerate(names):
                    for b in names[i + 1 :]:
                        outcome = _pair(world, shape, t, a, b, answered, coins[t], hard)
                        pending.append((when, _add_pair(bench, shape, t, outcome)))
            else:
                for alias, useful in answered.items():
                    if coins[t][alias][0] < seat_judge:
                        seen = _noisy(useful, coins[t][alias][2], hard)
                        siblings = tuple(a for a in answered if a != alias)
                        pending.append((when, _add_verdict(bench, alias, shape, t, seen, siblings)))
        if judging and len(answered) > 1:  # the judge, at once after the reply
            names = list(answered)
            for i, a in enumerate(names):
                for b in names[i + 1 :]:
                    said = _judged(_pair(world, shape, t, a, b, answered, coins[t], hard), judge, judge_rng)
                    _add_judged(bench, shape, t, said)
        verdicts = sum(len(v) for v in bench.verdicts.values()) + sum(len(p) for p in bench.pairs.values())
        # Every shape read on every ask (a list, not `any`'s first wrong one): a trace's history
        # (`decisions_trace.py`) is then each shape's true record; the figures are the same.
        wrong = not all([world.right(view(s, t), s, t) for s in SHAPES])
        if wrong:
            last_wrong = int(verdicts)
        if (
            detect_from is not None
            and detected is None
            and all(world.degraded not in view(s, t) for s in SHAPES)
        ):
            detected = judged_asks - detect_from
        if adopt_from is not None:
            if not all(world.newcomer in view(s, t) for s in SHAPES):
                adopted = None
            elif adopted is None:
                adopted = judged_asks - adopt_from
    if detect_from is not None:
        out.detect = judged_asks - detect_from if detected is None else detected
    if adopt_from is not None:
        out.adopt = judged_asks - adopt_from if adopted is None else adopted
    settled = all(world.right(view(s, asks - 1), s, asks - 1) for s in SHAPES)
    out.settled_at = last_wrong if settled else int(verdicts)
    out.settled, out.verdicts, out.regret = settled, int(verdicts), regret
    if judging:
        out.judge = judge_agreement(bench)
    return out


def _judged(person: tuple[str, str, str], agrees: float, rng: random.Random) -> tuple[str, str, str]:
    """The judge's verdict on a pair: what a person would say with probability
    `agrees`, else the other way round (a tie or both bad: a coin's "better")."""
    if rng.random() < agrees:
        return person
    a, b, outcome = person
    if outcome == "better":
        return b, a, "better"
    return (a, b, "better") if rng.random() < 0.5 else (b, a, "better")


def _add_judged(bench: Bench, shape: str, t: int, said: tuple[str, str, str]) -> None:
    better, worse, outcome = said
    bench.judge_pairs[shape][t // ASKS_PER_DAY, better, worse, outcome] += 1
    bench.judge_said[t, frozenset((better, worse))] = said
    bench.version[shape] += 1


def _noisy(useful: bool, coin: float, hard: bool) -> bool:
    """The user's verdict: wrong 15% of the time on a useful answer, 5% on a bad one (hard world)."""
    if not hard:
        return useful
    return (coin >= 0.15) if useful else (coin < 0.05)


def _pair(
    world: World,
    shape: str,
    t: int,
    a: str,
    b: str,
    answered: dict[str, bool],
    coins: dict[str, tuple[float, float, float]],
    hard: bool,
) -> tuple[str, str, str]:
    ua, ub = _noisy(answered[a], coins[a][2], hard), _noisy(answered[b], coins[b][2], hard)
    if ua and not ub:
        return a, b, "better"
    if ub and not ua:
        return b, a, "better"
    if not ua:
        return a, b, "both_bad"
    qa, qb = world.quality(a, shape, t), world.quality(b, shape, t)
    if abs(qa - qb) < 0.05:
        return a, b, "tie"
    chance = _logistic(4 * (qa - qb))
    return (a, b, "better") if (coins[a][0] + coins[b][0]) % 1.0 < chance else (b, a, "better")


def _add_verdict(
    bench: Bench, alias: str, shape: str, t: int, useful: bool, siblings: tuple[str, ...]
) -> Callable[[], None]:
    def add() -> None:
        bench.verdicts[alias, shape].append((t, useful))
        bench.feedback[shape].append((alias, useful, siblings))
        bench.version[shape] += 1

    return add


def _add_pair(bench: Bench, shape: str, t: int, outcome: tuple[str, str, str]) -> Callable[[], None]:
    def add() -> None:
        bench.pairs[shape].append((t, *outcome))
        better, worse, said = outcome
        bench.fared[better, shape].append((t, pair_score(said, True)))
        bench.fared[worse, shape].append((t, pair_score(said, False)))
        bench.version[shape] += 1
        # The judge's pair of the same answers now counts nothing (`pair_weight(person_too=True)`).
        judged = bench.judge_said.get((t, frozenset(outcome[:2])))
        if judged is not None and pair_weight("judge", JudgeAgreement(), person_too=True) == 0:
            bench.judge_pairs[shape][t // ASKS_PER_DAY, *judged] -= 1

    return add
