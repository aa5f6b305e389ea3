"""One collection's leaderboard for one kind of question (CONTRACTS §5):
what the Leaderboard page and `leaderboard` JSON read.

Every figure comes from what deciding already keeps, so the board and the
next panel cannot disagree: each model's standing is `decisions.rank`'s
posterior (its mean as the score, its 90% interval as `low`/`high`), the
verdicts and pairs are counted from their own tables, the suite is the
latest run of each task, and the next panel is the ranked members up to
the collection's seats, with the explorers and the reasons the rating
writes. A standing is `settled: false` ("we don't know yet") when its
interval is wider than `SETTLED_WIDTH`, too wide to rank on, or when the
model was judged here fewer than `SETTLED_JUDGED` times, however narrow
its interval: what the other models' records pool into its prior narrows
it before anyone judged it (`settled`). Such a model is ranked after
every settled one, by its best estimate (`board_order`).

People's verdicts (on the answers the rating reads: seats, route turns)
and pairs are what the counts and the trend show; a judge model's pairs
(kind "judge", `panel/judge.py`) are counted apart, with how often the
judge agreed with people and the weight that earns it in the rating
(`judge`: "judge agreement 7/10, weight 0.08").

The trend is the same kind of estimate day by day: at the end of each day,
the share of good outcomes so far (useful verdicts, pairs won, half of each
tie) under a uniform prior, `(1 + good) / (2 + judged)`, each weighed as the
rating weighed it that day (by age, and a tenth before a change the
detector saw), so a model that got worse has a trend that falls with it.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Sequence
from datetime import UTC, date, datetime, timedelta
from typing import Any

from sqlalchemy import func, select

from benchwarmers.bench import decisions
from benchwarmers.bench.evidence import SHAPES
from benchwarmers.bench.forgetting import CHANGE_KEEP, RECENT_DAYS, age_weight, pair_score, recall_shapes
from benchwarmers.bench.pair_reads import judge_agreement
from benchwarmers.bench.pairs import JudgeAgreement
from benchwarmers.bench.rating import Ranking, Tally
from benchwarmers.bench.suite.runner import suite_summary
from benchwarmers.calls.pairs import PairOutcome, pair_outcomes
from benchwarmers.calls.verdicts import ANSWER_KINDS
from benchwarmers.errors import UserError
from benchwarmers.runtime import Runtime
from benchwarmers.store import changes
from benchwarmers.store.db import Store
from benchwarmers.store.models import list_models
from benchwarmers.store.schema import Call, Verdict
from benchwarmers.store.times import utc
from benchwarmers.store.views import CollectionView

SETTLED_WIDTH = 0.3  # a 90% interval wider than this ranks nothing yet
# Nor does a record of fewer verdicts and pairs (weighted) here than this: a model with two pair
# wins and nothing else read "92% (71-100%)", its interval narrowed by the pooled prior.
SETTLED_JUDGED = 5.0
TREND_DAYS = 30  # the trend's last days shown


async def leaderboard(runtime: Runtime, collection: CollectionView, shape: str = "") -> dict[str, Any]:
    """The board of `collection` for `shape` (by default the kind judged most).

    Its standings read the verdicts and pairs as they are now
    (`changes.current`), as its counts do: a pair given through another
    worker or replica a moment before showed in the pairs and the matrix
    beside a score from before it, for up to the cached reads' two seconds."""
    with changes.current(*decisions.JUDGEMENT_CACHES):
        return await _board(runtime, collection, shape)


async def _board(runtime: Runtime, collection: CollectionView, shape: str) -> dict[str, Any]:
    store = runtime.store
    name = collection.name
    if shape and shape not in SHAPES:
        raise UserError(f"shape {shape!r} is not known; shapes: {', '.join(SHAPES)}", field="shape")
    async with store.read() as session:
        asked = dict(
            (
                await session.execute(
                    select(Call.shape, func.count())
                    .where(Call.collection == name, Call.kind == "seat")
                    .group_by(Call.shape)
                )
            ).all()
        )
    shapes = [s for s in SHAPES if s in asked]
    shape = shape or max(shapes, key=lambda s: asked[s], default=SHAPES[0])
    async with store.read() as session:
        verdict_rows = (
            await session.execute(
                # The verdicts the rating reads (a route turn's too), not only the seats': a
                # collection judged in route mode showed a moved score with nothing behind it.
                select(Verdict.alias, Verdict.useful, Verdict.at).where(
                    Verdict.collection == name, Verdict.shape == shape, Verdict.kind.in_(ANSWER_KINDS)
                )
            )
        ).all()
    judged = [p for p in await pair_outcomes(store, name) if p.shape == shape]
    pairs = [p for p in judged if p.kind == "person"]
    judge = await judge_agreement(store, name)
    candidates = await board_candidates(store, name, collection.members, shape)
    ranked = await decisions.rank(store, name, shape, candidates)
    status = {m.alias: m.status for m in await list_models(store)}
    verdicts: dict[str, Counter[str]] = defaultdict(Counter)
    for alias, useful, _ in verdict_rows:
        verdicts[alias]["useful" if useful else "notUseful"] += 1
    record, matrix = _pair_record(pairs)
    models = []
    for position, standing in board_order(ranked):
        alias = standing.alias
        low, high = standing.interval
        suite = (await suite_summary(runtime, alias)).get(shape, {})
        models.append(
            {
                "alias": alias,
                "rank": position,
                "member": alias in collection.members,
                "score": round(standing.mean, 4),
                "low": round(low, 4),
                "high": round(high, 4),
                "settled": settled(standing),
                "verdicts": {"useful": verdicts[alias]["useful"], "notUseful": verdicts[alias]["notUseful"]},
                "pairs": record[alias],
                "suite": {"passed": suite.get("passed", 0), "total": suite.get("total", 0)},
                "trend": _trend(alias, verdict_rows, pairs),
                "changed": changed(standing),
                "status": status.get(alias, ""),
            }
        )
    return {
        "collection": f"bench/{name}",
        "shape": shape,
        "shapes": shapes,
        "models": models,
        "matrix": matrix,
        "bothBad": _both_bad(pairs),
        "judge": {
            **judge.as_json(),
            "on": collection.judge_verdicts,
            "verdicts": sum(p.kind == "judge" for p in judged),
            "summary": judge_summary(judge),
        },
        "nextPanel": await _next_panel(runtime, collection, shape, ranked),
    }


def board_order(ranked: Sequence[Ranking]) -> list[tuple[int, Ranking]]:
    """The board's rows and their ranks: the settled standings best first,
    then those we don't know yet, best estimate first, ranked after every
    settled one (`ranks` within each part). A model judged once, or never,
    on a prior pooled from the others' records read "rank 2" among models
    judged thirty times, above the ones it was no better known than: a
    place the hatched band beside it said nobody could give it yet."""
    known = sorted((r for r in ranked if settled(r)), key=lambda r: -r.mean)
    unknown = sorted((r for r in ranked if not settled(r)), key=lambda r: -r.mean)
    places = [*ranks([r.mean for r in known]), *(len(known) + p for p in ranks([r.mean for r in unknown]))]
    return list(zip(places, [*known, *unknown], strict=True))


def ranks(scores: Sequence[float]) -> list[int]:
    """Each score's rank, best first (`scores` sorted high to low): equal
    scores (as the board shows them) share a rank, the next after them
    counts them all (1, 1, 3). Two models judged alike are not "1, 2" by
    the order they were named in."""
    shown = [round(score, 4) for score in scores]
    return [1 + sum(other > score for other in shown) for score in shown]


def settled(standing: Ranking) -> bool:
    """Whether a standing ranks anything yet (the board's and the model
    pages' `settled`; else "we don't know yet"): a narrow enough interval,
    from enough of the model's own verdicts and pairs here."""
    low, high = standing.interval
    return high - low <= SETTLED_WIDTH and standing.judged + standing.compared >= SETTLED_JUDGED


def changed(standing: Ranking) -> str:
    """What the change detector saw of this model here (`forgetting`: "changed: 2 of its last
    16 verdicts useful against 85% before; ..."), "" when nothing: said on its row, whether
    or not it is a member the next panel's reasons name."""
    return next((reason for reason in standing.reasons if reason.startswith("changed")), "")


async def board_candidates(store: Store, collection: str, members: Sequence[str], shape: str) -> list[str]:
    """Whom a board of `collection` on `shape` ranks: its `members`, then
    whoever sat there (a model that left the collection keeps its record);
    the model pages rank a model among the same (`explain.model_report`)."""
    async with store.read() as session:
        sat = await session.scalars(
            select(Call.alias)
            .distinct()
            .where(Call.collection == collection, Call.shape == shape, Call.kind == "seat")
        )
        return list(dict.fromkeys([*members, *sorted(sat)]))


def judge_summary(judge: JudgeAgreement) -> str:
    """One line: "judge agreement 7/10, weight 0.08"."""
    return f"judge agreement {judge.agreed:g}/{judge.compared}, weight {judge.weight:.2f}"


def _pair_record(pairs: Sequence[PairOutcome]) -> tuple[dict[str, dict[str, int]], dict[str, Any]]:
    """Per model its wins, losses, ties and both-bad pairs; per two models who beat whom."""
    record: dict[str, dict[str, int]] = defaultdict(lambda: {"wins": 0, "losses": 0, "ties": 0, "bothBad": 0})
    matrix: dict[str, dict[str, dict[str, int]]] = defaultdict(dict)

    def cell(a: str, b: str) -> dict[str, int]:
        return matrix[a].setdefault(b, {"wins": 0, "losses": 0, "ties": 0})

    for pair in pairs:
        a, b = pair.better_alias, pair.worse_alias
        if pair.outcome == "better":
            record[a]["wins"] += 1
            record[b]["losses"] += 1
            cell(a, b)["wins"] += 1
            cell(b, a)["losses"] += 1
        elif pair.outcome == "tie":
            for x, y in ((a, b), (b, a)):
                record[x]["ties"] += 1
                cell(x, y)["ties"] += 1
        else:
            record[a]["bothBad"] += 1
            record[b]["bothBad"] += 1
    return record, dict(matrix)


def _both_bad(pairs: Sequence[PairOutcome]) -> dict[str, dict[str, int]]:
    """Per two models how often both answers were judged bad: the matrix
    counts who beat whom, which says nothing of these, but they met."""
    met: dict[str, dict[str, int]] = defaultdict(dict)
    for pair in pairs:
        if pair.outcome == "both_bad":
            a, b = pair.better_alias, pair.worse_alias
            met[a][b] = met[a].get(b, 0) + 1
            met[b][a] = met[b].get(a, 0) + 1
    return dict(met)


def _trend(alias: str, verdict_rows: Sequence[Any], pairs: Sequence[PairOutcome]) -> list[dict[str, Any]]:
    """The estimate as it stood at the end of each day with a judgement (the
    last `TREND_DAYS` of them), forgotten as the rating forgets
    (`_estimate_at`): a model that got worse falls to where its score is,
    not an all-time share that barely moves after weeks of good verdicts."""
    mine = sorted(((utc(at), bool(useful)) for who, useful, at in verdict_rows if who == alias), reverse=True)
    fared = sorted(
        (
            (p.at, pair_score(p.outcome, p.better_alias == alias))
            for p in pairs
            if alias in (p.better_alias, p.worse_alias)
        ),
        reverse=True,
    )
    days = sorted({at.date() for at, _ in mine} | {at.date() for at, _ in fared})[-TREND_DAYS:]
    return [{"day": day.isoformat(), "score": round(_estimate_at(day, mine, fared), 4)} for day in days]


def _estimate_at(
    day: date, mine: Sequence[tuple[datetime, bool]], fared: Sequence[tuple[datetime, float]]
) -> float:
    """`(1 + good) / (2 + judged)` at the end of `day` (`mine`: the verdicts,
    `fared`: how the model fared in pairs; newest first): each verdict and pair
    (1 won, 0.5 a tie, 0 lost or both bad) weighed by its age in whole days
    then (`forgetting.age_weight`), and what came before a change the
    detector sees then counts a tenth (`forgetting.recall_shapes`)."""
    end = datetime.combine(day + timedelta(days=1), datetime.min.time(), UTC)
    older = Tally()
    recent: list[tuple[float, bool]] = []  # newest first, as `recall` reads them
    for at, useful in mine:
        if at >= end:
            continue
        age = float((end - at).days)
        if age < RECENT_DAYS:
            recent.append((age, useful))
        else:
            older += Tally(1.0, 0.0) if useful else Tally(0.0, 1.0)
    paired = [(float((end - at).days), score) for at, score in fared if at < end]
    recalled = recall_shapes({"": (older, recent)}, pairs={"": [p for p in paired if p[0] < RECENT_DAYS]})[""]
    good, judged = recalled.tally.good, recalled.tally.total
    for age, score in paired:
        weight = age_weight(age) * (CHANGE_KEEP if age > recalled.since else 1.0)
        good, judged = good + weight * score, judged + weight
    return (1 + good) / (2 + judged)


async def _next_panel(
    runtime: Runtime, collection: CollectionView, shape: str, ranked: Sequence[Any]
) -> dict[str, Any]:
    """Who the record seats next (the eligible members best first, up to the
    collection's seats), who explores, and why: the rating's own reasons.
    Only the record seats are kept from exploring: a member the seat cap
    leaves out may take an explorer seat, as the asks' seating gives it
    (`bench/decider.py`, explorer seats)."""
    members = [r for r in ranked if r.alias in collection.members]
    eligible = [r for r in members if r.eligible]
    seated = eligible[: collection.seats] if collection.seats else eligible
    in_line = await decisions.explorers_in_line(
        runtime.store, collection.name, shape, collection.explorer_seats, exclude=[r.alias for r in seated]
    )
    explorers = [alias for alias, _ in in_line]
    reasons = [f"{r.alias} sits: {'; '.join(r.reasons) or 'a member'}" for r in seated]
    reasons += [
        f"{r.alias} waits: {'; '.join(r.reasons) or 'the seats are full'}"
        for r in members
        if r not in seated and r.alias not in explorers
    ]
    # The decider's own reason: a model with a long record may explore too (the next best by record).
    reasons += [
        f"{alias} explores: {why.removeprefix('explorer: ') or 'an explorer seat'}" for alias, why in in_line
    ]
    return {"seats": [r.alias for r in seated], "explorers": explorers, "reasons": reasons}
