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

Tuning is on seeds `--tune-seeds` (default 1000-1015) and reported on
`--first-seed` (default 0) onward: `--tune` prints the baselines' constants
tried and the best, and the run uses the constants in `TUNED`.

Printed per decider, mean ± one standard error over seeds: verdicts to
settle (verdicts until the record seats it would fill for every shape are
the truly best three of that moment and stay so to the end), unsettled
runs, regret, and ours minus it paired by seed (and that in standard
errors); in the hard world also judged asks to drop the degraded model and
to adopt the newcomer, and seats given to the dead model after it began
failing.

Run: `python benchmarks/decisions.py --world hard --pairs 0.5 --seeds 48 --jobs 2`
(`--tune` to choose the baselines' constants on the tuning seeds first).
Judge worlds: `python benchmarks/decisions.py --world easy --pairs 0.5 --judged 0.3
--judge 0.7 --seeds 48 --jobs 2` (and `--judge 0.5`): ours alone against ours
with the judge, paired by seed, and the judge's agreement and weight at the end.
"""

from __future__ import annotations

import argparse
import math
import multiprocessing
import random
import statistics
import time
from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass, field

from benchwarmers.bench.decider import Candidate, Decision, Table, decide
from benchwarmers.bench.forgetting import RECENT_DAYS, recall
from benchwarmers.bench.pairs import JudgeAgreement, PairCounts, agreement, pair_weight
from benchwarmers.bench.rating import SUITE_PER_TASK, Evidence, Tally
from benchwarmers.calls.health import FAILING_AFTER

SHAPES = ("short", "long", "code")
SEATS = 3
SUITE_TASKS_PER_SHAPE = 6
ASKS_PER_DAY = 50
REST_ASKS = 5
# Hard world: settled when the record seats' summed usefulness is this close to the best three's.
NEAR_BEST = 0.10

EASY: dict[str, tuple[float, float, float]] = {
    "atlas": (0.82, 0.78, 0.74),
    "boreal": (0.77, 0.80, 0.56),
    "cobalt": (0.74, 0.60, 0.55),
    "dune": (0.35, 0.30, 0.88),
    "ember": (0.30, 0.38, 0.84),
    "fjord": (0.52, 0.86, 0.45),
    "gale": (0.58, 0.55, 0.56),
    "heath": (0.56, 0.58, 0.52),
    "iris": (0.50, 0.48, 0.54),
    "jet": (0.30, 0.28, 0.32),
    "kelp": (0.25, 0.22, 0.30),
    "lumen": (0.20, 0.25, 0.18),
}
# Arena-style scores (overall) and per-shape offsets: usefulness = logistic((score - 1180) / 90).
# The spread of a public leaderboard's top: neighbours 10-30 points apart.
HARD_SCORES: dict[str, tuple[int, tuple[int, int, int]]] = {
    "apex": (1320, (0, -10, 10)),
    "borealis": (1290, (10, 0, -30)),
    "cipher": (1280, (-20, 10, 20)),
    "delta": (1255, (0, 20, -20)),
    "eon": (1240, (-10, -10, 30)),
    "flux": (1225, (10, 0, -10)),
    "gamut": (1210, (0, 10, 0)),
    "halo": (1195, (-10, 0, 10)),
    "ion": (1180, (0, 0, 0)),
    "jade": (1165, (10, -10, 0)),
    "karma": (1150, (0, 0, -10)),
    "lyra": (1130, (-10, 10, 0)),
    "mono": (1110, (0, 0, 10)),
    "nova": (1090, (10, -10, -10)),
    "onyx": (1070, (0, 0, 0)),
    "pico": (1050, (-10, 0, 10)),
}
NEWCOMER = ("zenith", 1360, (0, 0, 0))
FREE_TIER = ("gamut", "jade", "mono", "pico")


def _logistic(x: float) -> float:
    return 1.0 / (1.0 + math.exp(-x))


@dataclass
class World:
    """The truth: usefulness per model and shape over time, and events."""

    asks: int
    hard: bool
    base: dict[str, tuple[float, ...]]
    degraded: str = ""
    degrade_at: int = -1
    newcomer: str = ""
    arrive_at: int = -1
    dead: str = ""
    die_at: int = -1
    retire_at: int = -1

    def present(self, alias: str, t: int) -> bool:
        return alias != self.newcomer or t >= self.arrive_at

    def quality(self, alias: str, shape: str, t: int) -> float:
        p = self.base[alias][SHAPES.index(shape)]
        if alias == self.degraded and t >= self.degrade_at:
            p = max(0.05, p - 0.35)
        return p

    def alive(self, alias: str, t: int) -> bool:
        return not (alias == self.dead and t >= self.die_at)

    def best(self, shape: str, t: int) -> set[str]:
        live = [a for a in self.base if self.present(a, t) and self.alive(a, t)]
        return set(sorted(live, key=lambda a: -self.quality(a, shape, t))[:SEATS])

    def right(self, seated: set[str], shape: str, t: int) -> bool:
        """The record seats are the best three (easy world), or within
        `NEAR_BEST` of their summed usefulness (hard world: arena-like
        neighbours differ by a few points, which no verdict count settles)."""
        best = self.best(shape, t)
        if not self.hard:
            return seated == best
        worth = sum(self.quality(a, shape, t) if self.alive(a, t) else 0.0 for a in seated)
        return worth >= sum(self.quality(a, shape, t) for a in best) - NEAR_BEST


def make_world(hard: bool, asks: int) -> World:
    if not hard:
        return World(asks, False, {a: tuple(p) for a, p in EASY.items()})
    base = {
        a: tuple(_logistic((score + off - 1180) / 90) for off in offsets)
        for a, (score, offsets) in HARD_SCORES.items()
    }
    name, score, offsets = NEWCOMER
    base[name] = tuple(_logistic((score + off - 1180) / 90) for off in offsets)
    return World(
        asks,
        True,
        base,
        degraded="apex",
        degrade_at=asks // 3,
        newcomer=name,
        arrive_at=asks // 2,
        dead="cipher",
        die_at=2 * asks // 3,
        retire_at=2 * asks // 3 + 100,
    )


@dataclass
class Bench:
    """What the deciders know: the members, verdicts as they arrived, pairs,
    the suite, seats, rests and failures (the store's state, simulated)."""

    members: tuple[str, ...]
    suite: dict[tuple[str, str], Tally]
    # (alias, shape) -> [(ask it arrived at, useful)], oldest first.
    verdicts: dict[tuple[str, str], list[tuple[int, bool]]] = field(default_factory=lambda: defaultdict(list))
    # shape -> [(ask, better, worse, outcome)].
    pairs: dict[str, list[tuple[int, str, str, str]]] = field(default_factory=lambda: defaultdict(list))
    # A judge model's pairs (`--judge`): shape -> (day, better, worse, outcome) -> how many,
    # and per (ask, pair) its outcome and better, for the agreement with people's.
    judge_pairs: dict[str, dict[tuple[int, str, str, str], int]] = field(
        default_factory=lambda: defaultdict(lambda: defaultdict(int))
    )
    judge_said: dict[tuple[int, frozenset[str]], tuple[str, str, str]] = field(default_factory=dict)
    judge_agreement: tuple[int, JudgeAgreement] = (0, JudgeAgreement())
    # Elo's input as Open WebUI keeps it: (ask, alias, useful, siblings).
    feedback: dict[str, list[tuple[str, bool, tuple[str, ...]]]] = field(
        default_factory=lambda: defaultdict(list)
    )
    seats: dict[tuple[str, str], int] = field(default_factory=lambda: defaultdict(int))
    last_seated: dict[tuple[str, str], float] = field(default_factory=dict)
    record: dict[str, tuple[str, ...]] = field(default_factory=dict)
    resting_until: dict[str, int] = field(default_factory=dict)
    failures: dict[str, int] = field(default_factory=lambda: defaultdict(int))
    retired: set[str] = field(default_factory=set)
    on_bench: list[str] = field(default_factory=list)
    joined: dict[str, int] = field(default_factory=dict)
    version: dict[str, int] = field(default_factory=lambda: defaultdict(int))  # per shape, for caching

    def held_out(self, alias: str, t: int) -> str:
        """What `decisions._held_out` says of the same facts."""
        if alias in self.retired:
            return "retired"
        if self.resting_until.get(alias, -1) > t:
            return "resting (rate limited)"
        if self.failures[alias] >= FAILING_AFTER:
            return "failing: held out until a probe answers"
        return ""

    def tally(self, alias: str, shape: str) -> Tally:
        rows = self.verdicts.get((alias, shape), ())
        good = sum(u for _, u in rows)
        return Tally(float(good), float(len(rows) - good))


def evidence_of(bench: Bench, alias: str, shape: str, t: int) -> Evidence:
    """As `decisions._evidence` reads it: verdicts here forgotten by age and
    change (`recall`), the other shapes of this collection pooled, the suite."""
    day = t // ASKS_PER_DAY
    rows = bench.verdicts.get((alias, shape), [])
    recent = [(float(day - at // ASKS_PER_DAY), u) for at, u in reversed(rows)]
    older = [r for r in recent if r[0] >= RECENT_DAYS]
    window = [r for r in recent if r[0] < RECENT_DAYS]
    remembered = recall(Tally(float(sum(u for _, u in older)), float(sum(not u for _, u in older))), window)
    others = [s for s in SHAPES if s != shape]
    return Evidence(
        alias,
        here=remembered.tally,
        changed=remembered.changed,
        judged=len(rows),
        same_collection=sum((bench.tally(alias, s) for s in others), Tally()),
        other_shapes=tuple(bench.tally(alias, s) for s in others),
        suite_shape=bench.suite[alias, shape],
        suite_other=sum((bench.suite[alias, s] for s in others), Tally()),
    )


def pair_counts(bench: Bench, shape: str, t: int, judge: bool = False) -> PairCounts:
    """As `decisions._pairs` weighs them: by age, and by who judged (`pair_weight`)."""
    from benchwarmers.bench.forgetting import age_weight

    pairs = PairCounts()
    day = t // ASKS_PER_DAY
    earned = judge_agreement(bench) if judge else JudgeAgreement()
    person = pair_weight("person", earned)
    for at, better, worse, outcome in bench.pairs.get(shape, ()):
        pairs.add(better, worse, outcome, age_weight(day - at // ASKS_PER_DAY) * person)
    if judge:
        for (at_day, better, worse, outcome), n in bench.judge_pairs.get(shape, {}).items():
            pairs.add(better, worse, outcome, n * age_weight(day - at_day) * pair_weight("judge", earned))
    return pairs


def judge_agreement(bench: Bench) -> JudgeAgreement:
    """The server's `agreement` over people's pairs and the judge's on the
    asks people compared (read again only when people's pairs changed)."""
    people = [
        (at, frozenset((better, worse)), outcome, better if outcome == "better" else "")
        for rows in bench.pairs.values()
        for at, better, worse, outcome in rows
    ]
    if bench.judge_agreement[0] != len(people):
        judged = [
            (at, key, outcome, better if outcome == "better" else "")
            for at, key, _, _ in people
            if (at, key) in bench.judge_said
            for better, _, outcome in [bench.judge_said[at, key]]
        ]
        bench.judge_agreement = (len(people), agreement(people, judged))
    return bench.judge_agreement[1]


def seat_state(bench: Bench, shape: str, t: int) -> tuple[Table, list[Candidate]]:
    """The bench as the decider sees it: what `decisions.seat_state` builds from the store."""
    table = Table(
        members=bench.members,
        seats=SEATS,
        explorer_seats=1,
        promotion="auto",
        seated=bench.record.get(shape, ()),
    )
    outsiders = sorted(a for a in bench.on_bench if a not in bench.members)
    candidates = [
        Candidate(
            alias,
            evidence_of(bench, alias, shape, t),
            member=alias in bench.members,
            held_out=bench.held_out(alias, t),
            newcomer=t - bench.joined.get(alias, -(10**9)) < 7 * ASKS_PER_DAY,
            seats=bench.seats[alias, shape],
            last_seated=bench.last_seated.get((alias, shape), 0.0),
        )
        for alias in (*bench.members, *outsiders)
    ]
    return table, candidates


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
        return set(decide(table, candidates, pairs=pairs, rng=random.Random(0)).record)


class OursJudged(Ours):
    """Ours with a judge model's pairs too, weighed as the server weighs them."""

    name = "ours + judge"
    judge = True


def _eligible(bench: Bench, t: int) -> list[str]:
    return [a for a in bench.on_bench if not bench.held_out(a, t)]


def _counts(bench: Bench, alias: str, shape: str) -> Tally:
    """Singles, suite at the same weight as ours, and pairs (a win useful, a loss not, halves for ties)."""
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


@dataclass
class Outcome:
    settled_at: int
    settled: bool
    verdicts: int
    regret: float
    detect: int = 0  # judged asks from the degradation until the degraded model left every record
    adopt: int = 0  # judged asks from the newcomer's arrival until it sat by record on every shape
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
    rng = random.Random(seed * 7919 + 1)  # the decider's own
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
        wrong = any(not world.right(view(s, t), s, t) for s in SHAPES)
        if wrong:
            last_wrong = int(verdicts)
        if (
            detect_from is not None
            and not out.detect
            and all(world.degraded not in view(s, t) for s in SHAPES)
        ):
            out.detect = judged_asks - detect_from
        if adopt_from is not None and not out.adopt and all(world.newcomer in view(s, t) for s in SHAPES):
            out.adopt = judged_asks - adopt_from
    if detect_from is not None and not out.detect:
        out.detect = judged_asks - detect_from
    if adopt_from is not None and not out.adopt:
        out.adopt = judged_asks - adopt_from
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
        bench.version[shape] += 1
        # The judge's pair of the same answers now counts nothing (`pair_weight(person_too=True)`).
        judged = bench.judge_said.get((t, frozenset(outcome[:2])))
        if judged is not None and pair_weight("judge", JudgeAgreement(), person_too=True) == 0:
            bench.judge_pairs[shape][t // ASKS_PER_DAY, *judged] -= 1

    return add


def _run(
    args: tuple[int, dict[str, dict[str, float]], int, int, bool, float, float, float | None],
) -> Outcome:
    index, tuned, seed, asks, hard, pairs_share, judge, judged_share = args
    return simulate(deciders(tuned)[index], seed, asks, hard, pairs_share, judge, judged_share)


def _mean_se(values: list[float]) -> tuple[float, float]:
    return statistics.mean(values), statistics.stdev(values) / math.sqrt(len(values))


def _run_all(
    pool: multiprocessing.pool.Pool,
    tuned: dict[str, dict[str, float]],
    names: list[str],
    seeds: range,
    args: argparse.Namespace,
) -> dict[str, list[Outcome]]:
    index = {d.name: i for i, d in enumerate(deciders(tuned))}
    work = [
        (index[n], tuned, seed, args.asks, args.world == "hard", args.pairs, args.judge, args.judged)
        for n in names
        for seed in seeds
    ]
    done = pool.map(_run, work, chunksize=1)
    results: dict[str, list[Outcome]] = {n: [] for n in names}
    for (i, *_), outcome in zip(work, done, strict=True):
        results[deciders(tuned)[i].name].append(outcome)
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
            outcomes = _run_all(pool, trial, [name], seeds, args)[name]
            scores[value] = statistics.mean(o.settled_at for o in outcomes) + statistics.mean(
                o.regret for o in outcomes
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
            f"seeds {seeds.start}-{seeds.stop - 1}, constants {tuned}"
            + (f", people judge {args.judged:.0%} of asks" if args.judged is not None else "")
            + (f", a judge agreeing with people {args.judge:.0%}" if args.judge else "")
        )
        results = _run_all(pool, tuned, names, seeds, args)
    if args.judge:
        _report_judge(results)
    else:
        _report(results, args.world == "hard")
    print(f"({time.perf_counter() - started:.0f}s)")


def _report(results: dict[str, list[Outcome]], hard: bool) -> None:
    ours = results["ours"]
    head = f"{'decider':<14} {'verdicts to settle':>18} {'unsettled':>9} {'regret':>14}"
    head += f" {'ours - it: settle':>22} {'regret':>18}"
    if hard:
        head += f" {'detect':>7} {'adopt':>6} {'dead seats':>16}"
    print(head)
    for name, outcomes in results.items():
        settle, se = _mean_se([float(o.settled_at) for o in outcomes])
        reg, reg_se = _mean_se([o.regret for o in outcomes])
        unsettled = f"{sum(not o.settled for o in outcomes)}/{len(outcomes)}"
        line = f"{name:<14} {settle:>10.0f} ± {se:>4.0f} {unsettled:>9} {reg:>7.1f} ± {reg_se:>4.1f}"
        if name != "ours":
            d, d_se = _mean_se(
                [float(a.settled_at - b.settled_at) for a, b in zip(ours, outcomes, strict=True)]
            )
            r, r_se = _mean_se([a.regret - b.regret for a, b in zip(ours, outcomes, strict=True)])
            line += f" {d:>+8.0f} ± {d_se:>3.0f} ({_in_se(d, d_se)})"
            line += f" {r:>+6.1f} ± {r_se:>3.1f} ({_in_se(r, r_se)})"
        else:
            line += " " * 41
        if hard:
            det = statistics.median(o.detect for o in outcomes)
            ado = statistics.median(o.adopt for o in outcomes)
            dead = f"{max(o.dead_seats for o in outcomes)} (<={max(o.dead_last for o in outcomes)} asks)"
            line += f" {det:>7.0f} {ado:>6.0f} {dead:>16}"
        print(line)
    mean_share = statistics.mean(o.settled_at for o in ours) / statistics.mean(
        o.settled_at for o in results["raw ratio"]
    )
    share, share_se = _mean_se(
        [a.settled_at / b.settled_at for a, b in zip(ours, results["raw ratio"], strict=True) if b.settled_at]
    )
    print(
        f"ours / raw ratio: {mean_share:.2f} of the mean (per seed {share:.2f} ± {share_se:.2f}); "
        "detect, adopt: median judged asks; dead seats: most in a run (its last, asks after it began failing)"
    )


def _report_judge(results: dict[str, list[Outcome]]) -> None:
    """Ours with people's verdicts alone against ours with the judge's too, paired by seed."""
    alone, judged = results["ours"], results[OursJudged.name]
    print(f"{'decider':<14} {'verdicts to settle':>18} {'unsettled':>9} {'regret':>14}")
    for name, outcomes in results.items():
        settle, se = _mean_se([float(o.settled_at) for o in outcomes])
        reg, reg_se = _mean_se([o.regret for o in outcomes])
        unsettled = f"{sum(not o.settled for o in outcomes)}/{len(outcomes)}"
        print(f"{name:<14} {settle:>10.0f} ± {se:>4.0f} {unsettled:>9} {reg:>7.1f} ± {reg_se:>4.1f}")
    d, d_se = _mean_se([float(b.settled_at - a.settled_at) for a, b in zip(alone, judged, strict=True)])
    r, r_se = _mean_se([b.regret - a.regret for a, b in zip(alone, judged, strict=True)])
    ratio = statistics.mean(o.settled_at for o in judged) / statistics.mean(o.settled_at for o in alone)
    weight, weight_se = _mean_se([o.judge.weight for o in judged])
    share, share_se = _mean_se([o.judge.agreed / o.judge.compared for o in judged if o.judge.compared])
    compared = statistics.mean(o.judge.compared for o in judged)
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
