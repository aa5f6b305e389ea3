"""Who sits, who merges, who drives route mode: the one source of truth.

This module reads the store (through `bench/facts.py`, `evidence.py`,
`pair_reads.py` and `seated.py`, each a cached read of the whole bench)
into the pure `bench.decider`'s `Table` and `Candidate`s and lets it
decide, so the simulation in `benchmarks/decisions.py`, which drives the
same `decide`, measures the very seating the server does. The reasons people
read (`GET /bench/decisions`, the seating history) are `bench/explain.py`'s.
For the panel and route helpers:

``await seat_plan(store, collection, shape, spares=0, rng=None) -> decider.Decision``
    The seats of one panel ask: record seats (members; promoted or
    stand-in non-members under promotion auto), explorer seats (and
    `spares` more in line), the members left off and why, suggestions.
    A failing model (`calls/health.py`) is held out, and
    `bench/revive.py` probes it.

``await rank(store, collection, shape, candidates=None) -> list[Ranking]``
    Every candidate (default: the whole bench) best first, eligible or not:
    an ineligible one (retired, resting, image, ...) is rated but put last,
    `eligible=False`, its reason first in `reasons`. `Ranking` has alias,
    score, mean, interval (lo, hi), judged, reasons, eligible.
``await rank_aliases(store, collection, shape, aliases) -> list[str]``
    The same, as `panel.engine.Ranker` wants it: `PanelEngine(rt, ranker=rank_aliases)`.
``await pick_explorers(store, collection, shape, n, exclude=()) -> list[str]``
    The explorer seats `seat_plan` gives (`decider` says the order: newcomers,
    then models with fewer than `MIN_TRIES` judged seats here, then those
    whose interval still reaches above the weakest record seat, then the
    next best by record): never ad hoc, retired, resting, unavailable,
    onboarding, failing or image models, nor models whose endpoint the last
    call could not reach; on a collection that is `free_only`, only models
    that cost nothing (a model that went paid is priced now); vision-role
    models only for the `vision` shape.
``await pick_mergers(store, collection, shape, candidates) -> list[str]``
``await pick_route_member(store, collection, candidates, shape="code", exclude=()) -> list[str]``
    Best first; the route member must take tools.
"""

from __future__ import annotations

import math
import random
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Protocol

from benchwarmers.bench import decider
from benchwarmers.bench.evidence import FIRST_BYTES, LIMITS, PROBES, RECALLED, SUITE, TALLIES, read_evidence
from benchwarmers.bench.facts import FACTS, Facts, facts_of, load_facts, went_paid, why_held_out
from benchwarmers.bench.pair_reads import PAIRS, pair_counts
from benchwarmers.bench.pairs import PairCounts
from benchwarmers.bench.rating import MIN_TRIES, Evidence, Ranking
from benchwarmers.bench.seated import (
    EXPLORING,
    SEAT_COUNTS,
    SEATED,
    collection_seating,
    latest_seatings,
    seat_counts,
    seated_now,
)
from benchwarmers.calls.verdicts import collection_name
from benchwarmers.store.db import Store
from benchwarmers.store.times import utc

# Explorer seats' optimistic draws (a draw is a coin, not a secret: `random` is right).
_EXPLORER_DRAWS = random.Random()
# A model on the bench for less than this long is a newcomer: explored first.
NEWCOMER_DAYS = 7
# `_every_member`'s decisions by their inputs (table, members' held-out reasons): pure, so
# kept without expiry; dropped whole when this many pile up (a held-out reason names a time).
EVERY_MEMBER_KEPT = 1024
_EVERY_MEMBER: dict[tuple[decider.Table, tuple[str, ...]], decider.Decision] = {}


@dataclass(slots=True)
class _Reused:
    """The last `_every_member` answer of a collection and shape and what it
    was read from: the very objects the caches held (a refresh or a write
    makes new ones), and when the first member's rest then to come ends
    (the one fact of `why_held_out` that the clock alone changes)."""

    collection: SeatingSettings
    rows: dict[str, Facts]
    seated: tuple[str, ...]
    until: datetime | None
    decision: decider.Decision | None


# `_every_member`'s last answer by (database, collection, shape): a plain ask on an unchanged
# bench is answered from it without building the table and the reasons again.
_LAST_EVERY: dict[tuple[str, str, str], _Reused] = {}
# Every cache ranking reads (tests and `benchmarks/decisions_scale.py` empty them all).
RANKING_CACHES = (
    FACTS,
    TALLIES,
    RECALLED,
    SUITE,
    PAIRS,
    PROBES,
    LIMITS,
    FIRST_BYTES,
    SEATED,
    EXPLORING,
    SEAT_COUNTS,
)
# Those holding people's judgements (verdicts and pairs): what a read that shows them beside its
# own counts reads as they are now (`changes.current`), not as this process last cached them.
JUDGEMENT_CACHES = (TALLIES, RECALLED, PAIRS)


async def rank(
    store: Store, collection: str, shape: str, candidates: Sequence[str] | None = None
) -> list[Ranking]:
    name = collection_name(collection)
    now = datetime.now(UTC)
    models = await facts_of(store, candidates)
    evidence = await read_evidence(store, name, shape, models, now)
    seated, explores = await seated_now(store, name, shape)
    free_only = (await collection_seating(store)).get(name, (0, False))[1]
    table = decider.Table(members=tuple(models), explorer_seats=int(explores), seated=seated)
    return decider.rankings(
        table,
        [
            decider.Candidate(
                a, evidence[a], True, why_held_out(models[a], shape, now) or went_paid(models[a], free_only)
            )
            for a in models
        ],
        await pair_counts(store, name, shape, now, changes_since(evidence)),
    )


def changes_since(evidence: Mapping[str, Evidence]) -> dict[str, float]:
    """Per model the change detector flagged, the age in days its change began."""
    return {a: e.changed_since for a, e in evidence.items() if e.changed_since < math.inf}


async def rank_aliases(store: Store, collection: str, shape: str, aliases: list[str]) -> list[str]:
    return [r.alias for r in await rank(store, collection, shape, aliases)]


class SeatingSettings(Protocol):
    """What seating reads of a collection (a `store.views.CollectionView` has it)."""

    @property
    def name(self) -> str: ...
    @property
    def members(self) -> Sequence[str]: ...
    @property
    def seats(self) -> int: ...
    @property
    def explorer_seats(self) -> int: ...
    @property
    def free_only(self) -> bool: ...
    @property
    def promotion(self) -> str: ...


@dataclass(frozen=True, slots=True)
class Seating:
    """Seating settings without a collection row (`pick_explorers`)."""

    name: str
    members: tuple[str, ...]
    seats: int
    explorer_seats: int
    free_only: bool
    promotion: str


async def seat_plan(
    store: Store,
    collection: SeatingSettings,
    shape: str,
    *,
    spares: int = 0,
    exclude: Sequence[str] = (),
    rng: random.Random | None = None,
) -> decider.Decision:
    """The seats of one ask on `collection` (see the module docstring);
    `exclude`: aliases seated otherwise (`--with` extras), never explorers."""
    if collection.explorer_seats <= 0 and collection.promotion != "auto":
        every = await _every_member(store, collection, shape)
        if every is not None:
            return every
    table, candidates, pairs = await seat_state(store, collection, shape, exclude=exclude)
    return decider.decide(table, candidates, pairs=pairs, rng=rng or _EXPLORER_DRAWS, spares=spares)


async def _every_member(store: Store, collection: SeatingSettings, shape: str) -> decider.Decision | None:
    """`seat_plan` on a collection with no explorer seat and no promotion
    that could seat a non-member, when it caps nothing either (None when it
    does): every member that may sit sits, in member order, whatever the
    record says (most panels: the ask's hot path). The decision is
    `decide`'s own, kept by its inputs, read from the members' facts alone:
    building the whole bench's candidates and rating them on every ask cost
    a one-seat panel a fifth of its CPU; here, once the members' held-out
    reasons are known, an ask is a dictionary lookup. And an ask that finds
    the very objects the last one read (the facts, the seating line, the
    collection: a cache refresh or a write makes new ones), before any
    member's rest has ended, takes the last answer without working out the
    table and the reasons again (`_LAST_EVERY`: the plan's share of a
    streamed panel's first byte, docs/benchmarks.md, branch `panel39`). The
    tests prove it seats as `decide` on `seat_state` does
    (tests/bench/test_decisions.py)."""
    rows = await FACTS.get(store, lambda: load_facts(store))
    # Who sits now, alone: `seated_now`'s second read (explorer seats) is of no use here.
    seated = (await latest_seatings(store)).get((collection.name, shape), ())
    now = datetime.now(UTC)
    where = (store.database_key, collection.name, shape)
    last = _LAST_EVERY.get(where)
    if (
        last is not None
        and last.collection is collection
        and last.rows is rows
        and last.seated is seated
        and (last.until is None or now < last.until)
    ):
        return last.decision
    decision = _every_member_of(collection, shape, rows, seated, now)
    rests = [utc(r.resting_until) for a in collection.members if (r := rows.get(a)) and r.resting_until]
    until = min((ends for ends in rests if ends > now), default=None)
    _LAST_EVERY[where] = _Reused(collection, rows, seated, until, decision)
    return decision


def _every_member_of(
    collection: SeatingSettings, shape: str, rows: dict[str, Facts], seated: tuple[str, ...], now: datetime
) -> decider.Decision | None:
    """`_every_member` from the members' facts, as read."""
    members = tuple(a for a in collection.members if a in rows)
    if 0 < collection.seats < len(members):  # capped: the record decides
        return None
    table = decider.Table(
        members=members,
        seats=collection.seats,
        explorer_seats=collection.explorer_seats,
        promotion=collection.promotion,
        seated=seated,
    )
    aliases = tuple(dict.fromkeys(members))
    held_out = tuple(
        why_held_out(rows[a], shape, now) or went_paid(rows[a], collection.free_only) for a in aliases
    )
    key = (table, held_out)
    decision = _EVERY_MEMBER.get(key)
    if decision is None:
        candidates = [
            decider.Candidate(a, Evidence(a), member=True, held_out=why)
            for a, why in zip(aliases, held_out, strict=True)
        ]
        decision = decider.decide(table, candidates, rng=_EXPLORER_DRAWS)
        if len(_EVERY_MEMBER) >= EVERY_MEMBER_KEPT:
            _EVERY_MEMBER.clear()
        _EVERY_MEMBER[key] = decision
    return decision


async def seat_state(
    store: Store, collection: SeatingSettings, shape: str, *, exclude: Sequence[str] = ()
) -> tuple[decider.Table, list[decider.Candidate], PairCounts | None]:
    """The store as the decider sees it for this collection and shape: what
    `seat_plan` decides on (and what the simulation builds from its world)."""
    name = collection.name
    now = datetime.now(UTC)
    bench = await facts_of(store, None)
    members = [a for a in collection.members if a in bench]
    seated, _ = await seated_now(store, name, shape)
    table = decider.Table(
        members=tuple(members),
        seats=collection.seats,
        explorer_seats=collection.explorer_seats,
        promotion=collection.promotion,
        seated=seated,
    )
    capped = 0 < collection.seats < len(members)
    outsiders: list[str] = []
    if collection.explorer_seats > 0 or collection.promotion == "auto":
        outsiders = [a for a, m in bench.items() if a not in members and not m.ad_hoc and a not in exclude]
    models = {a: bench[a] for a in (*members, *outsiders)}
    pairs = None
    if capped or outsiders:
        evidence = await read_evidence(store, name, shape, models, now)
        pairs = await pair_counts(store, name, shape, now, changes_since(evidence))
    else:
        # Every member that may sit sits, in member order: the record decides nothing here,
        # so it is not read (most panels: the ask's hot path).
        evidence = {a: Evidence(a) for a in models}
    untried = [a for a in models if (evidence[a].judged or 0) < MIN_TRIES]
    seen = await seat_counts(store, name, shape, untried) if collection.explorer_seats > 0 else {}
    newcomer_since = now - timedelta(days=NEWCOMER_DAYS)
    candidates = []
    for alias, model in models.items():
        seats, last = seen.get(alias, (0, 0.0))
        candidates.append(
            decider.Candidate(
                alias,
                evidence[alias],
                member=alias in members,
                held_out=why_held_out(model, shape, now) or went_paid(model, collection.free_only),
                may_explore=not model.ad_hoc
                and not model.unreachable
                and alias not in exclude
                and not (collection.free_only and model.priced),
                newcomer=utc(model.created_at) >= newcomer_since,
                seats=seats,
                last_seated=last,
            )
        )
    return table, candidates, pairs


async def pick_explorers(
    store: Store, collection: str, shape: str, n: int, exclude: Sequence[str] = ()
) -> list[str]:
    """The first `n` explorers in line for this collection and shape."""
    return [alias for alias, _ in await explorers_in_line(store, collection, shape, n, exclude)]


async def explorers_in_line(
    store: Store, collection: str, shape: str, n: int, exclude: Sequence[str] = ()
) -> list[tuple[str, str]]:
    """`pick_explorers` with the decider's reason for each ("explorer: few
    verdicts or pairs here yet", "...might beat the weakest seat"...; "" for a spare)."""
    if n <= 0:
        return []
    name = collection_name(collection)
    explorer_seats, free_only = (await collection_seating(store)).get(name, (0, False))
    # Who is next in line, even on a collection with no explorer seat; `exclude` sit by record.
    settings = Seating(name, tuple(exclude), 0, max(explorer_seats, 1), free_only, "never")
    decision = await seat_plan(store, settings, shape, spares=max(n - settings.explorer_seats, 0))
    return [(alias, decision.why.get(alias, "")) for alias in decision.explorers[:n]]


async def pick_mergers(store: Store, collection: str, shape: str, candidates: Sequence[str]) -> list[str]:
    """Best record on this shape first; only those eligible now."""
    return [r.alias for r in await rank(store, collection, shape, candidates) if r.eligible]


async def pick_route_member(
    store: Store, collection: str, candidates: Sequence[str], shape: str = "code", exclude: Sequence[str] = ()
) -> list[str]:
    """The failover order for a route conversation: eligible members that
    take tools, best first; the first drives."""
    models = await facts_of(store, candidates)
    tool_takers = [a for a in models if models[a].tools and a not in exclude]
    return [r.alias for r in await rank(store, collection, shape, tool_takers) if r.eligible]
