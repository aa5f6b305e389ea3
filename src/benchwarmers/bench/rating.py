"""The rating model: pure arithmetic, no store, no clock, no I/O.

Why a module of its own: the server (`bench/decisions.py`, which reads the
store) and the simulation (`benchmarks/decisions.py`) must decide with the
very same code, or the simulation proves nothing about the product.

The model, per model x collection x shape:

- Usefulness is a Beta posterior. Verdicts on this collection and shape
  count one each. The prior is built from weaker evidence, each source
  worth a few pseudo-observations at most, so real verdicts soon outweigh
  it: the suite's pass rate on tasks of this shape (and, less, on the
  others, and the onboarding probes' checks), verdicts on other shapes of
  this collection and on this shape elsewhere (hierarchical pooling: a model good at short questions is
  probably not useless at long ones), and under all of it the average
  usefulness of the candidates, so an unknown model starts where models
  usually are rather than at a coin toss.
- Its mean and a 90% credible interval say how good and how sure.
- The score seating sorts by is the mean, nudged up by a share of the
  interval's upper half (optimism under uncertainty: an untried model gets
  looked at, a model with a long record is taken at its word), and pushed
  down by health (unanswered probes), speed (slow first byte, few tokens per
  second), cost (price) and limits (near a rate limit).

Every term that moves the score leaves a reason in plain words.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import lru_cache

CONFIDENCE = 0.90

# How much each weaker source may weigh, in verdicts.
SUITE_SHAPE_PER_TASK = 1.0
SUITE_SHAPE_CAP = 6.0
SUITE_OTHER_PER_TASK = 0.25
SUITE_OTHER_CAP = 1.5
# The onboarding probes' checks (a sum, a JSON object...) say little about usefulness.
PROBE_CHECK_PER_ITEM = 0.125
PROBE_CHECK_CAP = 0.5
POOL_COLLECTION_PER_VERDICT = 0.5
POOL_COLLECTION_CAP = 2.0
POOL_ELSEWHERE_PER_VERDICT = 0.5
POOL_ELSEWHERE_CAP = 3.0
POPULATION_STRENGTH = 2.0
# The population base stays within [1 - BASE_MAX, BASE_MAX].
BASE_MAX = 0.99

# Optimism: the share of the interval's upper half added to the mean.
OPTIMISM = 0.4

# Penalties, each at most this much of the 0..1 usefulness scale.
HEALTH_MAX = 0.30
SPEED_MAX = 0.06
COST_MAX = 0.08
NEAR_LIMIT = 0.10


@dataclass(frozen=True, slots=True)
class Tally:
    """Good and bad outcomes (useful/not useful verdicts, passed/failed tasks)."""

    good: float = 0.0
    bad: float = 0.0

    @property
    def total(self) -> float:
        return self.good + self.bad

    def __add__(self, other: Tally) -> Tally:
        return Tally(self.good + other.good, self.bad + other.bad)

    def weighted(self, per_item: float, cap: float) -> Tally:
        """This tally worth `per_item` each, `cap` in all at most."""
        if self.total <= 0:
            return Tally()
        scale = min(per_item, cap / self.total)
        return Tally(self.good * scale, self.bad * scale)


@dataclass(frozen=True, slots=True)
class Evidence:
    """Everything known about one model for one collection and shape."""

    alias: str
    here: Tally = Tally()  # verdicts on this collection and shape
    same_collection: Tally = Tally()  # verdicts on this collection, other shapes
    elsewhere: Tally = Tally()  # verdicts on this shape, other collections
    suite_shape: Tally = Tally()  # suite tasks of this shape, passed/failed
    suite_other: Tally = Tally()  # suite tasks of other shapes
    probes: int = 0  # health probes lately
    probe_failures: int = 0  # of those, unanswered (no reply at all): a wrong reply is no health failure
    probe_checks: Tally = Tally()  # answered onboarding probes, passed/failed their check (quality)
    first_byte_seconds: float | None = None
    tokens_per_second: float | None = None
    price_per_mtok: float | None = None  # output price, USD per million tokens
    near_limit: bool = False


@dataclass(frozen=True, slots=True)
class Ranking:
    """One model's standing for one collection and shape.

    `score` is what seating sorts by; `mean` and `interval` are the Beta
    posterior of usefulness; `judged` counts verdicts on this collection and
    shape; `reasons` say, in words, what moved the score."""

    alias: str
    score: float
    mean: float
    interval: tuple[float, float]
    judged: int
    reasons: tuple[str, ...] = field(default=())
    # False when the bench may not seat it now (retired, resting, ...): decisions.py says why.
    eligible: bool = True

    def as_dict(self) -> dict[str, object]:
        return {
            "alias": self.alias,
            "score": round(self.score, 4),
            "mean": round(self.mean, 4),
            "interval": [round(self.interval[0], 4), round(self.interval[1], 4)],
            "judged": self.judged,
            "reasons": list(self.reasons),
            "eligible": self.eligible,
        }


@dataclass(frozen=True, slots=True)
class Posterior:
    alpha: float
    beta: float

    @property
    def mean(self) -> float:
        return self.alpha / (self.alpha + self.beta)

    def interval(self, confidence: float = CONFIDENCE) -> tuple[float, float]:
        tail = (1 - confidence) / 2
        return beta_quantile(tail, self.alpha, self.beta), beta_quantile(1 - tail, self.alpha, self.beta)


def population_mean(evidence: Sequence[Evidence]) -> float:
    """The candidates' pooled usefulness here (smoothed toward one half), the
    base every model's prior starts from. Kept off 0 and 1: a prior with no
    weight on one side has no interval (Beta(a, 0)), and a bench where every
    verdict so far was useful must still rank."""
    pooled = Tally()
    for e in evidence:
        pooled = pooled + e.here + e.same_collection.weighted(0.5, 50) + e.elsewhere.weighted(0.5, 50)
    return min(BASE_MAX, max(1 - BASE_MAX, round((pooled.good + 1) / (pooled.total + 2), 2)))


def posterior(e: Evidence, base: float = 0.5) -> Posterior:
    """The Beta posterior of usefulness from all sources, strongest last."""
    alpha, beta = base * POPULATION_STRENGTH, (1 - base) * POPULATION_STRENGTH
    for tally, per_item, cap in (
        (e.suite_shape, SUITE_SHAPE_PER_TASK, SUITE_SHAPE_CAP),
        (e.suite_other, SUITE_OTHER_PER_TASK, SUITE_OTHER_CAP),
        (e.probe_checks, PROBE_CHECK_PER_ITEM, PROBE_CHECK_CAP),
        (e.same_collection, POOL_COLLECTION_PER_VERDICT, POOL_COLLECTION_CAP),
        (e.elsewhere, POOL_ELSEWHERE_PER_VERDICT, POOL_ELSEWHERE_CAP),
        (e.here, 1.0, math.inf),
    ):
        total = tally.good + tally.bad
        if total > 0:
            scale = min(per_item, cap / total)
            alpha += tally.good * scale
            beta += tally.bad * scale
    return Posterior(alpha, beta)


def rate(e: Evidence, base: float = 0.5) -> Ranking:
    """One model's ranking: posterior, optimism, penalties, and the reasons."""
    post = posterior(e, base)
    lo, hi = post.interval()
    mean = post.mean
    reasons = [_record_reason(e, mean, lo, hi)]
    score = mean + OPTIMISM * (hi - mean)
    for penalty, reason in _penalties(e):
        score -= penalty
        reasons.append(reason)
    return Ranking(e.alias, score, mean, (lo, hi), int(e.here.total), tuple(reasons))


def rank_evidence(evidence: Sequence[Evidence]) -> list[Ranking]:
    """Rate every candidate against the same population base, best first;
    ties keep the given order (a collection's member order)."""
    base = population_mean(evidence)
    rankings = [rate(e, base) for e in evidence]
    return sorted(rankings, key=lambda r: -r.score)


@dataclass(frozen=True, slots=True)
class SeatStats:
    """What explorer rotation needs about one eligible model."""

    alias: str
    judged: int  # judged seats on this collection
    seats: int  # seats on this collection, judged or not (decisions.py counts up to a cap)
    last_seated: float = 0.0  # Unix time of its last seat here, 0 if never


def explorer_order(stats: Sequence[SeatStats]) -> list[str]:
    """Fewest judged seats first; among equals, fewest seats, then the one
    seated longest ago. Counting unjudged seats too is what makes the seat
    rotate when nobody judges."""
    ordered = sorted(stats, key=lambda s: (s.judged, s.seats, s.last_seated, s.alias))
    return [s.alias for s in ordered]


# ------------------------------------------------------------------ reasons


def _record_reason(e: Evidence, mean: float, lo: float, hi: float) -> str:
    parts = [f"usefulness {mean:.0%} (90% interval {lo:.0%}-{hi:.0%})"]
    if e.here.total:
        parts.append(f"{e.here.good:g} of {e.here.total:g} verdicts here useful")
    else:
        parts.append("no verdicts here yet")
    if e.suite_shape.total:
        parts.append(f"suite {e.suite_shape.good:g}/{e.suite_shape.total:g} on this shape")
    elif e.suite_other.total:
        parts.append(f"suite {e.suite_other.good:g}/{e.suite_other.total:g} on other shapes")
    elif e.probe_checks.total:
        parts.append(f"passed {e.probe_checks.good:g} of {e.probe_checks.total:g} onboarding probe checks")
    pooled = e.same_collection + e.elsewhere
    if pooled.total:
        parts.append(f"{pooled.good:g} of {pooled.total:g} useful on other shapes or collections")
    return "; ".join(parts)


def _penalties(e: Evidence) -> list[tuple[float, str]]:
    out: list[tuple[float, str]] = []
    if e.probes and e.probe_failures:
        share = e.probe_failures / e.probes
        out.append(
            (HEALTH_MAX * share, f"health: {e.probe_failures} of {e.probes} recent probes went unanswered")
        )
    speed = 0.0
    words = []
    if e.first_byte_seconds is not None and e.first_byte_seconds > 2.0:
        speed += SPEED_MAX / 2 * min(1.0, (e.first_byte_seconds - 2.0) / 8.0)
        words.append(f"first byte {e.first_byte_seconds:.1f}s")
    if e.tokens_per_second is not None and e.tokens_per_second < 30.0:
        speed += SPEED_MAX / 2 * min(1.0, (30.0 - e.tokens_per_second) / 30.0)
        words.append(f"{e.tokens_per_second:.0f} tokens/s")
    if speed:
        out.append((speed, "slow: " + ", ".join(words)))
    if e.price_per_mtok:
        cost = min(COST_MAX, 0.02 * math.log10(1 + e.price_per_mtok) * 2)
        out.append((cost, f"costs ${e.price_per_mtok:g} per million output tokens"))
    if e.near_limit:
        out.append((NEAR_LIMIT, "near its rate limit"))
    return out


# ------------------------------------------------------- Beta distribution


@lru_cache(maxsize=65536)
def beta_quantile(p: float, a: float, b: float) -> float:
    """The p-quantile of Beta(a, b) (no SciPy here): Newton steps on the
    regularized incomplete beta function from a normal guess, kept inside a
    shrinking bracket so a wild step falls back to bisection."""
    mean = a / (a + b)
    sd = math.sqrt(a * b / ((a + b) ** 2 * (a + b + 1)))
    z = math.sqrt(2) * _erfinv(2 * p - 1)
    x = min(1 - 1e-9, max(1e-9, mean + z * sd))
    lo, hi = 0.0, 1.0
    ln_beta = math.lgamma(a) + math.lgamma(b) - math.lgamma(a + b)
    for _ in range(60):
        error = _betainc(a, b, x) - p
        if abs(error) < 1e-10:
            break
        if error < 0:
            lo = x
        else:
            hi = x
        density = math.exp((a - 1) * math.log(x) + (b - 1) * math.log1p(-x) - ln_beta)
        step = x - error / density if density > 0 else -1.0
        x = step if lo < step < hi else (lo + hi) / 2
        if hi - lo < 1e-10:
            break
    return x


def _erfinv(y: float) -> float:
    """Inverse error function (Giles' approximation, ample for a start)."""
    w = -math.log((1.0 - y) * (1.0 + y))
    if w < 5.0:
        w -= 2.5
        c = (
            2.81022636e-08,
            3.43273939e-07,
            -3.5233877e-06,
            -4.39150654e-06,
            0.00021858087,
            -0.00125372503,
            -0.00417768164,
            0.246640727,
            1.50140941,
        )
    else:
        w = math.sqrt(w) - 3.0
        c = (
            -0.000200214257,
            0.000100950558,
            0.00134934322,
            -0.00367342844,
            0.00573950773,
            -0.0076224613,
            0.00943887047,
            1.00167406,
            2.83297682,
        )
    r = c[0]
    for k in c[1:]:
        r = k + r * w
    return r * y


def _betainc(a: float, b: float, x: float) -> float:
    """Regularized incomplete beta I_x(a, b) (continued fraction, Lentz)."""
    if x <= 0.0:
        return 0.0
    if x >= 1.0:
        return 1.0
    ln_front = math.lgamma(a + b) - math.lgamma(a) - math.lgamma(b) + a * math.log(x) + b * math.log1p(-x)
    if x > (a + 1) / (a + b + 2):
        return 1.0 - _betainc(b, a, 1.0 - x)
    tiny = 1e-300
    c, d = 1.0, 1.0 - (a + b) * x / (a + 1)
    d = 1.0 / (d if abs(d) > tiny else tiny)
    h = d
    for m in range(1, 200):
        m2 = 2 * m
        num = m * (b - m) * x / ((a + m2 - 1) * (a + m2))
        d = 1.0 + num * d
        d = 1.0 / (d if abs(d) > tiny else tiny)
        c = 1.0 + num / c
        c = c if abs(c) > tiny else tiny
        h *= d * c
        num = -(a + m) * (a + b + m) * x / ((a + m2) * (a + m2 + 1))
        d = 1.0 + num * d
        d = 1.0 / (d if abs(d) > tiny else tiny)
        c = 1.0 + num / c
        c = c if abs(c) > tiny else tiny
        delta = d * c
        h *= delta
        if abs(delta - 1.0) < 1e-12:
            break
    return math.exp(ln_front) * h / a
