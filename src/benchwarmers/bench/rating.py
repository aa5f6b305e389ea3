"""The rating model: pure arithmetic, no store, no clock, no I/O.

Why a module of its own: the server (`bench/decisions.py`, which reads the
store) and the simulation (`benchmarks/decisions.py`) must decide with the
very same code, or the simulation proves nothing about the product.

The model, per model x collection x shape:

- Usefulness is a Beta posterior. Verdicts on this collection and shape
  count one each (less as they age, and much less before a change the
  detector saw: `bench/forgetting.py`), and so do the suite's tasks of this
  shape at half weight, fading as verdicts come (`SUITE_FADE`) and almost
  gone once the model changed: the suite was run once, the verdicts are now.
  The prior is hierarchical: the model's own record everywhere else (other
  shapes of this collection, this shape elsewhere at half weight, the
  suite's other shapes, the onboarding probes' checks), over the average
  usefulness of the candidates, with a strength learned from how much this
  model's shapes differ (empirical Bayes): a model good at everything is
  pooled hard, a code specialist hardly at all. So an unknown model starts
  where models usually are, and a model good at short questions is probably
  not useless at long ones until its verdicts say otherwise.
- Its mean and a 90% credible interval say how good and how sure.
- The score seating sorts by is the mean, nudged up by a share of the
  interval's upper half (optimism under uncertainty, only on collections
  with no explorer seat: where there is one, it does the exploring, and the
  record seats go to the best estimates), held up for a model seated now by `INCUMBENCY` of its
  posterior spread (a challenger takes a seat when it is clearly better,
  not on one lucky verdict: a panel that settles stays settled; not for a
  model the change detector flagged, whose record is of what it was), and pushed
  down by health (unanswered probes), speed (slow first byte, few tokens per
  second), cost (price) and limits (near a rate limit).
- Pairs ("A better than B") are fitted into the same posterior by
  `bench/pairs.py`; who sits and who explores is `bench/decider.py`'s, with
  the optimistic draw here (`optimistic_draw`): a draw from the upper tail
  of each posterior (between its `EXPLORE_TAIL` quantile and the top).

Every term that moves the score leaves a reason in plain words.
"""

from __future__ import annotations

import math
import random
from collections.abc import Collection, Sequence
from dataclasses import dataclass, field
from functools import lru_cache

CONFIDENCE = 0.90

# A suite task is worth this many verdicts (its tasks are few and not the user's asks).
SUITE_PER_TASK = 0.5
SUITE_CAP = 6.0
# The suite's weight halves after this many verdicts here (they are the user's own asks).
SUITE_FADE = 8.0
# After a change (`bench/forgetting.py`), the suite counts this share of its weight.
SUITE_AFTER_CHANGE = 0.1
# The onboarding probes' checks (a sum, a JSON object...) say little about usefulness.
PROBE_CHECK_PER_ITEM = 0.125
PROBE_CHECK_CAP = 0.5
# Verdicts on this shape in other collections: other users, other asks.
ELSEWHERE_PER_VERDICT = 0.5
POPULATION_STRENGTH = 2.0
# The population base stays within [1 - BASE_MAX, BASE_MAX].
BASE_MAX = 0.99
# Pooling: how far a model's shapes usually differ (a variance of usefulness), worth
# SPREAD_WEIGHT verdicts against the model's own, and the prior's strength bounds.
POPULATION_SPREAD = 0.03
SPREAD_WEIGHT = 30.0
POOL_MIN = 0.5
POOL_MAX = 6.0

# Optimism: the share of the interval's upper half added to the mean.
OPTIMISM = 0.4
# A seated model with a record here (MIN_TRIES verdicts) keeps its seat until a
# challenger is better by this many of its posterior sds: enough against a lucky verdict,
# little enough that a wrong incumbent (seated on a lucky start) gives way (a whole sd
# kept such ones longer in the simulation). A model the change detector flagged
# (`bench/forgetting.py`) has no record to protect: the record was of what it was.
INCUMBENCY = 0.5
# Explorer seats try every model this often here before optimistic draws choose.
MIN_TRIES = 2
# Explorer draws come from the posterior above this quantile (an upper bound, drawn).
EXPLORE_TAIL = 0.9

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
    # The same verdicts shape by shape: how much this model's shapes differ (empty: unknown).
    other_shapes: tuple[Tally, ...] = ()
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
    # Why the detector thinks the model changed ("" when it does not): `bench/forgetting.py`.
    changed: str = ""
    # Age in days where that change began (`forgetting.Recalled.since`): its pairs from before
    # count less (`forgetting.pair_discount`); infinite when no change was seen.
    changed_since: float = math.inf
    # Verdicts here as counted (`here` is discounted by age); None: `here`'s total.
    judged: int | None = None
    # Of `here`'s "not useful", the halves its "both bad" pairs carry (`bench/pairs.py`):
    # read as verdicts, said apart, for they are no verdict anyone gave.
    both_bad: float = 0.0


@dataclass(frozen=True, slots=True)
class Ranking:
    """One model's standing for one collection and shape.

    `score` is what seating sorts by; `mean` and `interval` are the Beta
    posterior of usefulness; `judged` counts verdicts on this collection and
    shape; `compared` how much it was compared in pairs there (weighted:
    a model judged in pairs alone has a record too); `reasons` say, in
    words, what moved the score."""

    alias: str
    score: float
    mean: float
    interval: tuple[float, float]
    judged: int
    reasons: tuple[str, ...] = field(default=())
    # False when the bench may not seat it now (retired, resting, ...): facts.py says why.
    eligible: bool = True
    posterior: Posterior | None = field(default=None, compare=False)
    compared: float = 0.0

    def as_dict(self) -> dict[str, object]:
        return {
            "alias": self.alias,
            "score": round(self.score, 4),
            "mean": round(self.mean, 4),
            "interval": [round(self.interval[0], 4), round(self.interval[1], 4)],
            "judged": self.judged,
            "compared": round(self.compared, 2),
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

    @property
    def sd(self) -> float:
        total = self.alpha + self.beta
        return math.sqrt(self.alpha * self.beta / (total * total * (total + 1)))

    def interval(self, confidence: float = CONFIDENCE) -> tuple[float, float]:
        tail = (1 - confidence) / 2
        # Rounded to a tenth of a verdict: discounted tallies and fitted pairs differ in far
        # digits, and the quantiles are cached on their arguments.
        a, b = max(round(self.alpha, 1), 0.1), max(round(self.beta, 1), 0.1)
        return beta_quantile(tail, a, b), beta_quantile(1 - tail, a, b)


def population_mean(evidence: Sequence[Evidence]) -> float:
    """The candidates' pooled usefulness here (smoothed toward one half), the
    base every model's prior starts from. Kept off 0 and 1: a prior with no
    weight on one side has no interval (Beta(a, 0)), and a bench where every
    verdict so far was useful must still rank."""
    pooled = Tally()
    for e in evidence:
        pooled = pooled + e.here + e.same_collection.weighted(0.5, 50) + e.elsewhere.weighted(0.5, 50)
    return min(BASE_MAX, max(1 - BASE_MAX, round((pooled.good + 1) / (pooled.total + 2), 2)))


def _estimate(tally: Tally, a0: float, b0: float) -> tuple[float, float]:
    """A group's smoothed mean and its sampling variance."""
    n = tally.total + a0 + b0
    mean = (tally.good + a0) / n
    return mean, mean * (1 - mean) / (n + 1)


def posterior(e: Evidence, base: float = 0.5) -> Posterior:
    """The Beta posterior of usefulness here: this shape's verdicts and suite
    tasks over a prior pooled from the model's record elsewhere (the module
    docstring says how hard). Kept by the record it reads: a 200-model bench
    is mostly models with the same (empty) record, rated on every ask."""
    return _posterior(
        e.here,
        e.same_collection,
        e.other_shapes,
        e.elsewhere,
        e.suite_shape,
        e.suite_other,
        e.probe_checks,
        bool(e.changed),
        base,
    )


@lru_cache(maxsize=4096)
def _posterior(
    here: Tally,
    same_collection: Tally,
    other_shapes: tuple[Tally, ...],
    elsewhere: Tally,
    suite_shape: Tally,
    suite_other: Tally,
    probe_checks: Tally,
    changed: bool,
    base: float,
) -> Posterior:
    e = Evidence(
        "",
        here=here,
        same_collection=same_collection,
        other_shapes=other_shapes,
        elsewhere=elsewhere,
        suite_shape=suite_shape,
        suite_other=suite_other,
        probe_checks=probe_checks,
        changed="changed" if changed else "",
    )
    a0, b0 = base * POPULATION_STRENGTH, (1 - base) * POPULATION_STRENGTH
    fade = SUITE_FADE / (SUITE_FADE + e.here.total) * (SUITE_AFTER_CHANGE if e.changed else 1.0)
    own = e.here + e.suite_shape.weighted(SUITE_PER_TASK * fade, SUITE_CAP * fade)
    rest = (
        e.same_collection
        + e.elsewhere.weighted(ELSEWHERE_PER_VERDICT, math.inf)
        + e.suite_other.weighted(SUITE_PER_TASK, SUITE_CAP)
        + e.probe_checks.weighted(PROBE_CHECK_PER_ITEM, PROBE_CHECK_CAP)
    )
    # The model's mean over everything it did, this shape included (as the
    # prior's centre only: the strength below keeps it from outweighing verdicts).
    pooled, _ = _estimate(own + rest, a0, b0)
    # How much this model's shapes differ, beyond what sampling alone would give,
    # shrunk toward how much models' shapes usually differ.
    groups = [_estimate(t, a0, b0) for t in (own, *e.other_shapes) if t.total > 0]
    seen = sum(t.total for t in (own, *e.other_shapes))
    spread = POPULATION_SPREAD
    if len(groups) > 1:
        means = [m for m, _ in groups]
        centre = sum(means) / len(means)
        between = sum((m - centre) ** 2 for m in means) / len(means)
        sampling = sum(v for _, v in groups) / len(groups)
        spread = (max(between - sampling, 0.0) * seen + POPULATION_SPREAD * SPREAD_WEIGHT) / (
            seen + SPREAD_WEIGHT
        )
    strength = min(POOL_MAX, max(POOL_MIN, pooled * (1 - pooled) / max(spread, 1e-4) - 1))
    if rest.total <= 0:  # nothing elsewhere: the population base alone
        pooled, strength = base, POPULATION_STRENGTH
    return Posterior(pooled * strength + own.good, (1 - pooled) * strength + own.bad)


def rate(
    e: Evidence,
    base: float = 0.5,
    seated: bool = False,
    optimism: float = OPTIMISM,
    post: Posterior | None = None,
) -> Ranking:
    """One model's ranking: posterior, optimism, incumbency, penalties, and
    the reasons. `seated`: it holds a seat now (see `INCUMBENCY`); `post`:
    its posterior when the caller fitted it (pairs), else `posterior(e, base)`."""
    post = post or posterior(e, base)
    lo, hi = post.interval()
    mean = post.mean
    reasons = [_record_reason(e, mean, lo, hi)]
    if e.changed:
        reasons.append(e.changed)
    score = mean + optimism * (hi - mean)
    # An untried seat-holder has no record to protect, nor has one that changed since.
    if seated and e.here.total >= MIN_TRIES and not e.changed:
        score += INCUMBENCY * post.sd
        reasons.append("seated now: a challenger must be clearly better to take its seat")
    for penalty, reason in _penalties(e):
        score -= penalty
        reasons.append(reason)
    judged = e.judged if e.judged is not None else int(e.here.total)
    return Ranking(e.alias, score, mean, (lo, hi), judged, tuple(reasons), posterior=post)


def rank_evidence(
    evidence: Sequence[Evidence], seated: Collection[str] = (), optimism: float = OPTIMISM
) -> list[Ranking]:
    """Rate every candidate against the same population base, best first;
    ties keep the given order (a collection's member order). `seated`: who
    holds a record seat now (incumbency); `optimism`: 0 where explorer seats
    do the exploring."""
    base = population_mean(evidence)
    rankings = [rate(e, base, e.alias in seated, optimism) for e in evidence]
    return sorted(rankings, key=lambda r: -r.score)


def optimistic_draw(post: Posterior, rng: random.Random) -> float:
    """A draw from the posterior's upper tail: its quantile at a uniform
    point above `EXPLORE_TAIL` (rounded to a thousandth, so quantiles are
    reused across asks)."""
    point = min(0.999, round(EXPLORE_TAIL + (1 - EXPLORE_TAIL) * rng.random(), 3))
    return beta_quantile(point, post.alpha, post.beta)


# ------------------------------------------------------------------ reasons


def _record_reason(e: Evidence, mean: float, lo: float, hi: float) -> str:
    verdicts = Tally(e.here.good, max(0.0, e.here.bad - e.both_bad))
    return _record_words(
        verdicts,
        e.both_bad,
        e.suite_shape,
        e.suite_other,
        e.probe_checks,
        e.same_collection + e.elsewhere,
        mean,
        lo,
        hi,
    )


@lru_cache(maxsize=4096)
def _record_words(
    here: Tally,
    both_bad: float,
    suite_shape: Tally,
    suite_other: Tally,
    probe_checks: Tally,
    pooled: Tally,
    *interval: float,
) -> str:
    mean, lo, hi = interval
    parts = [f"usefulness {mean:.0%} (90% interval {lo:.0%}-{hi:.0%})"]
    if here.total:
        parts.append(f"{here.good:.3g} of {here.total:.3g} verdicts here useful (weighed by age)")
    else:
        parts.append("no verdicts here yet")
    if both_bad:
        parts.append(f"both bad in pairs, read as {both_bad:.3g} verdicts not useful")
    if suite_shape.total:
        parts.append(f"suite {suite_shape.good:g}/{suite_shape.total:g} on this shape")
    elif suite_other.total:
        parts.append(f"suite {suite_other.good:g}/{suite_other.total:g} on other shapes")
    elif probe_checks.total:
        parts.append(f"passed {probe_checks.good:g} of {probe_checks.total:g} onboarding probe checks")
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
    if x > (a + 1) / (a + b + 2):
        return 1.0 - _betainc(b, a, 1.0 - x)
    ln_front = math.lgamma(a + b) - math.lgamma(a) - math.lgamma(b) + a * math.log(x) + b * math.log1p(-x)
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
