"""The seating simulation's world and bench (`decisions.py` runs it).

The world is the truth (usefulness per model and shape over time, and its
events); the bench is what the deciders know, kept as the store keeps it,
and read into the product decider's input (`seat_state`) the way
`bench/decisions.py::seat_state` reads the store. Reads the decider makes on
every ask are kept by what they read (the verdicts' counts, the day, the
shape's version), so a run computes each once: the figures are the same.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TypeVar

from benchwarmers.bench.decider import Candidate, Table
from benchwarmers.bench.forgetting import (
    RECENT_DAYS,
    Recalled,
    age_weight,
    pair_discount,
    recall,
    recall_shapes,
)
from benchwarmers.bench.pairs import JudgeAgreement, PairCounts, agreement, pair_weight
from benchwarmers.bench.rating import Evidence, Tally
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
T = TypeVar("T")


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
    # (alias, shape) -> [(ask, how it fared: 1 won, 0.5 a tie, 0 lost or both bad)], oldest first.
    fared: dict[tuple[str, str], list[tuple[int, float]]] = field(default_factory=lambda: defaultdict(list))
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
    # People's pair counts per shape as last built: (day, pairs counted, counts); built on within a day.
    people_pairs: dict[str, tuple[int, int, PairCounts]] = field(default_factory=dict)
    # Reads kept by what they read (verdicts only grow): key -> value.
    memo: dict[tuple[object, ...], object] = field(default_factory=dict)

    def held_out(self, alias: str, t: int) -> str:
        """What `facts.why_held_out` says of the same facts."""
        if alias in self.retired:
            return "retired"
        if self.resting_until.get(alias, -1) > t:
            return "resting (rate limited)"
        if self.failures[alias] >= FAILING_AFTER:
            return "failing: held out until a probe answers"
        return ""

    def tally(self, alias: str, shape: str) -> Tally:
        rows = self.verdicts.get((alias, shape), ())
        key = ("tally", alias, shape, len(rows))
        kept = self.memo.get(key)
        if kept is None:
            good = sum(u for _, u in rows)
            kept = self.memo[key] = Tally(float(good), float(len(rows) - good))
        assert isinstance(kept, Tally)
        return kept


def _kept(bench: Bench, key: tuple[object, ...], make: Callable[[], T]) -> T:
    """`make()`, computed once per `key` on this bench."""
    if key not in bench.memo:
        bench.memo[key] = make()
    return bench.memo[key]  # type: ignore[return-value]


def evidence_of(bench: Bench, alias: str, shape: str, t: int) -> Evidence:
    """As `evidence.read_evidence` reads it: verdicts here forgotten by age and
    change (`recall_shapes`: the model's shapes here read together, as
    `evidence._load_recalled` does), the other shapes of this collection
    pooled, the suite."""
    day = t // ASKS_PER_DAY
    counts = _read(bench, alias)
    return _kept(
        bench, ("evidence", alias, shape, day, counts), lambda: _evidence(bench, alias, shape, day, counts)
    )


def _read(bench: Bench, alias: str) -> tuple[int, ...]:
    """How many verdicts (and pairs) of a model forgetting reads, per shape: what its reads are kept by."""
    verdicts = tuple(len(bench.verdicts.get((alias, s), ())) for s in SHAPES)
    return verdicts + tuple(len(bench.fared.get((alias, s), ())) for s in SHAPES)


def changes_since(bench: Bench, shape: str, t: int) -> dict[str, float]:
    """Per model whose change the detector saw here, the age in days where it began."""
    day = t // ASKS_PER_DAY
    out = {}
    for alias in bench.on_bench:
        since = _recalled(bench, alias, day, _read(bench, alias))[shape].since
        if since < math.inf:
            out[alias] = since
    return out


def _recalled(bench: Bench, alias: str, day: int, counts: tuple[int, ...]) -> dict[str, Recalled]:
    """Every shape of a model here as forgetting reads them (kept: its three shapes read once)."""
    return _kept(bench, ("recalled", alias, day, counts), lambda: _recall(bench, alias, day))


def _recall(bench: Bench, alias: str, day: int) -> dict[str, Recalled]:
    read = {}  # as the server reads them: the shapes with verdicts in the recent window
    for s in SHAPES:
        recent = [
            (float(day - at // ASKS_PER_DAY), u) for at, u in reversed(bench.verdicts.get((alias, s), []))
        ]
        older = [r for r in recent if r[0] >= RECENT_DAYS]
        window = [r for r in recent if r[0] < RECENT_DAYS]
        read[s] = (Tally(float(sum(u for _, u in older)), float(sum(not u for _, u in older))), window)
    fared = {}  # how it fared in people's pairs of the window, newest first (as `evidence._fared`)
    for s in SHAPES:
        rows = [(float(day - at // ASKS_PER_DAY), x) for at, x in reversed(bench.fared.get((alias, s), []))]
        if rows := [r for r in rows if r[0] < RECENT_DAYS]:
            fared[s] = rows
    together = recall_shapes({s: v for s, v in read.items() if v[1] or s in fared}, pairs=fared)
    return {s: together.get(s) or recall(*read[s]) for s in SHAPES}


def _evidence(bench: Bench, alias: str, shape: str, day: int, counts: tuple[int, ...]) -> Evidence:
    remembered = _recalled(bench, alias, day, counts)[shape]
    rows = bench.verdicts.get((alias, shape), [])
    others = [s for s in SHAPES if s != shape]
    return Evidence(
        alias,
        here=remembered.tally,
        changed=remembered.changed,
        changed_since=remembered.since,
        judged=len(rows),
        same_collection=sum((bench.tally(alias, s) for s in others), Tally()),
        other_shapes=tuple(bench.tally(alias, s) for s in others),
        suite_shape=bench.suite[alias, shape],
        suite_other=sum((bench.suite[alias, s] for s in others), Tally()),
    )


def pair_counts(bench: Bench, shape: str, t: int, judge: bool = False) -> PairCounts:
    """As `pair_reads.pair_counts` weighs them: by age, by who judged
    (`pair_weight`), and a model's from before a change the detector saw less
    (`forgetting.pair_discount`)."""
    day = t // ASKS_PER_DAY
    people = sum(len(rows) for rows in bench.pairs.values())  # the judge's agreement reads them all
    since = changes_since(bench, shape, t)
    key = ("pairs", shape, day, judge, bench.version[shape], len(bench.pairs.get(shape, ())), people)
    key += tuple(sorted(since.items()))
    return _kept(bench, key, lambda: _pair_counts(bench, shape, day, judge, since))


def _pair_counts(bench: Bench, shape: str, day: int, judge: bool, since: dict[str, float]) -> PairCounts:
    rows = bench.pairs.get(shape, [])
    if not judge and not since:
        return _people_counts(bench, shape, day, rows)
    pairs = PairCounts()
    earned = judge_agreement(bench) if judge else JudgeAgreement()
    person = pair_weight("person", earned)
    for at, better, worse, outcome in rows:
        age = float(day - at // ASKS_PER_DAY)
        weight = age_weight(age) * person * pair_discount(since, better, worse, age)
        pairs.add(better, worse, outcome, weight, at)
    if not judge:
        return pairs
    for (at_day, better, worse, outcome), n in bench.judge_pairs.get(shape, {}).items():
        age = float(day - at_day)
        weight = n * age_weight(age) * pair_weight("judge", earned) * pair_discount(since, better, worse, age)
        pairs.add(better, worse, outcome, weight)
    return pairs


def _people_counts(bench: Bench, shape: str, day: int, rows: list[tuple[int, str, str, str]]) -> PairCounts:
    """People's pairs alone, built on from the counts of the same day's
    fewer pairs (pairs only arrive, in order; a pair's weight moves only
    with the day): the same additions in the same order as counting them
    all afresh, so the same floats, at a few additions a new pair."""
    person = pair_weight("person", JudgeAgreement())
    kept_day, done, counted = bench.people_pairs.get(shape, (-1, 0, PairCounts()))
    if kept_day != day or done > len(rows):
        done, counted = 0, PairCounts()
    pairs = PairCounts(
        misses=defaultdict(float, counted.misses),
        answers=defaultdict(float, counted.answers),
        answered=set(counted.answered),
    )
    for winner, row in counted.wins.items():  # a copy, in the same order (the fit's order)
        pairs.wins[winner].update(row)
    for at, better, worse, outcome in rows[done:]:
        pairs.add(better, worse, outcome, age_weight(day - at // ASKS_PER_DAY) * person, at)
    bench.people_pairs[shape] = (day, len(rows), pairs)
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
