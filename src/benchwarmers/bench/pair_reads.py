"""The pairs judged on a collection and shape, as the rating weighs them.

Every pair verdict (`calls/pairs.py` writes them) read once for the whole
store and cached as the bench's facts are (`facts.FACTS`); per ask only the
weighing is left: each pair by its age in whole days, as verdicts are, and
by who judged (a judge model's by how often it agreed with people here,
`bench/pairs.py`).

``await judge_agreement(store, collection) -> pairs.JudgeAgreement``
    How often the collection's judge model agreed with people, and the
    weight its pair verdicts get in the rating (the leaderboard shows it).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime

from sqlalchemy import select

from benchwarmers.bench.forgetting import age_weight, pair_discount
from benchwarmers.bench.pairs import JudgeAgreement, PairCounts, agreement, pair_weight
from benchwarmers.calls.verdicts import collection_name
from benchwarmers.store.changes import Cached
from benchwarmers.store.db import Store
from benchwarmers.store.schema import PairVerdict
from benchwarmers.store.times import utc

# Every pair judged per (collection, shape), and each collection's judge agreement (`_Pairs`).
PAIRS: Cached[_Pairs] = Cached(("pair_verdicts",))


async def pair_counts(
    store: Store, collection: str, shape: str, now: datetime, since: Mapping[str, float] | None = None
) -> PairCounts | None:
    """The pairs judged on this collection and shape, each weighed by its age
    in whole days as verdicts are (`forgetting.age_weight`), by who judged
    (`pairs.pair_weight`: a judge model's by its agreement with people here),
    and, for a model the change detector flagged (`since`: alias -> the age
    in days its change began, `Evidence.changed_since`), less when judged
    before its change (`forgetting.pair_discount`); None when there are none."""
    loaded = await PAIRS.get(store, lambda: load_pairs(store))
    rows = loaded.rows.get((collection, shape))
    if not rows:
        return None
    judge = loaded.agreement.get(collection, JudgeAgreement())
    pairs = PairCounts()
    for better, worse, outcome, at, kind, person_too, ask in rows:
        weight = pair_weight(kind, judge, person_too=person_too)
        age = float((now - at).days)
        keep = pair_discount(since, better, worse, age) if since else 1.0
        pairs.add(better, worse, outcome, age_weight(age) * weight * keep, ask if kind == "person" else None)
    return pairs


async def judge_agreement(store: Store, collection: str) -> JudgeAgreement:
    """How often the collection's judge model agreed with people, and the
    weight that earns its verdicts (`bench/pairs.py`)."""
    loaded = await PAIRS.get(store, lambda: load_pairs(store))
    return loaded.agreement.get(collection_name(collection), JudgeAgreement())


@dataclass(frozen=True, slots=True)
class _Pairs:
    """Every pair judged, per (collection, shape): (better, worse, outcome,
    when, who judged, whether a person judged the same pair too, its ask),
    oldest first; and per collection its judge's agreement."""

    rows: dict[tuple[str, str], list[tuple[str, str, str, datetime, str, bool, str]]]
    agreement: dict[str, JudgeAgreement]


async def load_pairs(store: Store) -> _Pairs:
    """Every pair judged (`calls/pairs.py` writes them), per collection and shape."""
    out: dict[tuple[str, str], list[tuple[str, str, str, datetime, str, bool, str]]] = defaultdict(list)
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
        person_too = kind != "person" and key in people
        out[coll, shp].append((better, worse, outcome, utc(at), kind, person_too, ask))
        judged[coll][kind].append((ask, key, outcome, better_call if outcome == "better" else ""))
    agreed = {
        coll: agreement(kinds.get("person", ()), kinds["judge"])
        for coll, kinds in judged.items()
        if "judge" in kinds
    }
    return _Pairs(dict(out), agreed)
