"""Each bench model's record as the rating reads it (`rating.Evidence`).

Verdicts on its answers (here, elsewhere in the collection, on this shape
elsewhere; the recent window's one by one as forgetting discounts them,
`bench/forgetting.py`), suite results, probes, speed (a speed probe, or
its newest answers' first byte), and whether its endpoint is near a
learned limit. Each read covers the whole bench and is cached as the
bench's facts are (`facts.FACTS`): ranking runs on every seat-by-record
ask, and what is left per rank is arithmetic over a few rows per model,
however long the call log.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Sequence
from datetime import UTC, datetime, timedelta

from sqlalchemy import select

from benchwarmers.bench import recent
from benchwarmers.bench.facts import Facts, facts_of
from benchwarmers.bench.forgetting import FLOOR, RECENT_DAYS, Recalled, age_weight, pair_score, recall_shapes
from benchwarmers.bench.pair_reads import PAIRS, load_pairs
from benchwarmers.bench.rating import Evidence, Tally
from benchwarmers.calls.verdicts import ANSWER_KINDS
from benchwarmers.store.changes import Cached
from benchwarmers.store.db import Store
from benchwarmers.store.schema import LearnedLimit, Probe, SuiteResult, VerdictTally
from benchwarmers.store.times import utc

HEALTH_WINDOW = timedelta(days=7)
# Answers whose first byte stands in for a missing speed probe: the newest this many.
FIRST_BYTE_SAMPLE = 50
# The recent window's verdicts read one by one, newest first, for the whole bench at most: a
# bench judged more than this in `RECENT_DAYS` counts the rest at the weight of the oldest read.
RECENT_CAP = 2000
NEAR_LIMIT_SHARE = 0.1
SHAPES = ("short", "long", "code", "vision")

# Cached as `facts.FACTS` is: until a write to these tables commits here, or the time-to-live.
# (alias, collection, shape, useful) -> verdicts on answers, from `ix_verdicts_tally` alone.
TALLIES: Cached[dict[str, list[tuple[str, str, bool, int]]]] = Cached(("verdict_tallies", "models"))
# (alias, collection, shape) -> its verdicts there as forgetting reads them (`bench/forgetting.py`):
# the recent window's one by one (`recent.verdicts`), the older ones as the tallies' rest.
# The detector reads people's pairs of the window too (how each model fared in them).
RECALLED: Cached[dict[tuple[str, str, str], Recalled]] = Cached(
    ("verdict_tallies", "models", "pair_verdicts"), reads=("verdicts",)
)
SUITE: Cached[dict[str, list[tuple[str, bool]]]] = Cached(("suite_results",))
PROBES: Cached[dict[str, list[Probe]]] = Cached(("probes",))
LIMITS: Cached[tuple[LearnedLimit, ...]] = Cached(("learned_limits",))
# The newest answers' first bytes move with every call: re-read when the bench changes or
# the time-to-live passes, not per call (a stand-in for a speed probe: seconds of staleness
# are no news to it). It reads the call log all the same, so its reads wait for calls on their way.
FIRST_BYTES: Cached[dict[str, float]] = Cached(("models",), reads=("calls",))


async def read_evidence(
    store: Store, collection: str, shape: str, models: dict[str, Facts], now: datetime
) -> dict[str, Evidence]:
    aliases = list(models)
    here: dict[str, Tally] = defaultdict(Tally)
    same: dict[str, Tally] = defaultdict(Tally)
    by_shape: dict[str, dict[str, Tally]] = defaultdict(lambda: defaultdict(Tally))
    elsewhere: dict[str, Tally] = defaultdict(Tally)
    suite_shape: dict[str, Tally] = defaultdict(Tally)
    suite_other: dict[str, Tally] = defaultdict(Tally)
    tallies, recalled, suite, probes, first_bytes, limits = (
        await TALLIES.get(store, lambda: _load_tallies(store)),
        await RECALLED.get(store, lambda: _load_recalled(store)),
        await SUITE.get(store, lambda: _load_suite(store)),
        await PROBES.get(store, lambda: _load_probes(store)),
        await FIRST_BYTES.get(store, lambda: _load_first_bytes(store)),
        await LIMITS.get(store, lambda: _load_limits(store)),
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
            changed_since=remembered.since if remembered else math.inf,
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
    aliases = list(await facts_of(store, None))
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
    tallies = await TALLIES.get(store, lambda: _load_tallies(store))
    aliases = list(await facts_of(store, None))
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
    fared = await _fared(store, now)
    # A model's shapes in one collection are read together: the detector looks at them at once too.
    grouped: dict[tuple[str, str], dict[str, tuple[Tally, list[tuple[float, bool]]]]] = defaultdict(dict)
    keys = sorted({*window, *fared}, key=lambda key: _shape_rank(key[2]))
    for alias, coll, shp in keys:
        rows_here = window.get((alias, coll, shp), [])
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
        for shp, remembered in recall_shapes(
            shapes, older_weight, {s: fared[alias, coll, s] for s in shapes if (alias, coll, s) in fared}
        ).items()
    }


async def _fared(store: Store, now: datetime) -> dict[tuple[str, str, str], list[tuple[float, float]]]:
    """Per alias, collection and shape, how it fared in people's pairs of the
    recent window, newest first: (age in whole days, `forgetting.pair_score`).
    A judge model's pairs are left to the rating, weighed by its agreement."""
    loaded = await PAIRS.get(store, lambda: load_pairs(store))
    out: dict[tuple[str, str, str], list[tuple[float, float]]] = defaultdict(list)
    for (coll, shp), rows in loaded.rows.items():
        for better, worse, outcome, at, kind, _, _ in reversed(rows):
            age = float((now - at).days)
            if age >= RECENT_DAYS:
                break
            if kind != "person":
                continue
            out[better, coll, shp].append((age, pair_score(outcome, True)))
            out[worse, coll, shp].append((age, pair_score(outcome, False)))
    return out


def _shape_rank(shape: str) -> int:
    """Where a shape comes in `SHAPES` (unknown ones last): the order the
    simulation gives a model's shapes to `recall_shapes` too."""
    return SHAPES.index(shape) if shape in SHAPES else len(SHAPES)


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
    aliases = list(await facts_of(store, None))
    async with store.read() as session:
        return await recent.first_bytes(
            session, aliases, datetime.now(UTC) - HEALTH_WINDOW, FIRST_BYTE_SAMPLE
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
