"""Panels and verdicts, for one identity: the service every front end asks.

The HTTP routes (every vendor format), the MCP tools and the CLI are thin
front ends over this module, so a rule holds the same through each:
which collections an identity sees, the 404 that lists them, the 403 for a
key that does not cover one, how a panel is started, who may judge a seat.

    panels = Panels(runtime, identity)      # server: deps.panels_of(request)
    await panels.check_collection("trio")   # NotFound / Refused
    async for event in await panels.panel(ask): ...

A front end translates (a body into an `Ask`, events into its stream);
it decides nothing. The identity is `identity.Identity`: the guard builds
it from a gateway key, the CLI is the owner.

Panels outlive their clients (the engine runs each in a task of its own),
so a process that closes its runtime first calls `finish_background` to let
them write what they owe the store, rather than pulling the store from
under them.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
from collections.abc import AsyncGenerator, Sequence
from datetime import datetime
from typing import TYPE_CHECKING, Any

from sqlalchemy import func, select

from benchwarmers.bench import decisions, leaderboard
from benchwarmers.bench.evidence import SHAPES
from benchwarmers.bench.explain import decisions_report
from benchwarmers.calls import pairs, verdicts
from benchwarmers.calls.caller import HUNG_UP, STOPPED
from benchwarmers.calls.log import flush_log, settled
from benchwarmers.calls.reads import get_call
from benchwarmers.calls.tokens import prompt_tokens
from benchwarmers.config import tunables
from benchwarmers.errors import LimitExceeded, NoAnswer, NotFound, ProviderError, Refused, UserError
from benchwarmers.formats.base import model_name
from benchwarmers.identity.scope import OWNER, Identity, may_administer, may_call
from benchwarmers.limits.panels import Slot
from benchwarmers.limits.spending import paying
from benchwarmers.panel.engine import PanelEngine, finish_panels
from benchwarmers.panel.plan import plan_panel
from benchwarmers.store import kept, space
from benchwarmers.store.collections import collections_by_name, get_collection, list_collections
from benchwarmers.store.schema import Call, Verdict
from benchwarmers.store.settings import MAX_PANELS, MAX_PANELS_PER_KEY, Settings
from benchwarmers.store.times import iso_utc
from benchwarmers.store.views import CollectionView
from benchwarmers.types import Ask, PanelDone, PanelEvent, PanelReply, Request, SeatDone, SeatText

if TYPE_CHECKING:
    from benchwarmers.runtime import Runtime

FINISH_GRACE_SECONDS = tunables.FINISH_GRACE_SECONDS.value
RECENT_ASKS = 20
MAX_RECENT_ASKS = 100  # a page of Recent asks at most


class Panels:
    """One identity's view of the collections, its panels and its verdicts,
    over one open runtime."""

    def __init__(
        self, runtime: Runtime, identity: Identity = OWNER, *, unanswered_is_error: bool = False
    ) -> None:
        """`unanswered_is_error`: the gateway's rule (docs/api.md, "A panel no
        seat answered"): a panel whose every seat failed is an error (429 when
        every seat was rate limited, 502 else) naming each seat's reason,
        before any of the reply is sent. The CLI, the dashboard and MCP show
        those seats instead."""
        self.runtime = runtime
        self.identity = identity
        self.unanswered_is_error = unanswered_is_error

    # ---------------------------------------------------------- collections

    async def collections(self) -> list[CollectionView]:
        """The collections this identity may call, in the registry's order."""
        views = await list_collections(self.runtime.store)
        return [view for view in views if may_call(self.identity, view.name)]

    async def check_collection(self, collection: str) -> None:
        """NotFound (listing the collections this caller may call) for an
        unknown name; Refused (403) for one the caller's key does not cover."""
        await self.collection(collection)

    async def collection(self, collection: str) -> CollectionView:
        """One collection this caller may call (checked as `check_collection`),
        from the one cached read that checks it."""
        views = await collections_by_name(self.runtime.store)
        view = views.get(collection)
        if view is None:
            callable_names = [model_name(n) for n in views if may_call(self.identity, n)]
            there = ", ".join(callable_names) if callable_names else "none yet (benchwarmers collection add)"
            raise NotFound(f"no collection {model_name(collection)!r}; collections here: {there}")
        if not may_call(self.identity, collection):
            raise Refused(f"this key may not call {model_name(collection)}", status=403)
        return view

    # ---------------------------------------------------------------- asks

    async def panel(
        self, ask: Ask, *, stop_on_close: bool = False, person: bool = False
    ) -> AsyncGenerator[PanelEvent, None]:
        """The panel's events, with the first already taken: the collection
        check and the seating run before this returns, so their errors come
        before a front end starts its reply, and a stream that starts is one
        that finishes. The panel itself runs in the engine's own task: a
        caller that stops listening leaves it to finish and be recorded,
        unless `stop_on_close` (a person's stop button, a gateway client
        hanging up: closing the stream cancels the seats still answering,
        recorded `cancelled`, their error saying the client hung up, or,
        for a `person`'s page (the dashboard), that the person stopped it).
        A caller that waits for the whole reply asks `answer`.

        Under `unanswered_is_error` the first event is handed on only once a
        seat has answered or begun to write, and a panel no seat answered
        raises there, at the first event taken: a front end takes its first
        piece before it sends its status (`server.streaming.FormatStream`),
        so that error is still its reply, while everything else that starts
        the reply is done as the seats are asked, not after the first answer."""
        events, first = await self._started(ask, stop_on_close, person)
        answered = self.unanswered_is_error

        async def chained() -> AsyncGenerator[PanelEvent, None]:
            try:
                for event in [first, *(await _until_answered(events))] if answered else [first]:
                    yield event
                async for event in events:
                    yield event
            finally:
                await events.aclose()

        return chained()

    async def _started(
        self, ask: Ask, stop_on_close: bool, person: bool
    ) -> tuple[AsyncGenerator[PanelEvent, None], PanelEvent]:
        """The engine's events, and the first of them, taken: the checks and
        the seating have run."""
        view = await self._admitted(ask)
        slot = await self._panel_slot()
        try:
            events = PanelEngine(self.runtime).run(
                ask,
                on_done=slot.release,
                collection=view,
                stop_on_close=stop_on_close,
                stop_as=STOPPED if person else HUNG_UP,
                key=self.key,
            )
            first = await anext(events)
        except BaseException:
            slot.release()  # seating failed: no panel runs
            raise
        return events, first

    @property
    def key(self) -> str:
        """The gateway key this identity asks under, handed to the engines
        beside the ask (its calls are logged under it: spend per key); ""
        for the owner. Not a copy of the ask that carries it: that copy was
        most of what a keyed request cost more (docs/benchmarks.md)."""
        return "" if self.identity.owner else self.identity.name

    async def _admitted(self, ask: Ask) -> CollectionView:
        """The collection asked, once this caller may ask it (and seat its
        extras); the engine seats from this view rather than reading it again."""
        view = await self.collection(ask.collection)
        self.pay()
        if ask.extra_aliases or ask.only_aliases:
            await self._check_extras((*ask.extra_aliases, *ask.only_aliases))
        space.ensure_room(self.runtime.store)  # no seat goes out whose call the log could not take
        return view

    def pay(self) -> None:
        """This request's calls spend from its gateway key's budgets (`limits/spending.py`)."""
        paying("" if self.identity.owner else self.identity.name)

    async def _panel_slot(self) -> Slot:
        """A running panel's place under the caps (`limits/panels.py`), else 429."""
        caps = await Settings(self.runtime.store).current()  # from memory: read on every ask
        return self.runtime.panel_slots.take(
            None if self.identity.owner else self.identity.name,
            total=caps[MAX_PANELS.name],
            per_holder=caps[MAX_PANELS_PER_KEY.name],
        )

    async def _check_extras(self, extras: Sequence[str]) -> None:
        """A key limited to some collections may seat only their members:
        anything else is refused with one answer, whether or not such an
        alias exists (no 404-vs-200 oracle for a key's holder to probe with)."""
        if may_administer(self.identity):
            return
        views = await list_collections(self.runtime.store)
        allowed = {m for view in views if may_call(self.identity, view.name) for m in view.members}
        outside = [alias for alias in extras if alias not in allowed]
        if outside:
            raise Refused(
                f"this key may seat only the members of its collections in bench.with or bench.seats; "
                f"{', '.join(repr(a) for a in outside)} is not one",
                status=403,
            )

    async def answer(self, ask: Ask, *, left: asyncio.Future[None] | None = None) -> PanelReply:
        """The whole reply at once, for front ends that do not stream: the
        checks and the seating as in `panel`, then the engine's reply, with
        no event on the way (no stream wraps them). The panel keeps its slot
        until its seats are over, even when this caller leaves first.
        `left`: done when the caller has gone (an HTTP client that hung up):
        the panel stops as a closed `panel(stop_on_close=True)` does, its
        seats still answering cancelled, and this raises `errors.Left`."""
        view = await self._admitted(ask)
        slot = await self._panel_slot()
        engine = PanelEngine(self.runtime)
        try:
            plan = await plan_panel(self.runtime, ask, view, key=self.key)
        except BaseException:
            slot.release()  # seating failed: no panel runs
            raise
        reply = await engine.reply_to(plan, on_done=slot.release, left=left)
        if self.unanswered_is_error and (failure := unanswered(reply)):
            raise failure
        return reply

    # ------------------------------------------------------------ verdicts

    async def verdict(self, body: object) -> verdicts.Recorded | pairs.RecordedPairs:
        """Record a verdict on a seat or a merge, or on a pair of seats.
        `body` is what a client sends (`{"call", "useful", "note"?}`, or a
        pair body: `pairs.PAIR_FORMS`), checked here, once, whichever front
        end it came through; a key may judge only the seats of collections
        it may call (a seat or a pair naming another's seat is told the call
        is unknown, as `pending` tells nothing of other ids: a 403 named the
        other collection, which the key may not even list)."""
        if pairs.is_pair_body(body):
            scope = None if may_administer(self.identity) else self.identity.collections
            return await pairs.record_pairs(
                self.runtime.store, pairs.check_pair_body(body), collections=scope
            )
        call, useful, note = verdicts.check_verdict_body(body)
        store = self.runtime.store
        logged = await get_call(store, call)
        if logged is not None and logged.collection and not may_call(self.identity, logged.collection):
            raise NotFound(f"no call {call!r} in the call log")
        return await verdicts.record_verdict(store, call, useful, note)

    async def record(self, collection: str, task: str = "") -> dict[str, Any]:
        """What the verdicts on a collection's seats add up to. A name that
        is neither a collection nor in any verdict (a removed collection's
        verdicts stay, so does its record) is NotFound, as the leaderboard's
        is: an empty record would read as "nothing judged yet"."""
        self._may_read_record(collection)
        store = self.runtime.store
        try:
            await get_collection(store, collection)
        except NotFound:
            if not await verdicts.judged_any(store, collection):
                raise
        return await verdicts.record(store, collection, task)

    def _may_read_record(self, collection: str) -> None:
        if not may_call(self.identity, collection):
            raise Refused(f"this key may not read the record of {collection}", status=403)

    async def pending(self, body: object) -> list[str]:
        """Of the call ids in `body` (`{"calls": [...]}`, checked here), the
        answered seats that have no verdict yet (of the identity's
        collections only: a key learns nothing of other ids)."""
        scope = None if may_administer(self.identity) else self.identity.collections
        return await verdicts.pending(
            self.runtime.store, verdicts.check_pending_body(body), collections=scope
        )

    async def seat_record(self, call: str) -> dict[str, Any] | None:
        """The record of the collection whose seat `call` was (None for a
        call of no collection), as `record` reads it."""
        logged = await get_call(self.runtime.store, call)
        if logged is None or not logged.collection:
            return None
        # A seat of it was logged, so it existed: no existence check (it may be removed since).
        self._may_read_record(logged.collection)
        return await verdicts.record(self.runtime.store, logged.collection)

    async def recent_asks(
        self, collection: str = "", limit: int = RECENT_ASKS, before: str = ""
    ) -> tuple[list[dict[str, Any]], str]:
        """A page of the latest asks and the next page's cursor (`recent_asks_page`)."""
        page, after, _tag = await self.recent_asks_page(collection, limit, before)
        return page or [], after

    async def recent_asks_page(
        self,
        collection: str = "",
        limit: int = RECENT_ASKS,
        before: str = "",
        unless: str = "",
        head: int = 0,
    ) -> tuple[list[dict[str, Any]] | None, str, str]:
        """The gateway's latest asks (of the collections this identity may
        call), newest first, each with its seats in seat order and the merge
        last: call id, alias, status, time, tokens, verdict (and note); the
        pairs judged on it. The log keeps no prompt or answer: only a
        collection that keeps text (`keep_text`) has its ask's `question`
        and each seat's `content` here, until they expire.

        Paged by a stable cursor: `before` is an ask id, and the page holds
        the asks older than it (by their last call, then ask id). Returned
        with the cursor of the next page ("" when none is older) and its tag:
        a digest of everything the page shows but the kept text itself
        (which is written once and only ever removed: the ids of what is kept
        stand for it). A page whose tag is `unless` is not read further and
        is None: a poller that has it already (the dashboard's, every few
        seconds, of a page that can hold megabytes of kept answers) costs the
        small reads and no text. The read walks the calls' `at` index down
        from the cursor, never the whole log.

        `head` (0: whole) cuts each kept text (an answer, a question's
        message) to its first `head` characters, saying its whole length
        beside it (`content_chars`): a list of asks whose answers run to
        megabytes is then sent and drawn in a moment, each ask read whole
        when a person opens it (`recent_ask`)."""
        if not 1 <= limit <= MAX_RECENT_ASKS:
            raise UserError(f"limit must be 1 to {MAX_RECENT_ASKS}", field="limit")
        if head < 0:
            raise UserError("head must be a number of characters, 0 for the whole text", field="head")
        await flush_log()  # read your writes: an ask this process just answered is on the page
        where = [Call.kind.in_(("seat", "merge")), Call.ask_id != ""]
        async with self.runtime.store.read() as session:
            cursor: tuple[datetime, str] | None = None
            if before:
                found = (
                    await session.execute(select(func.max(Call.at)).where(*where, Call.ask_id == before))
                ).scalar()
                if found is None:
                    raise UserError(
                        f"no ask {before!r}: page with the `next` of the page before", field="before"
                    )
                cursor = (found, before)
            if collection:
                where.append(Call.collection == collection)
            asks = await self._ask_page(session, where, cursor, limit + 1)
            more = len(asks) > limit
            asks = asks[:limit]
        if collection and not asks:
            # None: a collection with nothing asked yet, or a name that never was (no
            # call names it: a removed collection's log stays), NotFound as its record is.
            try:
                await get_collection(self.runtime.store, collection)
            except NotFound as exc:
                raise NotFound(str(exc), field="collection") from None
        page = await self._asks_json([a[0] for a in asks])
        after = asks[-1][0] if more and asks else ""
        kept_ids = await kept.kept_ids(self.runtime.store, [ask["ask"] for ask in page])
        shown = json.dumps([page, kept_ids, after, head], sort_keys=True)
        tag = hashlib.sha256(shown.encode()).hexdigest()[:32]
        if unless and unless == tag:
            return None, after, tag
        await self._with_text(page, head)
        return page, after, tag

    async def recent_ask(self, ask_id: str) -> dict[str, Any]:
        """One ask as Recent asks lists it, its kept text whole: what a
        person opens to read (and judge) an ask the list showed cut (`head`).
        An ask of a collection this identity may not call is not found, as
        one that never was."""
        await flush_log()
        async with self.runtime.store.read() as session:
            found = (
                await session.execute(
                    select(Call.collection).where(
                        Call.ask_id == ask_id, Call.ask_id != "", Call.kind.in_(("seat", "merge"))
                    )
                )
            ).first()
        if found is None or not may_call(self.identity, found.collection):
            raise NotFound(f"no ask {ask_id!r}", field="ask")
        (ask,) = await self._asks_json([ask_id])
        await self._with_text([ask], 0)
        return ask

    async def _asks_json(self, ask_ids: list[str]) -> list[dict[str, Any]]:
        """These asks as Recent asks shows them, in this order, without their text:
        each one's seats in seat order and the merge last, and its pairs."""
        async with self.runtime.store.read() as session:
            rows = (
                await session.execute(
                    select(Call, Verdict)
                    .outerjoin(Verdict, Verdict.call_id == Call.id)
                    .where(Call.ask_id.in_(ask_ids))
                    .order_by(Call.at)
                )
            ).all()
        grouped: dict[str, dict[str, Any]] = {}
        for call, verdict in rows:
            ask = grouped.setdefault(
                call.ask_id,
                {"ask": call.ask_id, "collection": call.collection, "shape": call.shape, "seats": []},
            )
            ask["at"] = iso_utc(call.at)
            if call.blind is not None:  # the Ask page's toggle set it against the collection's
                ask["blind"] = call.blind
            ask["seats"].append(_seat_row(call, verdict))
        judged_pairs = await pairs.pairs_of_asks(self.runtime.store, list(grouped))
        for ask in grouped.values():
            ask["seats"].sort(key=_seat_order)
            ask["pairs"] = judged_pairs.get(ask["ask"], [])
        return [grouped[a] for a in ask_ids if a in grouped]

    async def _with_text(self, page: list[dict[str, Any]], head: int) -> None:
        """What is kept of these asks put on them: the question, each seat's
        `content`; cut to `head` characters (0: whole), each cut text's
        whole length beside it (`content_chars`)."""
        texts = await kept.kept_asks(self.runtime.store, [ask["ask"] for ask in page], head)
        for ask in page:
            text = texts.get(ask["ask"])
            if text is None:
                continue
            ask["question"] = text.question
            for seat in ask["seats"]:
                seat["content"] = text.answers.get(seat["call"], "")
                if head:
                    seat["content_chars"] = text.lengths.get(seat["call"], 0)

    async def _ask_page(
        self, session: Any, where: list[Any], cursor: tuple[datetime, str] | None, want: int
    ) -> list[tuple[str, str, datetime]]:
        """Up to `want` asks (id, collection, last call's time), newest first by
        (last, id), older than `cursor`: read down the `at` index in chunks,
        each chunk finished to the end of its last instant (so ties are whole),
        until enough asks are found or the log ends."""
        upper, inclusive = (cursor[0], True) if cursor else (None, False)
        seen: set[str] = set()
        found: list[tuple[str, str, datetime]] = []
        chunk = want * 4  # an ask is a few calls; the next chunk reads on if asks straddle the cursor
        while True:
            bound = [] if upper is None else [Call.at <= upper if inclusive else Call.at < upper]
            rows = list(
                (
                    await session.execute(
                        select(Call.ask_id, Call.collection, Call.at)
                        .where(*where, *bound)
                        .order_by(Call.at.desc())
                        .limit(chunk)
                    )
                ).all()
            )
            if not rows:
                break
            end = rows[-1].at
            if len(rows) == chunk:  # the rest of the last instant, by the index too
                rows += (
                    await session.execute(
                        select(Call.ask_id, Call.collection, Call.at).where(*where, Call.at == end)
                    )
                ).all()
            fresh = {r.ask_id: r.collection for r in rows if r.ask_id not in seen}
            seen.update(fresh)
            if fresh:
                # Each new ask's last call (ask id index); one after the cursor was on a page before.
                lasts = (
                    await session.execute(
                        select(Call.ask_id, func.max(Call.at))
                        .where(Call.kind.in_(("seat", "merge")), Call.ask_id.in_(list(fresh)))
                        .group_by(Call.ask_id)
                    )
                ).all()
                for ask_id, last in lasts:
                    if cursor is not None and (last, ask_id) >= cursor:
                        continue
                    if may_call(self.identity, fresh[ask_id]):
                        found.append((ask_id, fresh[ask_id], last))
            # Every ask whose last call is at or after `end` is known now, so those are final.
            if len([a for a in found if a[2] >= end]) >= want or len(rows) < chunk:
                break
            upper, inclusive = end, False
        found.sort(key=lambda a: (a[2], a[0]), reverse=True)
        return found[:want]

    # ------------------------------------------------------------ blind asks

    async def seat_aliases(self, collection: str, calls: Sequence[str]) -> dict[str, str]:
        """The model of each of these calls that is a seat of `collection`:
        a blind follow-up names its seats by a call of theirs (`dashboard/blind.py`)."""
        if not calls:
            return {}
        await settled(self.runtime.store, calls)
        async with self.runtime.store.read() as session:
            rows = await session.execute(
                select(Call.id, Call.alias).where(
                    Call.id.in_(list(calls)), Call.kind == "seat", Call.collection == collection
                )
            )
            return {row.id: row.alias for row in rows}

    async def judged_names(self, calls: Sequence[str]) -> dict[str, Any]:
        """What a blind ask kept from the page, for each of these calls (seats
        and merges) whose ask is judged: `{"calls": {call: {"alias", "seat",
        "error", "costUsd"}}, "asks": {ask: {"costUsd", "costComplete"}}, "merges":
        {ask: [{"alias", "status", "error"}]}}` (the mergers tried: a merge none
        answered has no call of its own to name).
        An ask is judged when a pair names two of its seats, when each seat
        that answered has a verdict, or when none answered; the others' calls
        are left out (their names wait)."""
        if not calls:
            return {"calls": {}, "asks": {}, "merges": {}}
        await settled(self.runtime.store, calls)
        async with self.runtime.store.read() as session:
            ask_ids = list(
                (
                    await session.execute(
                        select(Call.ask_id)
                        .where(Call.id.in_(list(calls)), Call.kind.in_(("seat", "merge")), Call.ask_id != "")
                        .distinct()
                    )
                ).scalars()
            )
            rows = (
                await session.execute(
                    select(Call, Verdict)
                    .outerjoin(Verdict, Verdict.call_id == Call.id)
                    .where(Call.ask_id.in_(ask_ids), Call.kind.in_(("seat", "merge")))
                )
            ).all()
        paired = await pairs.pairs_of_asks(self.runtime.store, ask_ids)
        by_ask: dict[str, list[tuple[Call, Verdict | None]]] = {}
        for call, verdict in rows:
            if may_call(self.identity, f"bench/{call.collection}"):
                by_ask.setdefault(call.ask_id, []).append((call, verdict))
        out: dict[str, Any] = {"calls": {}, "asks": {}, "merges": {}}
        for ask, members in by_ask.items():
            answered = [v for c, v in members if c.kind == "seat" and c.status in verdicts.ANSWERED]
            if not (paired.get(ask) or all(v is not None for v in answered)):
                continue
            costs = [c.cost_usd for c, _ in members]
            out["asks"][ask] = {
                "costUsd": sum(c for c in costs if c is not None),
                "costComplete": all(c is not None for c in costs),
            }
            out["merges"][ask] = [
                {"alias": c.alias, "status": c.status, "error": c.error}
                for c, _ in sorted(members, key=lambda m: m[0].at)
                if c.kind == "merge"
            ]
            for call, _ in members:
                if call.id in calls:
                    out["calls"][call.id] = {
                        "alias": call.alias,
                        "seat": call.seat,
                        "error": call.error,
                        "costUsd": call.cost_usd,
                    }
        return out

    # --------------------------------------------------- estimates, reasons

    async def count_tokens(self, collection: str, request: Request) -> int:
        """The prompt's size as the limiter and seating estimate it (about
        four characters a token, a fixed allowance per image); no member is
        asked, since each counts its own way."""
        await self.check_collection(collection)
        return prompt_tokens(request)

    async def decisions(self, collection: str, shape: str = "") -> dict[str, Any]:
        """Why who sits: per shape (or the one asked) the members best first
        with their scores, intervals and reasons, the models next in line for
        the explorer seats, the promotions suggested, and the dated history of who sat. Counts and
        reasons only, never a prompt, an answer or a note."""
        if shape and shape not in SHAPES:
            raise UserError(f"shape {shape!r} is not known; shapes: {', '.join(SHAPES)}", field="shape")
        if not may_call(self.identity, collection):
            raise Refused(f"this key may not read the decisions of {collection}", status=403)
        store = self.runtime.store
        found = await get_collection(store, collection.removeprefix("bench/"))
        report = await decisions_report(
            store, found.name, list(found.members), shapes=(shape,) if shape else SHAPES
        )
        plans = {s: await decisions.seat_plan(store, found, s) for s in report["shapes"]}
        # Next in line after the record seats: a member the seat cap leaves out may explore too.
        report["explorers"] = {
            s: await decisions.pick_explorers(
                store, found.name, s, max(found.explorer_seats, 1), exclude=plans[s].record
            )
            for s in report["shapes"]
        }
        # Under promotion "suggest", a non-member clearly better than a record seat is named here.
        report["suggestions"] = {s: list(plans[s].suggestions) for s in report["shapes"]}
        return report

    async def leaderboard(self, collection: str, shape: str = "") -> dict[str, Any]:
        """One collection's leaderboard for a kind of question (by default the
        one asked most): each model's score with its interval, the verdicts
        and pairs behind it, who beat whom, the trend, the next panel and why
        (`bench/leaderboard.py`). Counts and reasons only, never a note."""
        if not may_call(self.identity, collection):
            raise Refused(f"this key may not read the leaderboard of {collection}", status=403)
        found = await get_collection(self.runtime.store, collection.removeprefix("bench/"))
        return await leaderboard.leaderboard(self.runtime, found, shape)


def _seat_row(call: Call, verdict: Verdict | None) -> dict[str, Any]:
    return {
        "call": call.id,
        "kind": call.kind,
        "seat": call.seat or ("merged" if call.kind == "merge" else ""),
        "alias": call.alias,
        "status": call.status,
        "seconds": round(call.seconds, 2),
        "tokens_in": call.tokens_in,
        "tokens_out": call.tokens_out,
        "cost_usd": call.cost_usd,  # None: the price was unknown
        "error": call.error,
        "explorer": call.explorer,
        "verdict": None
        if verdict is None
        else {"useful": verdict.useful, "note": verdict.note, "at": iso_utc(verdict.at)},
    }


def _seat_order(seat: dict[str, Any]) -> tuple[bool, int, str]:
    """Seats in seat order ("Seat 2" before "Seat 10"), the merge last."""
    digits = "".join(c for c in seat["seat"] if c.isdigit())
    return seat["kind"] == "merge", int(digits) if digits else 0, seat["seat"]


def collection_entry(view: CollectionView) -> dict[str, Any]:
    """A collection as `GET /v1/models` lists it and the MCP tools show it:
    the OpenAI model object, with extra keys describing the collection
    (clients ignore keys they do not know; an agent picks by purpose)."""
    return {
        "id": model_name(view.name),
        "object": "model",
        "created": int(view.created_at.timestamp()),
        "owned_by": "benchwarmers",
        "purpose": view.purpose,
        "members": list(view.members),
        "reply": view.reply,
        "seats": view.seats or len(view.members),
        "explorerSeats": view.explorer_seats,
        "keepText": view.keep_text,
        "keepDays": view.keep_days,
        "judgeVerdicts": view.judge_verdicts,
        "blind": view.blind,  # the dashboard's Ask page hides who is who until judged
        "quorum": view.quorum,
        "deadline": view.deadline,
        "onCut": view.on_cut,
        "modes": [model_name(view.name), model_name(view.name, "merged"), model_name(view.name, "route")],
    }


async def finish_background(grace: float = FINISH_GRACE_SECONDS) -> None:
    """Before a runtime closes: let the panels still running on this event
    loop finish (seats, merge, seating history), for up to `grace` seconds,
    then cancel the rest and wait until they have unwound (each cancelled
    seat still writes its call-log row, committed before this returns)."""
    await finish_panels(grace)
    await flush_log()


# ------------------------------------------------------- no seat answered

ANSWERED = ("ok", "empty")  # the model replied (an empty reply is a reply)


async def _until_answered(events: AsyncGenerator[PanelEvent, None]) -> list[PanelEvent]:
    """The events up to the first seat that answered or began to write (or
    the whole panel's); the `unanswered` error when none did."""
    held: list[PanelEvent] = []
    async for event in events:
        held.append(event)
        if isinstance(event, SeatText) or (isinstance(event, SeatDone) and event.seat.status in ANSWERED):
            return held
        if isinstance(event, PanelDone):
            if failure := unanswered(event.reply):
                raise failure
            return held
    return held


def unanswered(reply: PanelReply) -> ProviderError | None:
    """The error for a panel whose every seat failed, with each seat's
    reason and each member left off (None when one answered, or none was
    seated): `LimitExceeded` (429, the earliest time one frees) when every
    seat was rate limited, a 502 (`NoAnswer`) else, which says a provider
    failed only when every seat's did (`error`): seats our deadline cut
    or our timeout stopped failed at no provider."""
    seats = reply.seats
    if not seats or any(seat.status in ANSWERED for seat in seats):
        return None
    reasons = [f"{seat.seat} ({seat.alias}): {seat.error or seat.status}" for seat in seats]
    reasons += [f"left off {member.alias}: {member.reason}" for member in reply.left_off]
    message = f"no seat of bench/{reply.collection} answered ({'; '.join(reasons)})"
    if all(seat.status in ("limited", "rate_limited") for seat in seats):
        frees = [datetime.fromisoformat(seat.frees_at).timestamp() for seat in seats if seat.frees_at]
        return LimitExceeded(message, frees_at=min(frees) if frees else None)
    return NoAnswer(message, providers_failed=all(seat.status == "error" for seat in seats))
