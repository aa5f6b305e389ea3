"""Who sits, who merges, who drives route mode: the one source of truth.

This module reads the store (verdicts, suite results, probes, limits, the
bench, calls failing) into the pure `bench.decider`'s `Table` and
`Candidate`s and lets it decide, so the simulation in
`benchmarks/decisions.py`, which drives the same `decide`, measures the very
seating the server does. For the panel and route helpers:

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
``await judge_agreement(store, collection) -> pairs.JudgeAgreement``
    How often the collection's judge model agreed with people, and the
    weight its pair verdicts get in the rating (`bench/pairs.py`).
``await pick_mergers(store, collection, shape, candidates) -> list[str]``
``await pick_route_member(store, collection, candidates, shape="code", exclude=()) -> list[str]``
    Best first; the route member must take tools.
``await record_seating(store, collection, shape, seated, reason) -> bool``
    A dated `seating_history` row when who sits changed (False: unchanged);
    `seating_reason(rankings, seated, explorers)` words the reason. The
    panel engine writes it after each ask through `panel/history.py`.
``await decisions_report(store, collection) -> dict`` and ``await model_report(store, alias)``
    The reasons, for `GET /bench/decisions` and `benchwarmers model show`.
"""

from __future__ import annotations

import random
import time
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any, Protocol

from sqlalchemy import func, select

from benchwarmers.bench import decider, recent
from benchwarmers.bench.forgetting import FLOOR, RECENT_DAYS, Recalled, age_weight, recall_shapes
from benchwarmers.bench.pairs import JudgeAgreement, PairCounts, agreement, pair_weight
from benchwarmers.bench.rating import MIN_TRIES, Evidence, Ranking, Tally
from benchwarmers.bench.revive import FAILING
from benchwarmers.calls.health import FAILING_AFTER
from benchwarmers.calls.verdicts import collection_name
from benchwarmers.store.changes import Cached
from benchwarmers.store.db import Store
from benchwarmers.store.schema import (
    Call,
    Collection,
    Endpoint,
    LearnedLimit,
    Model,
    PairVerdict,
    Probe,
    SeatingHistory,
    SuiteResult,
    VerdictTally,
)
from benchwarmers.store.times import utc

# Explorer seats' optimistic draws (a draw is a coin, not a secret: `random` is right).
_EXPLORER_DRAWS = random.Random()
# Verdicts on these calls say how useful a model's own answer was.
ANSWER_KINDS = ("seat", "route", "shadow")
HEALTH_WINDOW = timedelta(days=7)
# Answers whose first byte stands in for a missing speed probe: the newest this many.
FIRST_BYTE_SAMPLE = 50
# Explorer rotation counts an untried model's seats on a collection and shape up to this many.
SEAT_COUNT_CAP = 100
# Seat counts are read again this often; seats planned here meanwhile are added as they go.
SEAT_COUNT_TTL = 30.0
# A model on the bench for less than this long is a newcomer: explored first.
NEWCOMER_DAYS = 7
# The recent window's verdicts read one by one, newest first, for the whole bench at most: a
# bench judged more than this in `RECENT_DAYS` counts the rest at the weight of the oldest read.
RECENT_CAP = 2000
NEAR_LIMIT_SHARE = 0.1
SHAPES = ("short", "long", "code", "vision")

# What ranking reads, each for the whole bench, kept until a write to its tables commits in
# this process (`store/changes.py`) or DEFAULT_TTL seconds pass (another process's write):
# ranking runs on every seat-by-record ask, merge and new route conversation, and these
# change far less often than that. What is left per rank is arithmetic over a few rows per
# model, however long the call log.
_FACTS: Cached[dict[str, _Facts]] = Cached(("models", "endpoints"))
# (alias, collection, shape, useful) -> verdicts on answers, from `ix_verdicts_tally` alone.
_TALLIES: Cached[dict[str, list[tuple[str, str, bool, int]]]] = Cached(("verdict_tallies", "models"))
# (alias, collection, shape) -> its verdicts there as forgetting reads them (`bench/forgetting.py`):
# the recent window's one by one (`recent.verdicts`), the older ones as the tallies' rest.
_RECALLED: Cached[dict[tuple[str, str, str], Recalled]] = Cached(
    ("verdict_tallies", "models"), reads=("verdicts",)
)
_SUITE: Cached[dict[str, list[tuple[str, bool]]]] = Cached(("suite_results",))
# Every pair judged per (collection, shape), and each collection's judge agreement (`_Pairs`).
_PAIRS: Cached[_Pairs] = Cached(("pair_verdicts",))
_PROBES: Cached[dict[str, list[Probe]]] = Cached(("probes",))
_LIMITS: Cached[tuple[LearnedLimit, ...]] = Cached(("learned_limits",))
# The newest answers' first bytes move with every call: re-read when the bench changes or
# the time-to-live passes, not per call (a stand-in for a speed probe: seconds of staleness
# are no news to it). It reads the call log all the same, so its reads wait for calls on their way.
_FIRST_BYTES: Cached[dict[str, float]] = Cached(("models",), reads=("calls",))
_SEATED: Cached[dict[tuple[str, str], tuple[str, ...]]] = Cached(("seating_history",))
_EXPLORING: Cached[dict[str, tuple[int, bool]]] = Cached(("collections",))


class _SeatCounts:
    """(database, collection, shape) -> (read at, alias -> (seats, last
    seated)): see `_seat_counts`. Forgotten with the caches."""

    def __init__(self) -> None:
        self.entries: dict[tuple[str, str, str], tuple[float, dict[str, tuple[int, float]]]] = {}

    def forget(self) -> None:
        self.entries.clear()


_SEAT_COUNTS = _SeatCounts()
# `_every_member`'s decisions by their inputs (table, members' held-out reasons): pure, so
# kept without expiry; dropped whole when this many pile up (a held-out reason names a time).
EVERY_MEMBER_KEPT = 1024
_EVERY_MEMBER: dict[tuple[decider.Table, tuple[str, ...]], decider.Decision] = {}
RANKING_CACHES = (
    _FACTS,
    _TALLIES,
    _RECALLED,
    _SUITE,
    _PAIRS,
    _PROBES,
    _LIMITS,
    _FIRST_BYTES,
    _SEATED,
    _EXPLORING,
    _SEAT_COUNTS,
)


async def rank(
    store: Store, collection: str, shape: str, candidates: Sequence[str] | None = None
) -> list[Ranking]:
    name = collection_name(collection)
    now = datetime.now(UTC)
    models = await _models(store, candidates)
    evidence = await _evidence(store, name, shape, models, now)
    seated, explores = await _seating(store, name, shape)
    free_only = (await _collections(store)).get(name, (0, False))[1]
    table = decider.Table(members=tuple(models), explorer_seats=int(explores), seated=seated)
    return decider.rankings(
        table,
        [
            decider.Candidate(
                a, evidence[a], True, _held_out(models[a], shape, now) or _went_paid(models[a], free_only)
            )
            for a in models
        ],
        await _pairs(store, name, shape, now),
    )


async def rank_aliases(store: Store, collection: str, shape: str, aliases: list[str]) -> list[str]:
    return [r.alias for r in await rank(store, collection, shape, aliases)]


class SeatingSettings(Protocol):
    """What seating reads of a collection (a `registry.CollectionView` has it)."""

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
    reasons are known, an ask is a dictionary lookup. The tests prove it
    seats as `decide` on `seat_state` does (tests/bench/test_decisions.py)."""
    rows = await _FACTS.get(store, lambda: _load_facts(store))
    members = tuple(a for a in collection.members if a in rows)
    if 0 < collection.seats < len(members):  # capped: the record decides
        return None
    now = datetime.now(UTC)
    seated, _ = await _seating(store, collection.name, shape)
    table = decider.Table(
        members=members,
        seats=collection.seats,
        explorer_seats=collection.explorer_seats,
        promotion=collection.promotion,
        seated=seated,
    )
    aliases = tuple(dict.fromkeys(members))
    held_out = tuple(
        _held_out(rows[a], shape, now) or _went_paid(rows[a], collection.free_only) for a in aliases
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
    bench = await _models(store, None)
    members = [a for a in collection.members if a in bench]
    seated, _ = await _seating(store, name, shape)
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
        evidence = await _evidence(store, name, shape, models, now)
        pairs = await _pairs(store, name, shape, now)
    else:
        # Every member that may sit sits, in member order: the record decides nothing here,
        # so it is not read (most panels: the ask's hot path).
        evidence = {a: Evidence(a) for a in models}
    untried = [a for a in models if (evidence[a].judged or 0) < MIN_TRIES]
    seen = await _seat_counts(store, name, shape, untried) if collection.explorer_seats > 0 else {}
    newcomer_since = now - timedelta(days=NEWCOMER_DAYS)
    candidates = []
    for alias, model in models.items():
        seats, last = seen.get(alias, (0, 0.0))
        candidates.append(
            decider.Candidate(
                alias,
                evidence[alias],
                member=alias in members,
                held_out=_held_out(model, shape, now) or _went_paid(model, collection.free_only),
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


async def _pairs(store: Store, collection: str, shape: str, now: datetime) -> PairCounts | None:
    """The pairs judged on this collection and shape, each weighed by its age
    in whole days as verdicts are (`forgetting.age_weight`) and by who judged
    (`pairs.pair_weight`: a judge model's by its agreement with people here);
    None when there are none."""
    loaded = await _PAIRS.get(store, lambda: _load_pairs(store))
    rows = loaded.rows.get((collection, shape))
    if not rows:
        return None
    judge = loaded.agreement.get(collection, JudgeAgreement())
    pairs = PairCounts()
    for better, worse, outcome, at, kind, person_too in rows:
        weight = pair_weight(kind, judge, person_too=person_too)
        pairs.add(better, worse, outcome, age_weight(float((now - at).days)) * weight)
    return pairs


async def judge_agreement(store: Store, collection: str) -> JudgeAgreement:
    """How often the collection's judge model agreed with people, and the
    weight that earns its verdicts (`bench/pairs.py`)."""
    loaded = await _PAIRS.get(store, lambda: _load_pairs(store))
    return loaded.agreement.get(collection_name(collection), JudgeAgreement())


@dataclass(frozen=True, slots=True)
class _Pairs:
    """Every pair judged, per (collection, shape): (better, worse, outcome,
    when, who judged, whether a person judged the same pair too), oldest
    first; and per collection its judge's agreement."""

    rows: dict[tuple[str, str], list[tuple[str, str, str, datetime, str, bool]]]
    agreement: dict[str, JudgeAgreement]


async def _load_pairs(store: Store) -> _Pairs:
    """Every pair judged (`calls/pairs.py` writes them), per collection and shape."""
    out: dict[tuple[str, str], list[tuple[str, str, str, datetime, str, bool]]] = defaultdict(list)
    # collection -> kind -> (ask, pair, outcome, better call)
    judged: dict[str, dict[str, list[tuple[str, str, str, str]]]] = defaultdict(lambda: defaultdict(list))
    async with store.read() as session:
        rows = await session.execute(
            select(
                PairVerdict.collection,
                PairVerdict.shape,
                PairVerdict.better_alias,
                PairVerdict.worse_alias,
                PairVerdict.outcome,
                PairVerdict.at,
                PairVerdict.kind,
                PairVerdict.ask_id,
                PairVerdict.pair_key,
                PairVerdict.better_call,
            ).order_by(PairVerdict.at, PairVerdict.id)
        )
        listed = rows.all()
    people = {key for _, _, _, _, _, _, kind, _, key, _ in listed if kind == "person"}
    for coll, shp, better, worse, outcome, at, kind, ask, key, better_call in listed:
        out[coll, shp].append((better, worse, outcome, utc(at), kind, kind != "person" and key in people))
        judged[coll][kind].append((ask, key, outcome, better_call if outcome == "better" else ""))
    agreed = {
        coll: agreement(kinds.get("person", ()), kinds["judge"])
        for coll, kinds in judged.items()
        if "judge" in kinds
    }
    return _Pairs(dict(out), agreed)


def note_seated(store: Store, collection: str, shape: str, aliases: Sequence[str]) -> None:
    """Count seats planned in this process until the seat counts are read
    again, so explorer seats rotate between reads."""
    entry = _SEAT_COUNTS.entries.get((store.database_key, collection_name(collection), shape))
    if entry is None:
        return
    now = time.time()
    counts = entry[1]
    for alias in aliases:
        if alias in counts or len(counts) < 10_000:
            seats, _ = counts.get(alias, (0, 0.0))
            counts[alias] = (seats + 1, now)


async def pick_explorers(
    store: Store, collection: str, shape: str, n: int, exclude: Sequence[str] = ()
) -> list[str]:
    """The first `n` explorers in line for this collection and shape."""
    if n <= 0:
        return []
    name = collection_name(collection)
    explorer_seats, free_only = (await _collections(store)).get(name, (0, False))
    # Who is next in line, even on a collection with no explorer seat; `exclude` sit by record.
    settings = Seating(name, tuple(exclude), 0, max(explorer_seats, 1), free_only, "never")
    decision = await seat_plan(store, settings, shape, spares=max(n - settings.explorer_seats, 0))
    return list(decision.explorers[:n])


async def pick_mergers(store: Store, collection: str, shape: str, candidates: Sequence[str]) -> list[str]:
    """Best record on this shape first; only those eligible now."""
    return [r.alias for r in await rank(store, collection, shape, candidates) if r.eligible]


async def pick_route_member(
    store: Store, collection: str, candidates: Sequence[str], shape: str = "code", exclude: Sequence[str] = ()
) -> list[str]:
    """The failover order for a route conversation: eligible members that
    take tools, best first; the first drives."""
    models = await _models(store, candidates)
    tool_takers = [a for a in models if models[a].tools and a not in exclude]
    return [r.alias for r in await rank(store, collection, shape, tool_takers) if r.eligible]


async def record_seating(
    store: Store, collection: str, shape: str, seated: Sequence[str], reason: str
) -> bool:
    name = collection_name(collection)
    async with store.write() as session:
        last = await session.scalar(
            select(SeatingHistory)
            .where(SeatingHistory.collection == name, SeatingHistory.shape == shape)
            .order_by(SeatingHistory.id.desc())
            .limit(1)
        )
        if last is not None and list(last.seated) == list(seated):
            return False
        session.add(
            SeatingHistory(
                collection=name, shape=shape, at=datetime.now(UTC), seated=list(seated), reason=reason
            )
        )
        return True


def seating_reason(rankings: Sequence[Ranking], seated: Sequence[str], explorers: Sequence[str] = ()) -> str:
    """One line saying why these sit: each record seat's score and interval,
    and which seats are explorers."""
    by_alias = {r.alias: r for r in rankings}
    parts = []
    for alias in seated:
        r = by_alias.get(alias)
        if alias in explorers:
            parts.append(f"{alias} (explorer: few verdicts here, or it may be among the best)")
        elif r is not None:
            parts.append(f"{alias} score {r.score:.2f}, usefulness {r.interval[0]:.0%}-{r.interval[1]:.0%}")
        else:
            parts.append(f"{alias} (member)")
    return "; ".join(parts)


async def _seating(store: Store, collection: str, shape: str) -> tuple[tuple[str, ...], bool]:
    """Who sits on this collection and shape now (its newest seating line),
    and whether it has explorer seats (then they explore, not optimism)."""

    async def load() -> dict[tuple[str, str], tuple[str, ...]]:
        newest = (
            select(func.max(SeatingHistory.id))
            .group_by(SeatingHistory.collection, SeatingHistory.shape)
            .scalar_subquery()
        )
        async with store.read() as session:
            rows = await session.execute(
                select(SeatingHistory.collection, SeatingHistory.shape, SeatingHistory.seated).where(
                    SeatingHistory.id.in_(newest)
                )
            )
            return {(coll, shp): tuple(seated or ()) for coll, shp, seated in rows}

    seated = (await _SEATED.get(store, load)).get((collection, shape), ())
    return seated, bool((await _collections(store)).get(collection, (0, False))[0])


async def _collections(store: Store) -> dict[str, tuple[int, bool]]:
    """name -> (explorer seats, free only)."""

    async def load() -> dict[str, tuple[int, bool]]:
        async with store.read() as session:
            rows = await session.execute(
                select(Collection.name, Collection.explorer_seats, Collection.free_only)
            )
            return {name: (explorers or 0, bool(free)) for name, explorers, free in rows}

    return await _EXPLORING.get(store, load)


async def seating_history(store: Store, collection: str, limit: int = 50) -> list[dict[str, Any]]:
    async with store.read() as session:
        rows = await session.scalars(
            select(SeatingHistory)
            .where(SeatingHistory.collection == collection_name(collection))
            .order_by(SeatingHistory.id.desc())
            .limit(limit)
        )
        return [
            {
                "at": utc(r.at).isoformat(timespec="seconds"),
                "shape": r.shape,
                "seated": list(r.seated),
                "reason": r.reason,
            }
            for r in rows
        ]


async def decisions_report(
    store: Store, collection: str, candidates: Sequence[str] | None = None, shapes: Sequence[str] = SHAPES
) -> dict[str, Any]:
    """Per shape, every candidate's standing and reasons, plus the dated
    seating history: what `GET /bench/decisions` answers."""
    name = collection_name(collection)
    ranked = {shape: [r.as_dict() for r in await rank(store, name, shape, candidates)] for shape in shapes}
    return {"collection": f"bench/{name}", "shapes": ranked, "history": await seating_history(store, name)}


async def model_report(store: Store, alias: str) -> list[dict[str, Any]]:
    """The model's standing on every collection and shape it has sat on (and
    the shapes of its suite tasks where it has sat nowhere yet)."""
    async with store.read() as session:
        pairs: set[tuple[str, str]] = set(
            (
                await session.execute(
                    select(Call.collection, Call.shape).where(Call.alias == alias, Call.collection != "")
                )
            ).all()
        )
        suite_shapes = set(
            (await session.scalars(select(SuiteResult.shape).where(SuiteResult.alias == alias))).all()
        )
    if not pairs:
        pairs = {("", shape) for shape in suite_shapes or {"short"}}
    out = []
    for coll, shape in sorted(pairs):
        (ranking,) = await rank(store, coll, shape, [alias])
        out.append({"collection": f"bench/{coll}" if coll else "(any)", "shape": shape, **ranking.as_dict()})
    return out


# ------------------------------------------------------------------ evidence


@dataclass(frozen=True, slots=True)
class _Facts:
    """What deciding reads of a bench entry."""

    alias: str
    endpoint: str
    served: str
    role: str
    status: str
    ad_hoc: bool
    vision: bool
    tools: bool
    price_in: float | None
    price_out: float | None
    resting_until: datetime | None
    unreachable: bool  # the endpoint's last call could not connect (`calls/reach.py`)
    failures: int  # calls in a row that failed (`calls/health.py`)
    failing_since: datetime | None
    created_at: datetime
    went_paid_at: datetime | None = None  # free before, priced by the catalog since (store/prices.py)

    @property
    def priced(self) -> bool:
        """Costs something (an unknown price is not taken for one)."""
        return bool(self.price_in) or bool(self.price_out)


async def _models(store: Store, candidates: Sequence[str] | None) -> dict[str, _Facts]:
    rows = await _FACTS.get(store, lambda: _load_facts(store))
    order = list(candidates) if candidates is not None else sorted(rows)
    return {a: rows[a] for a in dict.fromkeys(order) if a in rows}


async def _load_facts(store: Store) -> dict[str, _Facts]:
    """The columns deciding reads, not whole models: loading 200 ORM models
    (every column, the session's identity map) was most of a refresh."""
    async with store.read() as session:
        query = select(
            Model.alias,
            Endpoint.name,
            Model.served,
            Model.role,
            Model.status,
            Model.ad_hoc,
            Model.vision,
            Model.tools,
            Model.price_in,
            Model.price_out,
            Model.resting_until,
            Endpoint.unreachable_since,
            Model.failures,
            Model.failing_since,
            Model.created_at,
            Model.went_paid_at,
        ).join(Endpoint, Endpoint.id == Model.endpoint_id)
        rows: list[tuple[Any, ...]] = [tuple(row) for row in (await session.execute(query)).all()]
    # In `_Facts`' order: the first eleven as read, then whether the endpoint is unreachable.
    return {
        r[0]: _Facts(
            r[0],
            r[1],
            r[2],
            r[3],
            r[4],
            r[5],
            r[6],
            r[7],
            r[8],
            r[9],
            r[10],
            r[11] is not None,
            r[12] or 0,
            r[13],
            r[14],
            None if r[15] is None else utc(r[15]),
        )
        for r in rows
    }


async def _evidence(
    store: Store, collection: str, shape: str, models: dict[str, _Facts], now: datetime
) -> dict[str, Evidence]:
    aliases = list(models)
    here: dict[str, Tally] = defaultdict(Tally)
    same: dict[str, Tally] = defaultdict(Tally)
    by_shape: dict[str, dict[str, Tally]] = defaultdict(lambda: defaultdict(Tally))
    elsewhere: dict[str, Tally] = defaultdict(Tally)
    suite_shape: dict[str, Tally] = defaultdict(Tally)
    suite_other: dict[str, Tally] = defaultdict(Tally)
    tallies, recalled, suite, probes, first_bytes, limits = (
        await _TALLIES.get(store, lambda: _load_tallies(store)),
        await _RECALLED.get(store, lambda: _load_recalled(store)),
        await _SUITE.get(store, lambda: _load_suite(store)),
        await _PROBES.get(store, lambda: _load_probes(store)),
        await _FIRST_BYTES.get(store, lambda: _load_first_bytes(store)),
        await _LIMITS.get(store, lambda: _load_limits(store)),
    )
    for alias in aliases:
        for coll, shp, useful, count in tallies.get(alias, ()):
            one = Tally(float(count), 0.0) if useful else Tally(0.0, float(count))
            if coll == collection and shp == shape:
                here[alias] += one
            elif coll == collection:
                same[alias] += one
                by_shape[alias][shp] += one
            elif shp == shape:
                elsewhere[alias] += one
        for task_shape, passed in suite.get(alias, ()):
            one = Tally(1.0, 0.0) if passed else Tally(0.0, 1.0)
            if task_shape == shape:
                suite_shape[alias] += one
            else:
                suite_other[alias] += one
    # (endpoint, served) near a limit; served "" when the endpoint's limits are per key.
    near = {(lim.endpoint, lim.served) for lim in limits if _near(lim, now)}
    out = {}
    none = Tally()
    for alias in aliases:
        model = models[alias]
        probe_count = probe_failures = 0
        probe_checks = none
        first_byte, tokens_per_second = first_bytes.get(alias), None
        mine = probes.get(alias)
        if mine:  # most of a large bench has none lately: nothing to sift
            # A rate-limited probe says the model rests, not whether it answers.
            recent = [p for p in mine if utc(p.at) >= now - HEALTH_WINDOW]
            health = [p for p in recent if p.kind in ("daily", "onboard", "confirm") and not p.limited]
            speed = [p for p in recent if p.kind == "speed"]
            checks = [p for p in health if p.kind == "onboard" and p.answered]
            probe_count, probe_failures = len(health), sum(not p.answered for p in health)
            probe_checks = Tally(float(sum(p.ok for p in checks)), float(sum(not p.ok for p in checks)))
            first_byte = _median([p.first_byte_seconds for p in speed]) or first_byte
            tokens_per_second = _median([p.tokens_per_second for p in speed])
        remembered = recalled.get((alias, collection, shape))
        judged_here = here.get(alias, none)
        out[alias] = Evidence(
            alias,
            here=remembered.tally if remembered else judged_here,
            changed=remembered.changed if remembered else "",
            judged=int(judged_here.total),
            same_collection=same.get(alias, none),
            other_shapes=tuple(by_shape[alias].values()) if alias in by_shape else (),
            elsewhere=elsewhere.get(alias, none),
            suite_shape=suite_shape.get(alias, none),
            suite_other=suite_other.get(alias, none),
            probes=probe_count,
            probe_failures=probe_failures,
            probe_checks=probe_checks,
            first_byte_seconds=first_byte,
            tokens_per_second=tokens_per_second,
            price_per_mtok=model.price_out,
            near_limit=(model.endpoint, "") in near or (model.endpoint, model.served) in near,
        )
    return out


async def _load_tallies(store: Store) -> dict[str, list[tuple[str, str, bool, int]]]:
    """Verdicts on answers per bench model, collection, shape and usefulness:
    the counts `verdict_tallies` keeps as verdicts are written, a row per
    group however many verdicts there are, for the models on the bench now
    (not those long gone)."""
    aliases = list(await _models(store, None))
    out: dict[str, list[tuple[str, str, bool, int]]] = defaultdict(list)
    async with store.read() as session:
        rows = await session.execute(
            select(
                VerdictTally.alias,
                VerdictTally.collection,
                VerdictTally.shape,
                VerdictTally.useful,
                VerdictTally.count,
            ).where(
                VerdictTally.alias.in_(aliases), VerdictTally.kind.in_(ANSWER_KINDS), VerdictTally.count > 0
            )
        )
        for alias, coll, shp, useful, count in rows:
            out[alias].append((coll, shp, bool(useful), int(count)))
    return dict(out)


async def _load_recalled(store: Store) -> dict[tuple[str, str, str], Recalled]:
    """Per alias, collection and shape with verdicts in the recent window,
    what forgetting makes of them: the window's verdicts one by one (ages
    in whole days, so a day's rankings reuse their arithmetic), the rest of
    the tallies as older ones."""
    tallies = await _TALLIES.get(store, lambda: _load_tallies(store))
    aliases = list(await _models(store, None))
    now = datetime.now(UTC)
    window: dict[tuple[str, str, str], list[tuple[float, bool]]] = defaultdict(list)
    async with store.read() as session:
        rows = await recent.verdicts(
            session, aliases, ANSWER_KINDS, now - timedelta(days=RECENT_DAYS), RECENT_CAP
        )
    oldest = 0.0
    for alias, coll, shp, useful, at in rows:
        oldest = float((now - utc(at)).days)
        window[alias, coll, shp].append((oldest, useful))
    read = sum(len(r) for r in window.values())
    older_weight = age_weight(oldest) if read >= RECENT_CAP else FLOOR
    # A model's shapes in one collection are read together: the detector looks at them at once too.
    grouped: dict[tuple[str, str], dict[str, tuple[Tally, list[tuple[float, bool]]]]] = defaultdict(dict)
    for (alias, coll, shp), rows_here in sorted(window.items(), key=lambda item: _shape_rank(item[0][2])):
        total = Tally()
        for c, s, useful, count in tallies.get(alias, ()):
            if c == coll and s == shp:
                total += Tally(float(count), 0.0) if useful else Tally(0.0, float(count))
        good = sum(useful for _, useful in rows_here)
        older = Tally(max(total.good - good, 0.0), max(total.bad - (len(rows_here) - good), 0.0))
        grouped[alias, coll][shp] = (older, rows_here)
    return {
        (alias, coll, shp): remembered
        for (alias, coll), shapes in grouped.items()
        for shp, remembered in recall_shapes(shapes, older_weight).items()
    }


def _shape_rank(shape: str) -> int:
    """Where a shape comes in `SHAPES` (unknown ones last): the order the
    simulation gives a model's shapes to `recall_shapes` too."""
    return SHAPES.index(shape) if shape in SHAPES else len(SHAPES)


async def _seat_counts(
    store: Store, collection: str, shape: str, aliases: Sequence[str]
) -> dict[str, tuple[int, float]]:
    """Seats (up to `SEAT_COUNT_CAP`) and the last one's time of these
    aliases here, read at most every `SEAT_COUNT_TTL` seconds (and for an
    alias not read yet); seats planned here meanwhile are counted by
    `note_seated`. Only the untried need them (`decider`), so a settled bench reads none."""
    key = (store.database_key, collection, shape)
    entry = _SEAT_COUNTS.entries.get(key)
    fresh = entry is not None and time.monotonic() - entry[0] < SEAT_COUNT_TTL
    counts = entry[1] if entry is not None and fresh else {}
    missing = [a for a in aliases if a not in counts]
    if missing or not fresh:
        asked = missing if fresh else list(aliases)
        read = {}
        if asked:
            async with store.read() as session:
                read = await recent.seats(session, collection, shape, asked, SEAT_COUNT_CAP)
        counts = {**counts, **{a: read.get(a, (0, 0.0)) for a in asked}}
        _SEAT_COUNTS.entries[key] = (entry[0] if entry is not None and fresh else time.monotonic(), counts)
    return {a: counts[a] for a in aliases}


async def _load_suite(store: Store) -> dict[str, list[tuple[str, bool]]]:
    """Per alias, the shape and outcome of each suite task's latest result."""
    latest: dict[tuple[str, str], SuiteResult] = {}
    async with store.read() as session:
        for row in (await session.scalars(select(SuiteResult))).all():
            key = (row.alias, row.task)
            if key not in latest or utc(row.at) >= utc(latest[key].at):
                latest[key] = row
    out: dict[str, list[tuple[str, bool]]] = defaultdict(list)
    for row in latest.values():
        out[row.alias].append((row.shape, bool(row.passed)))
    return dict(out)


async def _load_probes(store: Store) -> dict[str, list[Probe]]:
    """Per alias, its probes of the health window, oldest first."""
    out: dict[str, list[Probe]] = defaultdict(list)
    since = datetime.now(UTC) - HEALTH_WINDOW
    async with store.read() as session:
        for probe in (await session.scalars(select(Probe).where(Probe.at >= since).order_by(Probe.at))).all():
            out[probe.alias].append(probe)
    return dict(out)


async def _load_limits(store: Store) -> tuple[LearnedLimit, ...]:
    async with store.read() as session:
        return tuple((await session.scalars(select(LearnedLimit))).all())


async def _load_first_bytes(store: Store) -> dict[str, float]:
    """Without a speed probe yet, the first byte of its recent answers says
    how quick a model is: for every bench model at once."""
    aliases = list(await _models(store, None))
    async with store.read() as session:
        return await recent.first_bytes(
            session, aliases, datetime.now(UTC) - HEALTH_WINDOW, FIRST_BYTE_SAMPLE
        )


def _ineligible(model: _Facts, shape: str, now: datetime) -> str:
    """Why this model cannot be seated by the bench's choice; "" when it can."""
    if model.role == "image":
        return "image model"
    if model.status == "retired":
        return "retired"
    if model.status == "resting" or (model.resting_until is not None and utc(model.resting_until) > now):
        return "resting (rate limited)"
    if model.status in ("unavailable", "onboarding"):
        return model.status
    if model.role == "vision" and shape != "vision":
        return "vision model, seated only for images"
    if shape == "vision" and not (model.vision or model.role == "vision"):
        return "cannot read images"
    return ""


def _held_out(model: _Facts, shape: str, now: datetime) -> str:
    """Why the decider seats this model nowhere now ("" when it may sit):
    `_ineligible`, or its calls failing until a probe answers."""
    why = _ineligible(model, shape, now)
    if why or model.failures < FAILING_AFTER:
        return why
    since = f" since {utc(model.failing_since).isoformat(timespec='seconds')}" if model.failing_since else ""
    return (
        f"{FAILING} its last {model.failures} calls failed (no connection, 5xx or timeout){since}; "
        "held out until a probe answers"
    )


def _went_paid(model: _Facts, free_only: bool) -> str:
    """Why a `free_only` collection seats this model nowhere (no seat, no
    merge, no route turn): it was free, the catalog found it priced, and the
    user has not accepted the price."""
    if not free_only or model.went_paid_at is None:
        return ""
    return (
        f"went paid on {model.went_paid_at.date().isoformat()} (${model.price_in or 0:g} in / "
        f"${model.price_out or 0:g} out per million tokens) and this collection is free only; "
        f"`benchwarmers model set {model.alias} --paid-ok` seats it again"
    )


def _near(lim: LearnedLimit, now: datetime) -> bool:
    if not lim.limit or lim.remaining is None:
        return False
    if lim.resets_at is not None and utc(lim.resets_at) <= now:
        return False
    return lim.remaining / lim.limit < NEAR_LIMIT_SHARE


def _median(values: Sequence[float | None]) -> float | None:
    known = sorted(v for v in values if v is not None)
    return known[len(known) // 2] if known else None
