"""The Decider: who sits on a panel by record, who explores, who is left off.

One seating flow, pure (no store, no clock, no I/O), that the server's panel
and route seating call (`bench/decisions.py` reads the store into a `Table`
and `Candidate`s and calls `decide`) and that the simulation
(`benchmarks/decisions.py`) drives end to end, so a figure from the
benchmark is a figure about the product. The same store state gives the
same seats in both (tests/bench/test_decider.py).

The rules, in order:

1. **Who may sit at all.** A candidate `held_out` (retired, resting,
   unavailable, onboarding, an image model, a shape it cannot take, or
   *failing*: its recent calls failed by connection, 5xx or timeout, not
   429, until a probe answers) sits nowhere; the reason is its `leftOff`.
2. **Record seats** go to the collection's members, best first by the
   rating (`rating.rate`, with the pairs fitted in: `pairs.joint`): every
   member when the collection caps nothing, else the best `seats`, a
   settled seat kept against a challenger judged on few answers here
   (`SETTLED_ANSWERS`). A
   member held out gives its seat to the next best member (said in its
   `leftOff`: "its seat went to X"); when no member is left to take it and
   `promotion` is `auto`, to the best non-member with a record here.
3. **Promotion** (a collection setting): a non-member (an explorer's find)
   whose interval is clearly above the weakest record seat's (its mean less
   `PROMOTE_SDS` of its spread above that seat's mean) takes the seat under
   `auto`, is only named in `suggestions` under `suggest` (the default:
   the user decides), and is neither under `never`.
4. **Explorer seats** (`explorer_seats` of them, plus spares the caller
   asks for in case the first do not fit a request) go, among the models
   that may explore and sit by no record seat (unseated members included:
   where the members are the whole bench, exploration is among those the
   cap leaves out): first to newcomers not yet tried here (onboarded, or a
   new free model the catalog found), then to models tried fewer than
   `MIN_TRIES` times (a try: a verdict here, or a pair it was in by its
   weight, so a model compared in pairs is not rotated through again;
   fewest tries, fewest seats, seated longest ago: the seat rotates even
   when nobody judges), then, by an optimistic draw from
   the upper tail of each posterior, to those whose interval still reaches
   above the weakest record seat's mean by `EXPLORE_MARGIN`: a seat is worth
   spending on them. When none does, the explorer seat goes to the next
   best by record, and says so: exploring further would cost a seat for
   nothing.
"""

from __future__ import annotations

import math
import random
from collections import defaultdict
from collections.abc import Callable, Hashable, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, TypeVar

from benchwarmers.bench.pairs import PairCounts, joint
from benchwarmers.bench.rating import (
    MIN_TRIES,
    OPTIMISM,
    Evidence,
    Posterior,
    Ranking,
    optimistic_draw,
    population_mean,
    posterior,
    rate,
)

# How a held-out member's reason names who took its seat.
GAVE_SEAT = "; its seat went to "
# A non-member is promoted when its mean less this many sds is above the weakest seat's mean.
PROMOTE_SDS = 1.0
# How many fits and ratings `rankings` keeps (by their inputs), the latest used.
KEPT = 64
_FITTED: dict[Hashable, tuple[list[Evidence], float, dict[str, Posterior]]] = {}
_RATED: dict[Hashable, tuple[Ranking, ...]] = {}
T = TypeVar("T")
_NOTHING: Any = object()
# Explore a tried model only while its 90% interval's top is this far above the weakest seat's mean.
EXPLORE_MARGIN = 0.03
# A settled seat: a member seated by record with this many of its answers judged here (verdicts,
# and answers people compared in pairs, each once) keeps its seat against any challenger judged
# on fewer than `CHALLENGER_ANSWERS` answers here, whatever that one's estimate. Such an estimate
# is mostly its prior, or a few lucky pairs, and a seat it took late was a wrong panel for the
# asks it took to read it back down (the easy world's slowest runs, docs/benchmarks.md: issue 34,
# sixth look); a challenger still reaching above the seat keeps the explorer seat until it has
# been judged enough to take it. Newcomers are exempt (their suite result seats them at once).
# A seat whose model the change detector flagged stays settled against a challenger whose mean
# is inside the flagged model's interval (read now from its newest verdicts): in a world where
# nothing changes every flag is a chance dip, and a model read from its prior took the seat for
# the asks the flag lasted; a challenger above that whole interval takes it (a real drop is
# seen at once). Both: docs/benchmarks.md, issue 34's eleventh look.
SETTLED_ANSWERS = 30
CHALLENGER_ANSWERS = 15


@dataclass(frozen=True, slots=True)
class Candidate:
    """One bench model as the decider sees it, for one collection and shape."""

    alias: str
    evidence: Evidence
    member: bool
    held_out: str = ""  # why it may sit nowhere now; "" when it may
    may_explore: bool = True  # the bench may seat it by its own choice (not ad hoc, free-only kept)
    newcomer: bool = False  # onboarded lately, or a new free model from the catalog
    seats: int = 0  # its seats here, judged or not (up to a cap)
    last_seated: float = 0.0  # when it last sat here (Unix time, or the simulation's clock), 0: never


@dataclass(frozen=True, slots=True)
class Table:
    """A collection as the decider sees it, for one shape."""

    members: tuple[str, ...]  # in member order (ties keep it)
    seats: int = 0  # record seats; 0: every member
    explorer_seats: int = 0
    promotion: str = "suggest"  # "auto", "suggest" or "never" (store.collections.PROMOTIONS)
    seated: tuple[str, ...] = ()  # who sat by record last (incumbency)


@dataclass(frozen=True, slots=True)
class Decision:
    record: tuple[str, ...]  # record seats, best first
    explorers: tuple[str, ...]  # explorer seats in order, spares included
    left_off: tuple[tuple[str, str], ...]  # members (and failing explorers' picks) not seated, and why
    why: dict[str, str] = field(default_factory=dict)  # alias -> why it sits
    suggestions: tuple[str, ...] = ()
    rankings: tuple[Ranking, ...] = ()  # every candidate, best first; those held out last


def rankings(table: Table, candidates: Sequence[Candidate], pairs: PairCounts | None = None) -> list[Ranking]:
    """Every candidate rated against the same population base, pairs fitted
    in, best first (member order breaks ties); those held out last with
    `eligible=False` and why first in their reasons.

    The fit and the ratings are kept by everything they read (`KEPT` of the
    latest of each): a bench whose evidence did not move since the last ask
    (most asks: verdicts are few) is fitted and rated once, and a model
    resting or seated anew costs a re-rating, not a re-fit; on the server's
    warm path and in the simulation alike."""
    evidence = tuple(c.evidence for c in candidates)
    read = _Hashed((evidence, pairs.key() if pairs else None))
    seated = frozenset(table.seated)
    optimism = 0.0 if table.explorer_seats else OPTIMISM
    flags = tuple((bool(c.held_out), c.newcomer) for c in candidates)  # what `_settled` reads of them
    rated = _kept(
        _RATED,
        (read, seated, optimism, flags),
        lambda: _settled(table, candidates, _rated(evidence, read, pairs, seated, optimism), pairs),
    )
    order = sorted(range(len(rated)), key=lambda i: -rated[i].score)
    out = [rated[i] for i in order if not candidates[i].held_out]
    out += [
        replace(
            rated[i], eligible=False, reasons=(f"not seated: {candidates[i].held_out}", *rated[i].reasons)
        )
        for i in order
        if candidates[i].held_out
    ]
    return out


def _rated(
    evidence: tuple[Evidence, ...],
    key: _Hashed,
    pairs: PairCounts | None,
    seated: frozenset[str],
    optimism: float,
) -> tuple[Ranking, ...]:
    read, base, posts = _kept(_FITTED, key, lambda: _fit(evidence, pairs))
    rated = [rate(e, base, e.alias in seated, optimism, posts[e.alias]) for e in read]
    if pairs:
        rated = [_with_pairs(r, pairs) for r in rated]
    return tuple(rated)


def _settled(
    table: Table, candidates: Sequence[Candidate], rated: tuple[Ranking, ...], pairs: PairCounts | None
) -> tuple[Ranking, ...]:
    """The ratings with settled seats kept (`SETTLED_ANSWERS`): a challenger
    judged on too few answers here scores just under the weakest settled seat
    that holds it at most, and says why."""
    answered = pairs.answers if pairs else {}
    judged = [r.judged + answered.get(r.alias, 0) for r in rated]
    seated = set(table.seated)
    # (score, alias, the highest mean it holds back: a flagged model's interval top, else any)
    settled = [
        (r.score, r.alias, r.interval[1] if c.evidence.changed else math.inf)
        for r, c, n in zip(rated, candidates, judged, strict=True)
        if r.alias in seated and not c.held_out and n >= SETTLED_ANSWERS
    ]
    if not settled:
        return rated

    def held(r: Ranking, c: Candidate, n: float) -> Ranking:
        if r.alias in seated or c.held_out or c.newcomer or n >= CHALLENGER_ANSWERS:
            return r
        holders = [(score, alias) for score, alias, top in settled if r.mean <= top]
        if not holders:
            return r
        floor, holder = min(holders)
        if r.score < floor:
            return r
        return replace(
            r,
            score=math.nextafter(floor, -math.inf),
            reasons=(
                *r.reasons,
                f"kept out of {holder}'s settled seat: judged on {n:.3g} answers here, "
                f"fewer than {CHALLENGER_ANSWERS} (too few to unseat a model judged on many)",
            ),
        )

    return tuple(held(r, c, n) for r, c, n in zip(rated, candidates, judged, strict=True))


def _fit(
    evidence: tuple[Evidence, ...], pairs: PairCounts | None
) -> tuple[list[Evidence], float, dict[str, Posterior]]:
    """The posteriors: each model's evidence over the population base, pairs fitted in."""
    read = list(evidence)
    if pairs:  # "both bad" is also half a "not useful" verdict for each
        read = [
            replace(e, here=e.here + misses, both_bad=misses.bad)
            for e in read
            for misses in (pairs.both_bad_misses(e.alias),)
        ]
    base = population_mean(read)
    posts = {e.alias: posterior(e, base) for e in read}
    if pairs:
        posts = joint(posts, pairs)
    return read, base, posts


class _Hashed:
    """A key hashed once: the evidence of every candidate and the pairs are
    a deep tuple, and a lookup and a store each hashed it afresh."""

    __slots__ = ("hash", "value")

    def __init__(self, value: Hashable) -> None:
        self.value = value
        self.hash = hash(value)

    def __hash__(self) -> int:
        return self.hash

    def __eq__(self, other: object) -> bool:
        return isinstance(other, _Hashed) and self.hash == other.hash and self.value == other.value


def _kept(kept: dict[Hashable, T], key: Hashable, make: Callable[[], T]) -> T:
    """`make()`, kept by `key` among the `KEPT` latest used."""
    found = kept.pop(key, _NOTHING)
    value: T = make() if found is _NOTHING else found
    if len(kept) >= KEPT:
        del kept[next(iter(kept))]
    kept[key] = value
    return value


def decide(
    table: Table,
    candidates: Sequence[Candidate],
    *,
    pairs: PairCounts | None = None,
    rng: random.Random | None = None,
    spares: int = 0,
    explore: bool = True,
) -> Decision:
    """The seats of one ask: record seats, explorer seats (and `spares`
    more in line), who is left off and why. `explore=False`: the record
    seats alone, no explorer drawn (who sits by record now, as a report
    or the simulation's check of it reads it)."""
    by_alias = {c.alias: c for c in candidates}
    ranked = rankings(table, candidates, pairs)
    rank_of = {r.alias: r for r in ranked}
    members = [a for a in dict.fromkeys(table.members) if a in by_alias]
    want = table.seats if 0 < table.seats < len(members) else len(members)
    by_score = [r.alias for r in ranked]  # eligible first, then held out
    member_order = [a for a in by_score if by_alias[a].member]
    eligible_members = [a for a in member_order if not by_alias[a].held_out]
    record = eligible_members[:want]
    left: dict[str, str] = {a: by_alias[a].held_out for a in members if by_alias[a].held_out}
    for alias in eligible_members[want:]:
        left[alias] = f"ranked below the collection's {table.seats} seats"
    why = {a: _record_why(rank_of[a]) for a in record}
    # A held-out member's seat goes to the next best member; with promotion auto, to a non-member.
    outsiders = [
        a
        for a in by_score
        if not by_alias[a].member
        and not by_alias[a].held_out
        and by_alias[a].may_explore
        and rank_of[a].judged >= MIN_TRIES
    ]
    missing = want - len(record)
    if missing > 0 and table.promotion == "auto":
        for alias in outsiders[:missing]:
            record.append(alias)
            why[alias] = f"stands in for a member held out (promotion auto); {_record_why(rank_of[alias])}"
    # Who would sit were every member free to: the held out among them gave their seats away.
    would_sit = sorted(member_order, key=lambda a: -rank_of[a].score)[:want]
    stand_ins = [a for a in record if a not in would_sit]
    for held, stand_in in zip((a for a in would_sit if by_alias[a].held_out), stand_ins, strict=False):
        left[held] += f"{GAVE_SEAT}{stand_in}"
    # Promotion: a non-member clearly better than the weakest record seat.
    suggestions: list[str] = []
    if table.promotion in ("auto", "suggest") and record:
        for alias in outsiders:
            if alias in record:
                continue
            weakest = min(record, key=lambda a: rank_of[a].mean)
            challenger = rank_of[alias]
            if challenger.mean - PROMOTE_SDS * _sd(challenger) <= rank_of[weakest].mean:
                break  # outsiders are best first: no later one is clearly better either
            words = (
                f"{alias} (usefulness {challenger.interval[0]:.0%}-{challenger.interval[1]:.0%}) is clearly "
                f"better than {weakest} ({rank_of[weakest].mean:.0%})"
            )
            if table.promotion == "suggest":
                suggestions.append(f"promote {alias}: {words}")
                break
            record[record.index(weakest)] = alias
            why[alias] = f"promoted (promotion auto): {words}"
            if by_alias[weakest].member:
                left[weakest] = f"its seat went to {alias}, clearly better (promotion auto)"
            else:
                why.pop(weakest, None)
    # Capped: best first. Uncapped: every member sits, in member order (its seat labels).
    record.sort(key=by_score.index if want < len(members) else _member_order(members))
    explorers = (
        _explorers(table, candidates, record, rank_of, rng or random.Random(), spares, why, _compared(pairs))
        if explore
        else []
    )
    left_off = tuple((a, left[a]) for a in members if a in left and a not in record and a not in explorers)
    return Decision(tuple(record), tuple(explorers), left_off, why, tuple(suggestions), tuple(ranked))


def _explorers(
    table: Table,
    candidates: Sequence[Candidate],
    record: Sequence[str],
    rank_of: dict[str, Ranking],
    rng: random.Random,
    spares: int,
    why: dict[str, str],
    compared: dict[str, float],
) -> list[str]:
    wanted = table.explorer_seats + spares if table.explorer_seats > 0 else 0
    if wanted <= 0:
        return []
    pool = [c for c in candidates if c.may_explore and not c.held_out and c.alias not in record]
    weakest = min((rank_of[a].mean for a in record), default=0.0)
    # A try is a verdict here or a pair it was in (weighted): a model compared in pairs was tried.
    tries = {c.alias: rank_of[c.alias].judged + compared.get(c.alias, 0.0) for c in pool}
    newcomers = sorted(
        (c for c in pool if c.newcomer and tries[c.alias] < MIN_TRIES),
        key=lambda c: (tries[c.alias], c.seats, c.last_seated, c.alias),
    )
    untried = sorted(
        (c for c in pool if not c.newcomer and tries[c.alias] < MIN_TRIES),
        key=lambda c: (tries[c.alias], c.seats, c.last_seated, c.alias),
    )
    order = [(c.alias, "explorer: new on the bench, not yet tried here") for c in newcomers]
    order += [(c.alias, "explorer: few verdicts or pairs here yet") for c in untried]
    tried = [c for c in pool if tries[c.alias] >= MIN_TRIES]
    reaching = [c for c in tried if rank_of[c.alias].interval[1] > weakest + EXPLORE_MARGIN]
    draws = {
        c.alias: optimistic_draw(rank_of[c.alias].posterior or Posterior(1.0, 1.0), rng) for c in reaching
    }
    order += [
        (a, f"explorer: might beat the weakest seat (optimistic draw {draws[a]:.0%})")
        for a in sorted(draws, key=lambda a: -draws[a])
    ]
    rest = sorted((c for c in tried if c.alias not in draws), key=lambda c: -rank_of[c.alias].score)
    order += [
        (
            c.alias,
            "explorer seat to the next best by record: no other interval reaches above the weakest seat",
        )
        for c in rest
    ]
    chosen = order[:wanted]
    for alias, reason in chosen[: table.explorer_seats]:
        why[alias] = reason
    return [alias for alias, _ in chosen]


def _compared(pairs: PairCounts | None) -> dict[str, float]:
    """How much each model was compared in pairs (weighted), both sides counted."""
    out: dict[str, float] = defaultdict(float)
    for winner, row in pairs.wins.items() if pairs else ():
        for loser, weight in row.items():
            out[winner] += weight
            out[loser] += weight
    return out


def _member_order(members: Sequence[str]) -> Callable[[str], int]:
    position = {a: i for i, a in enumerate(members)}
    return lambda alias: position.get(alias, len(position))


def _record_why(r: Ranking) -> str:
    return f"score {r.score:.2f}, usefulness {r.interval[0]:.0%}-{r.interval[1]:.0%}"


def _sd(r: Ranking) -> float:
    """A ranking's spread, from its 90% interval (a normal's 1.645 sds each side)."""
    return (r.interval[1] - r.interval[0]) / (2 * 1.645)


def _with_pairs(r: Ranking, pairs: PairCounts) -> Ranking:
    won, lost = pairs.record(r.alias)
    if not won and not lost:
        return r
    said = f"pairs: preferred {round(won, 1):g}, not preferred {round(lost, 1):g}"
    if (won % 0.5) or (lost % 0.5):  # not whole pairs and ties: older pairs and a judge model's count less
        said += " (weighted)"
    return replace(r, compared=won + lost, reasons=(*r.reasons, said))
