"""Why who sits, kept and shown: the dated seating lines and the reports.

``await record_seating(store, collection, shape, seated, reason) -> bool``
    A dated `seating_history` row when who sits changed (False: unchanged);
    `seating_reason(rankings, seated, explorers)` words the reason. The
    panel engine writes it after each ask through `panel/history.py`.
``await decisions_report(store, collection) -> dict`` and ``await model_report(store, alias)``
    The reasons, for `GET /bench/decisions` and `benchwarmers model show`:
    `decisions.rank`'s standings, so what people read is what seats.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any

from sqlalchemy import select

from benchwarmers.bench.decisions import rank
from benchwarmers.bench.evidence import SHAPES
from benchwarmers.bench.rating import Ranking
from benchwarmers.calls.verdicts import collection_name
from benchwarmers.store.db import Store
from benchwarmers.store.schema import Call, SeatingHistory, SuiteResult
from benchwarmers.store.times import utc


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
