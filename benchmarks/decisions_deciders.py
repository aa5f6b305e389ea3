"""The deciders the seating simulation compares (`decisions.py`): ours (the
product's `decider.decide`) and the fair baselines, every one with the same
seat layout, eligibility, suite weight, verdicts and pairs (`decisions.py`'s
docstring says what each is)."""

from __future__ import annotations

import math
import random
from collections import defaultdict

from decisions_world import SEATS, Bench, _kept, pair_counts, seat_state

from benchwarmers.bench.decider import Decision, decide
from benchwarmers.bench.rating import SUITE_PER_TASK, Tally


class Decider:
    """Fills an ask's seats and says which record seats it would fill now (`view`)."""

    name = ""

    def seats(self, bench: Bench, shape: str, t: int, rng: random.Random) -> tuple[list[str], list[str]]:
        raise NotImplementedError

    def view(self, bench: Bench, shape: str, t: int) -> set[str]:
        raise NotImplementedError


class Ours(Decider):
    name = "ours"
    judge = False  # reads a judge model's pairs (`--judge`)

    def seats(self, bench: Bench, shape: str, t: int, rng: random.Random) -> tuple[list[str], list[str]]:
        table, candidates = seat_state(bench, shape, t)
        pairs = pair_counts(bench, shape, t, self.judge)
        decision: Decision = decide(table, candidates, pairs=pairs, rng=rng)
        return list(decision.record), list(decision.explorers)

    def view(self, bench: Bench, shape: str, t: int) -> set[str]:
        table, candidates = seat_state(bench, shape, t)
        pairs = pair_counts(bench, shape, t, self.judge)
        return set(decide(table, candidates, pairs=pairs, explore=False).record)


class OursJudged(Ours):
    """Ours with a judge model's pairs too, weighed as the server weighs them."""

    name = "ours + judge"
    judge = True


def _eligible(bench: Bench, t: int) -> list[str]:
    return [a for a in bench.on_bench if not bench.held_out(a, t)]


def _counts(bench: Bench, alias: str, shape: str) -> Tally:
    """Singles, suite at the same weight as ours, and pairs (a win useful, a loss not, halves for ties)."""
    read = (len(bench.verdicts.get((alias, shape), ())), len(bench.pairs.get(shape, ())))
    return _kept(bench, ("counts", alias, shape, *read), lambda: _count(bench, alias, shape))


def _count(bench: Bench, alias: str, shape: str) -> Tally:
    t = bench.tally(alias, shape) + bench.suite[alias, shape].weighted(SUITE_PER_TASK, math.inf)
    good = bad = 0.0
    for _, better, worse, outcome in bench.pairs.get(shape, ()):
        if alias not in (better, worse):
            continue
        if outcome == "better":
            good, bad = (good + 1, bad) if alias == better else (good, bad + 1)
        elif outcome == "tie":
            good, bad = good + 0.5, bad + 0.5
        else:
            bad += 1
    return t + Tally(good, bad)


def _rotation(bench: Bench, shape: str, pool: list[str]) -> list[str]:
    return sorted(
        pool,
        key=lambda a: (
            bench.tally(a, shape).total,
            bench.seats[a, shape],
            bench.last_seated.get((a, shape), 0.0),
            a,
        ),
    )


class Greedy(Decider):
    """Record seats by a score; the explorer by `explore` among the rest."""

    def score(self, bench: Bench, alias: str, shape: str) -> float:
        raise NotImplementedError

    def explore(self, bench: Bench, shape: str, pool: list[str], rng: random.Random) -> list[str]:
        return _rotation(bench, shape, pool)

    def _record(self, bench: Bench, shape: str, t: int, rng: random.Random | None) -> list[str]:
        members = _eligible(bench, t)  # a baseline may seat any model by record (ours: promotion auto)
        jitter = rng.random if rng else (lambda: 0.0)
        return sorted(members, key=lambda a: (-self.score(bench, a, shape), jitter(), a))[:SEATS]

    def seats(self, bench: Bench, shape: str, t: int, rng: random.Random) -> tuple[list[str], list[str]]:
        record = self._record(bench, shape, t, rng)
        pool = [a for a in _eligible(bench, t) if a not in record]
        return record, self.explore(bench, shape, pool, rng)[:1]

    def view(self, bench: Bench, shape: str, t: int) -> set[str]:
        return set(self._record(bench, shape, t, None))


class RawRatio(Greedy):
    name = "raw ratio"

    def score(self, bench: Bench, alias: str, shape: str) -> float:
        c = _counts(bench, alias, shape)
        return (c.good + 0.5) / (c.total + 1.0)


class Thompson(Greedy):
    name = "thompson"

    def __init__(self, prior: float = 1.0) -> None:
        self.prior = prior

    def score(self, bench: Bench, alias: str, shape: str) -> float:
        c = _counts(bench, alias, shape)
        return (c.good + self.prior) / (c.total + 2 * self.prior)

    def explore(self, bench: Bench, shape: str, pool: list[str], rng: random.Random) -> list[str]:
        def draw(a: str) -> float:
            c = _counts(bench, a, shape)
            return rng.betavariate(self.prior + c.good, self.prior + c.bad)

        draws = {a: draw(a) for a in pool}
        return sorted(pool, key=lambda a: -draws[a])


class Ucb(Greedy):
    name = "ucb"

    def __init__(self, c: float = 0.5) -> None:
        self.c = c

    def score(self, bench: Bench, alias: str, shape: str) -> float:
        c = _counts(bench, alias, shape)
        return (c.good + 0.5) / (c.total + 1.0)

    def explore(self, bench: Bench, shape: str, pool: list[str], rng: random.Random) -> list[str]:
        n = {a: _counts(bench, a, shape).total + 1.0 for a in pool}
        total = sum(n.values()) + 1.0
        bound = {a: self.score(bench, a, shape) + self.c * math.sqrt(math.log(total) / n[a]) for a in pool}
        return sorted(pool, key=lambda a: (-bound[a], rng.random()))


class BradleyTerry(Greedy):
    """Pairs only (LMArena has no single verdicts), the suite as games against an anchor."""

    name = "bradley-terry"
    ANCHOR = "\x00anchor"

    def _strengths(self, bench: Bench, shape: str) -> dict[str, float]:
        key = ("bt", shape, len(bench.pairs.get(shape, ())), tuple(bench.on_bench))
        return _kept(bench, key, lambda: self._fit(bench, shape))

    def _fit(self, bench: Bench, shape: str) -> dict[str, float]:
        won: dict[str, float] = defaultdict(float)
        met: dict[str, dict[str, float]] = defaultdict(lambda: defaultdict(float))

        def game(winner: str, loser: str, weight: float) -> None:
            won[winner] += weight
            met[winner][loser] += weight
            met[loser][winner] += weight

        for _, better, worse, outcome in bench.pairs.get(shape, ()):
            if outcome == "better":
                game(better, worse, 1.0)
            else:
                game(better, worse, 0.5)
                game(worse, better, 0.5)
        for alias in bench.on_bench:
            suite = bench.suite[alias, shape].weighted(SUITE_PER_TASK, math.inf)
            game(alias, self.ANCHOR, suite.good + 0.5)  # a little prior toward the anchor
            game(self.ANCHOR, alias, suite.bad + 0.5)
        strength = dict.fromkeys(met, 1.0)
        for _ in range(30):  # Zermelo/MM iterations; the anchor stays at 1
            for i in met:
                if i == self.ANCHOR:
                    continue
                denom = sum(n / (strength[i] + strength[j]) for j, n in met[i].items())
                strength[i] = won[i] / denom if denom > 0 else strength[i]
        return strength

    def _record(self, bench: Bench, shape: str, t: int, rng: random.Random | None) -> list[str]:
        strength = self._strengths(bench, shape)
        members = _eligible(bench, t)
        return sorted(members, key=lambda a: (-strength[a], a))[:SEATS]

    def explore(self, bench: Bench, shape: str, pool: list[str], rng: random.Random) -> list[str]:
        compared: dict[str, int] = defaultdict(int)
        for _, better, worse, _outcome in bench.pairs.get(shape, ()):
            compared[better] += 1
            compared[worse] += 1
        return sorted(pool, key=lambda a: (compared[a], bench.seats[a, shape], a))


class Elo(Greedy):
    """Open WebUI's leaderboard: K=32 from 1000, a feedback's model against every sibling."""

    name = "elo"
    K = 32.0

    def _ratings(self, bench: Bench, shape: str) -> dict[str, float]:
        read = (len(bench.feedback.get(shape, ())), len(bench.pairs.get(shape, ())), tuple(bench.on_bench))
        return _kept(bench, ("elo", shape, *read), lambda: self._replay(bench, shape))

    def _replay(self, bench: Bench, shape: str) -> dict[str, float]:
        rating = dict.fromkeys(bench.on_bench, 1000.0)

        def game(a: str, b: str, score_a: float, weight: float = 1.0) -> None:
            ra, rb = rating.get(a, 1000.0), rating.get(b, 1000.0)
            expected = 1.0 / (1.0 + 10 ** ((rb - ra) / 400))
            change = self.K * weight * (score_a - expected)
            if a in rating:
                rating[a] = ra + change
            if b in rating:
                rating[b] = rb - change

        for alias in bench.on_bench:  # the suite as games against a 1000 anchor, same weight
            suite = bench.suite[alias, shape]
            for _ in range(int(suite.good)):
                game(alias, "", 1.0, SUITE_PER_TASK)
            for _ in range(int(suite.bad)):
                game(alias, "", 0.0, SUITE_PER_TASK)
        for alias, useful, siblings in bench.feedback.get(shape, ()):
            for other in siblings:
                game(alias, other, 1.0 if useful else 0.0)
        for _, better, worse, outcome in bench.pairs.get(shape, ()):
            game(better, worse, 1.0 if outcome == "better" else 0.5)
        return rating

    def _record(self, bench: Bench, shape: str, t: int, rng: random.Random | None) -> list[str]:
        rating = self._ratings(bench, shape)
        members = _eligible(bench, t)
        return sorted(members, key=lambda a: (-rating[a], a))[:SEATS]


# The baselines' constants, chosen by `--tune` on seeds 1000-1007 (hard world, pairs on half the
# judged asks; settle + regret, lower is better): Thompson's prior 0.5/1/2/4 gave 1991/1939/1906/1908,
# UCB's c 0.1/0.25/0.5/1 gave 1978/1958/1929/1984.
TUNED = {"thompson": {"prior": 2.0}, "ucb": {"c": 0.5}}


def deciders(tuned: dict[str, dict[str, float]] | None = None) -> list[Decider]:
    tuned = tuned or TUNED
    return [
        Ours(),
        RawRatio(),
        Thompson(**tuned["thompson"]),
        Ucb(**tuned["ucb"]),
        BradleyTerry(),
        Elo(),
        OursJudged(),
    ]
