"""Pairs in the rating: "A was better than B" in the same posterior as the rest.

Pure arithmetic, shared by the server and the simulation. The model is a
Bradley-Terry model on the logit of usefulness: with `theta = logit(p)`,
a pair `A better than B` has likelihood `sigmoid(theta_A - theta_B)`. Each
model's Beta(alpha, beta) posterior from its single verdicts, suite and
pooled prior (`rating.posterior`) is, on the logit scale, the factor
`sigmoid(theta)^alpha * sigmoid(-theta)^beta`, so single verdicts, suite
and pairs are one log-posterior:

    sum_i alpha_i log s(theta_i) + beta_i log s(-theta_i) + sum_pairs w log s(theta_win - theta_lose)

Its mode is found by Newton steps one model at a time (a few sweeps: pairs
are few per ask), and its curvature at the mode (Laplace) gives each
model's interval. The result is handed back as a Beta with that mean and
spread, so intervals, explorer draws and every reason work as before; a
model with no pairs keeps its Beta exactly.

What the outcomes mean (`PairCounts.add`):

- `better`: one win for the better.
- `tie`: half a win each way: the two are about as good.
- `both_bad`: half a win each way, and half a "not useful" verdict each
  (`both_bad_misses`): neither answer did the job.

Single verdicts are never turned into pairs: most seat pairs of an ask
would be ties, and the simulation measured them to hurt.

Who judged (`pair_weight`, the one place the kind of a pair is weighed):
a person's pair counts 1; a judge model's (`panel/judge.py`) counts what
its agreement with people earned, `JudgeAgreement.weight`. The judge is
modelled as reliable with probability `r` (then it says what a person
would) and a coin otherwise, so it agrees with people with probability
`(1 + r) / 2`: 50% is a useless judge (`r = 0`), 70% is `r = 0.4`. Near
two equal models a verdict of such a judge carries `r^2` of a person's
information (Fisher information of `1/2 + r (s(d) - 1/2)` against
`s(d)`), so its weight is the posterior mean of `r^2`, with a prior
Beta(1, 4) on `r` (`JUDGE_PRIOR`: mean 0.2, weight 0.067 before any
agreement is measured) and each ask where a person and the judge compared
a same pair a trial (`agreement`). It starts low, rises toward `r^2` as
agreements come in, and falls to ~0 for a judge that agrees half the time.
A pair a person judged too counts the person's verdict alone.
"""

from __future__ import annotations

import functools
import math
from collections import defaultdict
from collections.abc import Hashable, Iterable, Mapping
from dataclasses import dataclass, field

from benchwarmers.bench.rating import Posterior, Tally

OUTCOMES = ("better", "tie", "both_bad")
SWEEPS = 6
THETA_MAX = 8.0
# The judge's reliability before any agreement is measured: Beta(1, 4), mean 0.2.
JUDGE_PRIOR = (1.0, 4.0)
# Points of the grid the posterior of the reliability is integrated on.
_GRID = 400


@dataclass
class PairCounts:
    """Weighted wins between models of one collection and shape:
    `wins[a][b]` is how much a was preferred to b."""

    wins: dict[str, dict[str, float]] = field(default_factory=lambda: defaultdict(lambda: defaultdict(float)))
    misses: dict[str, float] = field(default_factory=lambda: defaultdict(float))
    # Per model, how many of its answers people compared, weighed as their pairs are (by age):
    # each answer once, however many pairs of its ask it was in (a model in a 4-seat panel is
    # in three), so the decider can tell a model judged on many answers from one compared a few
    # times (`decider.SETTLED_ANSWERS`).
    answers: dict[str, float] = field(default_factory=lambda: defaultdict(float))
    answered: set[tuple[str, Hashable]] = field(default_factory=set)  # (model, ask) counted

    def add(
        self, better: str, worse: str, outcome: str, weight: float = 1.0, ask: Hashable | None = None
    ) -> None:
        """One pair verdict; `ask`: the ask it compared two answers of, given
        for people's pairs (a judge model's are not answers a person judged)."""
        if ask is not None:
            for alias in (better, worse):
                if (alias, ask) not in self.answered:
                    self.answered.add((alias, ask))
                    self.answers[alias] += weight
        if outcome == "better":
            self.wins[better][worse] += weight
            return
        self.wins[better][worse] += weight / 2
        self.wins[worse][better] += weight / 2
        if outcome == "both_bad":
            self.misses[better] += weight / 2
            self.misses[worse] += weight / 2

    def both_bad_misses(self, alias: str) -> Tally:
        """The "not useful" half-verdicts a model's "both bad" pairs carry."""
        return Tally(0.0, self.misses.get(alias, 0.0))

    def record(self, alias: str) -> tuple[float, float]:
        """(won, lost) of this model's pairs, weighted."""
        won = sum(self.wins.get(alias, {}).values())
        lost = sum(row.get(alias, 0.0) for other, row in self.wins.items() if other != alias)
        return won, lost

    def key(self) -> tuple[object, ...]:
        """Everything these counts say, in their order (the fit's order): a
        hashable stand-in for them, to keep what was computed from them."""
        return (
            tuple((a, tuple(row.items())) for a, row in self.wins.items()),
            tuple(self.misses.items()),
            tuple(self.answers.items()),
        )

    def __bool__(self) -> bool:
        return any(any(v > 0 for v in row.values()) for row in self.wins.values())


def joint(posteriors: Mapping[str, Posterior], pairs: PairCounts) -> dict[str, Posterior]:
    """Each model's posterior with the pairs among these models fitted in."""
    # alias -> other -> [won, lost]
    met: dict[str, dict[str, list[float]]] = defaultdict(lambda: defaultdict(lambda: [0.0, 0.0]))
    for winner, row in pairs.wins.items():
        for loser, weight in row.items():
            if weight <= 0 or winner == loser or winner not in posteriors or loser not in posteriors:
                continue
            met[winner][loser][0] += weight
            met[loser][winner][1] += weight
    games = {a: [(o, won, lost) for o, (won, lost) in row.items()] for a, row in met.items()}
    if not games:
        return dict(posteriors)
    theta = {a: math.log(p.alpha / p.beta) for a, p in posteriors.items()}
    for _ in range(SWEEPS):
        for alias, played in games.items():
            post = posteriors[alias]
            t = theta[alias]
            s = _sigmoid(t)
            gradient = post.alpha * (1 - s) - post.beta * s
            curvature = (post.alpha + post.beta) * s * (1 - s)
            for other, won, lost in played:
                d = _sigmoid(t - theta[other])
                gradient += won * (1 - d) - lost * d
                curvature += (won + lost) * d * (1 - d)
            theta[alias] = max(-THETA_MAX, min(THETA_MAX, t + gradient / curvature))
    out = dict(posteriors)
    for alias, played in games.items():
        post = posteriors[alias]
        t = theta[alias]
        mean = _sigmoid(t)
        spread = mean * (1 - mean)
        information = sum(
            (won + lost) * d * (1 - d) for o, won, lost in played for d in [_sigmoid(t - theta[o])]
        )
        # Beta(a, b) has variance m(1-m)/(a+b+1): the pairs add their information to a+b.
        strength = post.alpha + post.beta + information / max(spread, 1e-9)
        out[alias] = Posterior(mean * strength, (1 - mean) * strength)
    return out


def count(outcomes: Iterable[tuple[str, str, str, float]]) -> PairCounts:
    """(better, worse, outcome, weight) rows into counts."""
    pairs = PairCounts()
    for better, worse, outcome, weight in outcomes:
        pairs.add(better, worse, outcome, weight)
    return pairs


def _sigmoid(x: float) -> float:
    if x >= 0:
        return 1.0 / (1.0 + math.exp(-x))
    e = math.exp(x)
    return e / (1.0 + e)


@dataclass(frozen=True, slots=True)
class JudgeAgreement:
    """How often a collection's judge agreed with people: `compared` asks
    where a person and the judge both judged a same pair, `agreed` of them
    (an ask with several such pairs counts the share it agreed on)."""

    agreed: float = 0.0
    compared: int = 0

    @property
    def weight(self) -> float:
        return judge_weight(self.agreed, self.compared)

    def as_json(self) -> dict[str, float | int]:
        return {"agreed": round(self.agreed, 2), "compared": self.compared, "weight": round(self.weight, 3)}


# One pair as `agreement` reads it: (ask, the two answers compared (any hashable, the
# same for both orders), outcome, the better one for "better" else "").
JudgedPair = tuple[Hashable, Hashable, str, Hashable]


def agreement(people: Iterable[JudgedPair], judge: Iterable[JudgedPair]) -> JudgeAgreement:
    """Count the asks where people and the judge compared a same pair, and
    how far they agreed there: the same outcome, and for "better" the same
    better answer."""
    said = {(ask, pair): (outcome, better) for ask, pair, outcome, better in people}
    per_ask: dict[Hashable, list[bool]] = defaultdict(list)
    for ask, pair, outcome, better in judge:
        person = said.get((ask, pair))
        if person is not None:
            per_ask[ask].append(person == (outcome, better if outcome == "better" else ""))
    return JudgeAgreement(sum(sum(a) / len(a) for a in per_ask.values()), len(per_ask))


@functools.lru_cache(maxsize=4096)
def judge_weight(agreed: float, compared: int) -> float:
    """The posterior mean of `r^2` (module docstring) after `agreed` of
    `compared` asks agreed, integrated on a grid of `r` in [0, 1]."""
    a, b = JUDGE_PRIOR
    disagreed = max(compared - agreed, 0.0)
    logs, squares = [], []
    for i in range(_GRID):
        r = (i + 0.5) / _GRID
        logs.append(
            (a - 1) * math.log(r)
            + (b - 1) * math.log1p(-r)
            + agreed * math.log1p(r)
            + disagreed * math.log1p(-r)
        )
        squares.append(r * r)
    top = max(logs)
    mass = [math.exp(x - top) for x in logs]
    return sum(m * s for m, s in zip(mass, squares, strict=True)) / sum(mass)


def pair_weight(kind: str, judge: JudgeAgreement, *, person_too: bool = False) -> float:
    """What one pair verdict counts in the rating, by who gave it: a
    person's 1, a judge model's its learned weight (module docstring), or
    nothing when a person judged the same pair (`person_too`): the
    person's word stands, and the same answers are not counted twice."""
    if kind == "person":
        return 1.0
    return 0.0 if person_too else judge.weight
