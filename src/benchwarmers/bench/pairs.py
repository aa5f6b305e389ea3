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
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from benchwarmers.bench.rating import Posterior, Tally

OUTCOMES = ("better", "tie", "both_bad")
SWEEPS = 6
THETA_MAX = 8.0


@dataclass
class PairCounts:
    """Weighted wins between models of one collection and shape:
    `wins[a][b]` is how much a was preferred to b."""

    wins: dict[str, dict[str, float]] = field(default_factory=lambda: defaultdict(lambda: defaultdict(float)))
    misses: dict[str, float] = field(default_factory=lambda: defaultdict(float))

    def add(self, better: str, worse: str, outcome: str, weight: float = 1.0) -> None:
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
            (won + lost) * _sigmoid(t - theta[o]) * (1 - _sigmoid(t - theta[o])) for o, won, lost in played
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
