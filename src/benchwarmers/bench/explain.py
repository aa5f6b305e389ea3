"""Why who sits, kept and shown: the dated seating lines and the reports.

``await record_seating(store, collection, shape, seated, reason) -> bool``
    A dated `seating_history` row when who sits changed (False: unchanged);
    `seating_reason(rankings, seated, explorers)` words the reason. The
    panel engine writes it after each ask through `panel/history.py`.
``await decisions_report(store, collection) -> dict`` and ``await model_report(store, alias[, standings])``
    The reasons, for `GET /bench/decisions` and `benchwarmers model show`:
    `decisions.rank`'s standings, so what people read is what seats.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any, TypeAlias

from sqlalchemy import select

from benchwarmers.bench.decisions import rank
from benchwarmers.bench.evidence import SHAPES
from benchwarmers.bench.leaderboard import board_candidates, settled
from benchwarmers.bench.rating import Ranking
from benchwarmers.calls.verdicts import collection_name
from benchwarmers.store.collections import collections_by_name
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


# Each collection and shape's ranks by alias, kept across models' reports.
Standings: TypeAlias = dict[tuple[str, str], dict[str, Ranking]]


async def model_report(store: Store, alias: str, standings: Standings | None = None) -> list[dict[str, Any]]:
    """The model's standing on every collection and shape it has sat on (and
    the shapes of its suite tasks where it has sat nowhere yet).

    Each standing is the model ranked among its collection's members and
    whoever sat there on that shape, as the leaderboard and seating rank it:
    pairs are read against the other side, so a model ranked alone showed a
    figure its pairs had not moved (its words said "preferred 2", its score
    stayed the prior's). `standings` keeps each collection and shape's ranks
    for the next model's report (the Bench page reports every model).
    `settled` is false while the interval is too wide to rank on, as on the
    leaderboard: the pages say "we don't know yet", not a sure-looking 54%."""
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
    memo = standings if standings is not None else {}
    out = []
    for coll, shape in sorted(pairs):
        ranked = memo.get((coll, shape))
        if ranked is None or alias not in ranked:
            ranked = {
                r.alias: r for r in await rank(store, coll, shape, await _rivals(store, coll, shape, alias))
            }
            memo[(coll, shape)] = ranked
        standing = ranked[alias]
        out.append(
            {
                "collection": f"bench/{coll}" if coll else "(any)",
                "shape": shape,
                **standing.as_dict(),
                "settled": settled(standing),  # read as the leaderboard reads it
            }
        )
    return out


async def _rivals(store: Store, collection: str, shape: str, alias: str) -> list[str]:
    """Whom `alias` is ranked among on `collection` and `shape`: the
    leaderboard's candidates (members, then who sat there), and `alias`."""
    if not collection:
        return [alias]
    view = (await collections_by_name(store)).get(collection)
    members = view.members if view else ()
    return list(dict.fromkeys([*await board_candidates(store, collection, members, shape), alias]))
