"""The `bench` object's JSON, written and read in one place.

A panel reply's `bench` object (`PanelReply`: seats, `leftOff`, `merged`)
and a route-mode turn's (`RouteBench`: the call, the member, `failover`,
`shadows`) are typed values in `types.py`; this module is the only code
that spells their JSON (camelCase keys, `bench/<collection>`, seconds to
the millisecond), so every format, the MCP tools, the dashboard and the
CLI write the same keys, and a key renamed here is renamed everywhere.

Writing: `panel_json(reply)`, `seat_json(seat)` (the chat stream's
`bench_seat`), `started_json(started)` (its `bench_started`: the seats
planned, before any answers), `merged_json(merged)`, `route_json(bench)`, and
`bench_header(reply)` (the `x-bench` header, for formats whose body has no
room). Optional keys are written only when set (`explorer`, `freesAt`,
`note`, `merged`, `output`: a seat's check against the structured output
asked; `finish`: how a seat's or the merge's answer ended, when not
"stop", such as "length" for one cut at its output limit).
`note`, `merged`; a route turn's `costUsd` and `costComplete` once it ended).
Every seat and `merged` carry `costUsd` (USD, or null when the model's price
is unknown: never 0 for unknown), a panel its `costUsd` (the known costs'
sum) and `costComplete` (false when some call's price was unknown).

Reading, for our own client (`api_client`, which hands the CLI and the
stdio MCP server typed values, not dicts): `read_panel`, `read_seat`,
`read_started`, `read_route`. Reading is strict: every key this module writes always must
be there with its JSON type (a number where a number is written, never a
boolean for one), statuses must be known ones, and the first thing wrong is
a `BadBenchObject` naming its place (`bench.seats[1].status: expected one
of ok, empty, ...`). Keys it does not know are passed over, so a newer
server may add one without breaking an older client. What is written reads
back to the same value (`read_panel(panel_json(r)) == r` for seconds at
the millisecond the wire keeps; the tests check it with hypothesis).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any, cast, overload

from benchwarmers.errors import BadBenchObject
from benchwarmers.formats.base import MODEL_PREFIX, json_type
from benchwarmers.types import (
    FINISH_REASONS,
    OUTPUT_KINDS,
    SEAT_STATUSES,
    AgreementPoint,
    Contradiction,
    Cut,
    FinishReason,
    LeftOff,
    Merged,
    MergeReport,
    OutputCheck,
    PanelReply,
    PanelStarted,
    RouteBench,
    RouteFailure,
    Seat,
    SeatStatus,
    Side,
    Unique,
    Usage,
)

ROUTE_MODE = "route"
# Seconds go out to the millisecond: enough for any reader, and stable text.
SECONDS_DIGITS = 3


# ------------------------------------------------------------------ writing


def usage_json(usage: Usage) -> dict[str, int]:
    """`{"inputTokens", "outputTokens", "cachedInputTokens"?}`: the cached part of
    the input only when the provider reported some."""
    out = {"inputTokens": usage.input_tokens, "outputTokens": usage.output_tokens}
    if usage.cached_input_tokens:
        out["cachedInputTokens"] = usage.cached_input_tokens
    return out


def left_off_json(left_off: tuple[LeftOff, ...]) -> list[dict[str, str]]:
    return [{"alias": m.alias, "reason": m.reason} for m in left_off]


def seat_json(seat: Seat, *, content: bool = True) -> dict[str, Any]:
    out: dict[str, Any] = {
        "call": seat.call,
        "seat": seat.seat,
        "alias": seat.alias,
        "status": seat.status,
        "seconds": round(seat.seconds, SECONDS_DIGITS),
        "content": seat.content,
        "error": seat.error,
        "usage": usage_json(seat.usage),
        "costUsd": seat.cost_usd,
    }
    if not content:
        del out["content"]
    if seat.explorer:
        out["explorer"] = True
    if seat.frees_at:
        out["freesAt"] = seat.frees_at
    if seat.note:
        out["note"] = seat.note
    if seat.output_check is not None:
        out["output"] = output_json(seat.output_check)
    if seat.finish != "stop":
        out["finish"] = seat.finish
    return out


def output_json(check: OutputCheck) -> dict[str, Any]:
    """`{"kind", "valid", "error"}`: whether an answer holds to the structured output asked."""
    return {"kind": check.kind, "valid": check.valid, "error": check.error}


def agreement_json(point: AgreementPoint) -> dict[str, Any]:
    return {
        "point": point.point,
        "heldBy": list(point.held_by),
        "contradictedBy": list(point.contradicted_by),
    }


def merged_json(merged: Merged, *, content: bool = True) -> dict[str, Any]:
    out: dict[str, Any] = {
        "call": merged.call,
        "alias": merged.alias,
        "status": merged.status,
        "seconds": round(merged.seconds, SECONDS_DIGITS),
        "content": merged.content,
        "error": merged.error,
        "usage": usage_json(merged.usage),
        "agreement": [agreement_json(p) for p in merged.agreement],
        "costUsd": merged.cost_usd,
    }
    if not content:
        del out["content"]
    if merged.note:
        out["note"] = merged.note
    if merged.output_check is not None:
        out["output"] = output_json(merged.output_check)
    if merged.report is not None:
        out["report"] = report_json(merged.report)
    if merged.finish != "stop":
        out["finish"] = merged.finish
    return out


def report_json(report: MergeReport) -> dict[str, Any]:
    """The merger's checked report (`panel/report.py`), seats by label."""
    return {
        "consensus": list(report.consensus),
        "contradictions": [
            {"point": c.point, "sides": [{"position": s.position, "seats": list(s.seats)} for s in c.sides]}
            for c in report.contradictions
        ],
        "unique": [{"point": u.point, "seat": u.seat, "right": u.right} for u in report.unique],
        "gaps": list(report.gaps),
        "confidence": report.confidence,
    }


def cut_json(cut: Cut) -> dict[str, Any]:
    return {
        "reason": cut.reason,
        "quorum": cut.quorum,
        "deadline": cut.deadline,
        "background": cut.background,
    }


def panel_json(reply: PanelReply, *, content: bool = True) -> dict[str, Any]:
    """`{"collection", "shape", "seats": [...], "leftOff": [...], "merged"?}`;
    `content=False` leaves the answers out (the `x-bench` header's budget)."""
    out: dict[str, Any] = {
        "collection": MODEL_PREFIX + reply.collection,
        "shape": reply.shape,
        "seats": [seat_json(s, content=content) for s in reply.seats],
        "leftOff": left_off_json(reply.left_off),
        "costUsd": reply.cost_usd,
        "costComplete": reply.cost_complete,
    }
    if reply.merged is not None:
        out["merged"] = merged_json(reply.merged, content=content)
    if reply.cut is not None:
        out["cut"] = cut_json(reply.cut)
    return out


def started_json(started: PanelStarted) -> dict[str, Any]:
    """`{"collection", "shape", "ask", "merged", "seats": [{"seat", "alias", "call"}], "leftOff"}`:
    a panel's seats as planned, before any answers (the chat stream's `bench_started`)."""
    return {
        "collection": MODEL_PREFIX + started.collection,
        "shape": started.shape,
        "ask": started.ask,
        "merged": started.merged,
        "seats": [{"seat": seat, "alias": alias, "call": call} for seat, alias, call in started.seats],
        "leftOff": left_off_json(started.left_off),
    }


def route_json(bench: RouteBench) -> dict[str, Any]:
    """`{"collection", "mode": "route", "shape", "call", "alias",
    "conversation", "failover": [...], "shadows": [...], "leftOff": [...]}`,
    and `"costUsd"`, `"costComplete"` once the turn has ended."""
    out: dict[str, Any] = {
        "collection": MODEL_PREFIX + bench.collection,
        "mode": ROUTE_MODE,
        "shape": bench.shape,
        "call": bench.call,
        "alias": bench.alias,
        "conversation": bench.conversation,
        "failover": [
            {"alias": f.alias, "call": f.call, "status": f.status, "error": f.error} for f in bench.failover
        ],
        "shadows": list(bench.shadows),
        "leftOff": left_off_json(bench.left_off),
    }
    if bench.cost_usd is not None:
        out["costUsd"] = bench.cost_usd
        out["costComplete"] = bench.cost_complete
    return out


# Response headers are small by custom: httpx-based clients (all four
# official SDKs) refuse a header block over 100 KB, nginx's default proxy
# buffer is 4-8 KB. The answers are in the body's text anyway.
BENCH_HEADER_BUDGET = 8192


def bench_header(reply: PanelReply) -> dict[str, str]:
    """The `bench` object as a response header, for formats whose reply body
    has no room for an extra key (compact JSON, ASCII only). Over
    `BENCH_HEADER_BUDGET` the answers' `content` is left out (marked
    `"contentOmitted": true`), and if that is not enough the merger's
    report and agreement map too (`"reportOmitted": true`: a long report
    would push the header past what proxies and clients take), so call
    ids, statuses and usage always go."""
    text = json.dumps(panel_json(reply), separators=(",", ":"), ensure_ascii=True)
    if len(text) > BENCH_HEADER_BUDGET:
        short = {**panel_json(reply, content=False), "contentOmitted": True}
        text = json.dumps(short, separators=(",", ":"), ensure_ascii=True)
        if len(text) > BENCH_HEADER_BUDGET and "merged" in short:
            for key in ("report", "agreement"):
                short["merged"].pop(key, None)
            short["reportOmitted"] = True
            text = json.dumps(short, separators=(",", ":"), ensure_ascii=True)
    return {"x-bench": text}


# ------------------------------------------------------------------ reading


def read_panel(value: object, where: str = "bench") -> PanelReply:
    """A panel's `bench` object back into its `PanelReply`."""
    obj = _Object(value, where)
    merged = obj.get("merged")
    cut = obj.get("cut")
    return PanelReply(
        collection=obj.collection(),
        shape=obj.text("shape"),
        seats=tuple(read_seat(s, w) for s, w in obj.items("seats")),
        left_off=_read_left_off(obj),
        merged=None if merged is None else _read_merged(merged, f"{where}.merged"),
        cut=None if cut is None else _read_cut(cut, f"{where}.cut"),
        cost_usd=obj.number("costUsd", optional=True) or 0.0,
        cost_complete=obj.flag("costComplete", optional=True, default=True),
    )


def read_seat(value: object, where: str = "bench_seat") -> Seat:
    """One seat (`bench.seats[i]`, or the chat stream's `bench_seat`)."""
    obj = _Object(value, where)
    return Seat(
        call=obj.text("call"),
        seat=obj.text("seat"),
        alias=obj.text("alias"),
        status=obj.status("status"),
        seconds=obj.number("seconds"),
        content=obj.text("content"),
        error=obj.text("error"),
        usage=_read_usage(obj),
        frees_at=obj.text("freesAt", optional=True),
        explorer=obj.flag("explorer", optional=True),
        note=obj.text("note", optional=True),
        output_check=_read_output(obj),
        cost_usd=obj.cost("costUsd"),
        finish=obj.finish(),
    )


def read_started(value: object, where: str = "bench_started") -> PanelStarted:
    """A panel's seats as planned (`started_json`) back into its `PanelStarted`."""
    obj = _Object(value, where)
    seats = []
    for item, at in obj.items("seats"):
        seat = _Object(item, at)
        seats.append((seat.text("seat"), seat.text("alias"), seat.text("call")))
    return PanelStarted(
        collection=obj.collection(),
        shape=obj.text("shape"),
        seats=tuple(seats),
        left_off=_read_left_off(obj),
        merged=obj.flag("merged"),
        ask=obj.text("ask"),
    )


def read_route(value: object, where: str = "bench") -> RouteBench:
    """A route-mode turn's `bench` object back into its `RouteBench`."""
    obj = _Object(value, where)
    mode = obj.text("mode")
    if mode != ROUTE_MODE:
        raise BadBenchObject(f"{where}.mode: expected {ROUTE_MODE!r}, got {mode!r}")
    failover = []
    for item, at in obj.items("failover"):
        failed = _Object(item, at)
        failover.append(
            RouteFailure(
                failed.text("alias"), failed.text("call"), failed.status("status"), failed.text("error")
            )
        )
    return RouteBench(
        collection=obj.collection(),
        shape=obj.text("shape"),
        call=obj.text("call"),
        alias=obj.text("alias"),
        conversation=obj.text("conversation"),
        failover=tuple(failover),
        shadows=obj.strings("shadows"),
        left_off=_read_left_off(obj),
        cost_usd=obj.number("costUsd", optional=True),
        cost_complete=obj.flag("costComplete", optional=True, default=True),
    )


def _read_merged(value: object, where: str) -> Merged:
    obj = _Object(value, where)
    agreement = []
    for item, at in obj.items("agreement"):
        point = _Object(item, at)
        agreement.append(
            AgreementPoint(point.text("point"), point.strings("heldBy"), point.strings("contradictedBy"))
        )
    return Merged(
        call=obj.text("call"),
        alias=obj.text("alias"),
        status=obj.status("status"),
        seconds=obj.number("seconds"),
        content=obj.text("content"),
        error=obj.text("error"),
        usage=_read_usage(obj),
        agreement=tuple(agreement),
        note=obj.text("note", optional=True),
        output_check=_read_output(obj),
        report=None if obj.get("report") is None else _read_report(obj.get("report"), f"{obj.where}.report"),
        cost_usd=obj.cost("costUsd"),
        finish=obj.finish(),
    )


def _read_report(value: object, where: str) -> MergeReport:
    obj = _Object(value, where)
    contradictions = []
    for item, at in obj.items("contradictions"):
        point = _Object(item, at)
        sides = []
        for side, side_at in point.items("sides"):
            held = _Object(side, side_at)
            sides.append(Side(held.text("position"), held.strings("seats")))
        contradictions.append(Contradiction(point.text("point"), tuple(sides)))
    unique = []
    for item, at in obj.items("unique"):
        point = _Object(item, at)
        right = point.get("right", required=True)
        if right is not None and not isinstance(right, bool):
            raise BadBenchObject(f"{at}.right: expected true, false or null, got {json_type(right)}")
        unique.append(Unique(point.text("point"), point.text("seat"), right))
    confidence = obj.number("confidence")
    if not 0 <= confidence <= 1:
        raise BadBenchObject(f"{where}.confidence: expected a number from 0 to 1, got {confidence!r}")
    return MergeReport(
        consensus=obj.strings("consensus"),
        contradictions=tuple(contradictions),
        unique=tuple(unique),
        gaps=obj.strings("gaps"),
        confidence=confidence,
    )


def _read_cut(value: object, where: str) -> Cut:
    obj = _Object(value, where)
    reason = obj.text("reason")
    if reason not in ("quorum", "deadline"):
        raise BadBenchObject(f"{where}.reason: expected quorum or deadline, got {reason!r}")
    return Cut(
        "quorum" if reason == "quorum" else "deadline",
        quorum=obj.count("quorum"),
        deadline=obj.number("deadline"),
        background=obj.flag("background"),
    )


def _read_output(obj: _Object) -> OutputCheck | None:
    value = obj.get("output")
    if value is None:
        return None
    check = _Object(value, f"{obj.where}.output")
    kind = check.text("kind")
    if kind not in OUTPUT_KINDS:
        raise BadBenchObject(f"{check.where}.kind: expected one of {', '.join(OUTPUT_KINDS)}, got {kind!r}")
    return OutputCheck(kind, check.flag("valid"), check.text("error"))


def _read_usage(obj: _Object) -> Usage:
    usage = _Object(obj.get("usage", required=True), f"{obj.where}.usage")
    cached = usage.count("cachedInputTokens") if "cachedInputTokens" in usage.value else 0
    return Usage(usage.count("inputTokens"), usage.count("outputTokens"), cached)


def _read_left_off(obj: _Object) -> tuple[LeftOff, ...]:
    out = []
    for item, at in obj.items("leftOff"):
        member = _Object(item, at)
        out.append(LeftOff(member.text("alias"), member.text("reason")))
    return tuple(out)


class _Object:
    """One JSON object being read, with its place for error messages."""

    def __init__(self, value: object, where: str) -> None:
        if not isinstance(value, Mapping):
            raise BadBenchObject(f"{where}: expected an object, got {json_type(value)}")
        self.value = cast(Mapping[str, Any], value)
        self.where = where

    def get(self, key: str, *, required: bool = False) -> Any:
        if required and key not in self.value:
            raise BadBenchObject(f"{self.where}: the key {key!r} is missing")
        return self.value.get(key)

    def _typed(self, key: str, kind: type | tuple[type, ...], expected: str, optional: bool) -> Any:
        if optional and key not in self.value:
            return None
        found = self.get(key, required=True)
        if isinstance(found, bool) and bool not in (kind if isinstance(kind, tuple) else (kind,)):
            raise BadBenchObject(f"{self.where}.{key}: expected {expected}, got a boolean")
        if not isinstance(found, kind):
            raise BadBenchObject(f"{self.where}.{key}: expected {expected}, got {json_type(found)}")
        return found

    def text(self, key: str, *, optional: bool = False) -> str:
        found = self._typed(key, str, "a string", optional)
        return "" if found is None else cast(str, found)

    def flag(self, key: str, *, optional: bool = False, default: bool = False) -> bool:
        found = self._typed(key, bool, "true or false", optional)
        return default if found is None else bool(found)

    def count(self, key: str) -> int:
        return cast(int, self._typed(key, int, "an integer", False))

    @overload
    def number(self, key: str) -> float: ...
    @overload
    def number(self, key: str, *, optional: bool) -> float | None: ...
    def number(self, key: str, *, optional: bool = False) -> float | None:
        found = self._typed(key, (int, float), "a number", optional)
        return None if found is None else float(found)

    def cost(self, key: str) -> float | None:
        """A cost in USD: a number, or null for a price unknown (so is a key
        an older server did not write)."""
        found = self.value.get(key)
        if found is None:
            return None
        if isinstance(found, bool) or not isinstance(found, int | float):
            raise BadBenchObject(f"{self.where}.{key}: expected a number or null, got {json_type(found)}")
        return float(found)

    def status(self, key: str) -> SeatStatus:
        found = self.text(key)
        if found not in SEAT_STATUSES:
            raise BadBenchObject(
                f"{self.where}.{key}: expected one of {', '.join(SEAT_STATUSES)}, got {found!r}"
            )
        return found

    def finish(self) -> FinishReason:
        """An answer's `finish`, "stop" when left out (as it is written then)."""
        found = self.text("finish", optional=True) or "stop"
        if found not in FINISH_REASONS:
            raise BadBenchObject(
                f"{self.where}.finish: expected one of {', '.join(FINISH_REASONS)}, got {found!r}"
            )
        return found

    def collection(self) -> str:
        name = self.text("collection")
        if not name.startswith(MODEL_PREFIX):
            raise BadBenchObject(f"{self.where}.collection: expected {MODEL_PREFIX}<name>, got {name!r}")
        return name.removeprefix(MODEL_PREFIX)

    def items(self, key: str) -> list[tuple[object, str]]:
        """A list's items, each with its place (`bench.seats[2]`)."""
        found = self._typed(key, list, "an array", False)
        return [(item, f"{self.where}.{key}[{i}]") for i, item in enumerate(found)]

    def strings(self, key: str) -> tuple[str, ...]:
        out = []
        for item, at in self.items(key):
            if not isinstance(item, str):
                raise BadBenchObject(f"{at}: expected a string, got {json_type(item)}")
            out.append(item)
        return tuple(out)
