"""The `bench` object's one codec (`formats/bench_json.py`): what it writes
reads back to the same typed value (hypothesis), its keys are the spec's,
the examples in the docs read strictly, and anything else is refused with
the place it went wrong."""

from __future__ import annotations

import dataclasses
import json
import re
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from benchwarmers.errors import BadBenchObject
from benchwarmers.formats.bench_json import (
    BENCH_HEADER_BUDGET,
    bench_header,
    merged_json,
    panel_json,
    read_panel,
    read_route,
    read_seat,
    read_started,
    route_json,
    seat_json,
    started_json,
)
from benchwarmers.types import (
    FINISH_REASONS,
    OUTPUT_KINDS,
    SEAT_STATUSES,
    AgreementPoint,
    Contradiction,
    Cut,
    LeftOff,
    Merged,
    MergeReport,
    OutputCheck,
    PanelReply,
    PanelStarted,
    RouteBench,
    RouteFailure,
    Seat,
    Side,
    Unique,
    Usage,
)
from tests.conftest import examples

pytestmark = pytest.mark.unit

ROOT = Path(__file__).resolve().parents[2]

# SPEC.md, "The panel reply": `{"collection", "shape", "seats": [{"call", "seat",
# "alias", "status", "seconds", "content", "error", "usage"}], "merged"?}`.
# Issue 41 adds what each call cost: `costUsd` on every seat and the merge (null when
# the price is unknown), and the ask's `costUsd` and `costComplete` on the panel.
SPEC_PANEL_KEYS = {"collection", "shape", "seats", "costUsd", "costComplete"}
SPEC_SEAT_KEYS = {"call", "seat", "alias", "status", "seconds", "content", "error", "usage", "costUsd"}

texts = st.text(max_size=12)
statuses = st.sampled_from(SEAT_STATUSES)
# The wire keeps seconds to the millisecond: values at that precision read back exactly.
seconds = st.integers(min_value=0, max_value=10**7).map(lambda ms: ms / 1000)
usages = st.builds(Usage, st.integers(0, 10**9), st.integers(0, 10**9), st.integers(0, 10**9))
costs = st.floats(min_value=0, max_value=10**6, allow_nan=False, allow_infinity=False)
left_offs = st.lists(st.builds(LeftOff, texts, texts), max_size=3).map(tuple)
names = st.lists(texts, max_size=3).map(tuple)
output_checks = st.none() | st.builds(OutputCheck, st.sampled_from(OUTPUT_KINDS), st.booleans(), texts)
finishes = st.sampled_from(FINISH_REASONS)
seats = st.builds(
    Seat,
    call=texts,
    seat=texts,
    alias=texts,
    status=statuses,
    seconds=seconds,
    content=texts,
    error=texts,
    usage=usages,
    frees_at=texts,
    explorer=st.booleans(),
    note=texts,
    output_check=output_checks,
    cost_usd=st.none() | costs,
    finish=finishes,
)
reports = st.builds(
    MergeReport,
    consensus=names,
    contradictions=st.lists(
        st.builds(Contradiction, texts, st.lists(st.builds(Side, texts, names), max_size=2).map(tuple)),
        max_size=2,
    ).map(tuple),
    unique=st.lists(st.builds(Unique, texts, texts, st.none() | st.booleans()), max_size=2).map(tuple),
    gaps=names,
    confidence=st.floats(min_value=0, max_value=1),
)
cuts = st.builds(
    Cut,
    reason=st.sampled_from(["quorum", "deadline"]),
    quorum=st.integers(0, 50),
    deadline=st.floats(min_value=0, max_value=1e6),
    background=st.booleans(),
)
merges = st.builds(
    Merged,
    call=texts,
    alias=texts,
    status=statuses,
    seconds=seconds,
    content=texts,
    error=texts,
    usage=usages,
    agreement=st.lists(st.builds(AgreementPoint, texts, names, names), max_size=3).map(tuple),
    note=texts,
    output_check=output_checks,
    report=st.none() | reports,
    cost_usd=st.none() | costs,
    finish=finishes,
)
panels = st.builds(
    PanelReply,
    collection=texts,
    shape=texts,
    seats=st.lists(seats, max_size=4).map(tuple),
    left_off=left_offs,
    merged=st.none() | merges,
    cut=st.none() | cuts,
    cost_usd=costs,
    cost_complete=st.booleans(),
)
routes = st.builds(
    RouteBench,
    collection=texts,
    shape=texts,
    call=texts,
    alias=texts,
    conversation=texts,
    failover=st.lists(st.builds(RouteFailure, texts, texts, statuses, texts), max_size=3).map(tuple),
    shadows=names,
    left_off=left_offs,
    cost_usd=st.none() | costs,
    cost_complete=st.booleans(),
).map(lambda b: b if b.cost_usd is not None else dataclasses.replace(b, cost_complete=True))

starts = st.builds(
    PanelStarted,
    collection=texts,
    shape=texts,
    seats=st.lists(st.tuples(texts, texts, texts), max_size=4).map(tuple),
    left_off=left_offs,
    merged=st.booleans(),
    ask=texts,
)


REPORT = {"consensus": [], "contradictions": [], "unique": [], "gaps": [], "confidence": 0.5}


def over_the_wire(obj: dict[str, Any]) -> Any:
    """What a client receives: the object as JSON text, parsed again."""
    return json.loads(json.dumps(obj, ensure_ascii=False))


@settings(max_examples=examples(200), deadline=None)
@given(panels)
def test_a_panel_reads_back_to_the_same_value(reply: PanelReply) -> None:
    assert read_panel(over_the_wire(panel_json(reply))) == reply


@settings(max_examples=examples(200), deadline=None)
@given(routes)
def test_a_route_turn_reads_back_to_the_same_value(bench: RouteBench) -> None:
    assert read_route(over_the_wire(route_json(bench))) == bench


@settings(max_examples=examples(100), deadline=None)
@given(seats)
def test_a_streamed_seat_reads_back_to_the_same_value(seat: Seat) -> None:
    assert read_seat(over_the_wire(seat_json(seat))) == seat


@settings(max_examples=examples(100), deadline=None)
@given(starts)
def test_a_panels_planned_seats_read_back_to_the_same_value(started: PanelStarted) -> None:
    """The chat stream's `bench_started`: what the CLI letters a blind ask's seats from."""
    assert read_started(over_the_wire(started_json(started))) == started


@settings(max_examples=examples(100), deadline=None)
@given(panels)
def test_what_is_read_writes_back_to_the_same_json(reply: PanelReply) -> None:
    wire = over_the_wire(panel_json(reply))
    assert panel_json(read_panel(wire)) == wire


def test_the_wire_keys_are_the_specs() -> None:
    """A seat with nothing optional set carries exactly SPEC.md's keys; the
    object's own are SPEC.md's plus `leftOff` (the left-off members' reasons,
    which the spec puts "in bench"); `merged` only when merged."""
    seat = Seat("c_1", "Seat 1", "alpha", "ok", 1.25, "hi", "", Usage(5, 7))
    bench = panel_json(PanelReply("trio", "short", (seat,)))
    assert set(bench) == SPEC_PANEL_KEYS | {"leftOff"}
    assert set(bench["seats"][0]) == SPEC_SEAT_KEYS
    assert bench["collection"] == "bench/trio"
    assert bench["seats"][0]["usage"] == {"inputTokens": 5, "outputTokens": 7}
    merged = Merged("c_2", "beta", "ok", 2.0, "one answer", agreement=(AgreementPoint("x", ("Seat 1",)),))
    with_merge = panel_json(PanelReply("trio", "short", (seat,), merged=merged))
    assert set(with_merge) == SPEC_PANEL_KEYS | {"leftOff", "merged"}
    assert set(with_merge["merged"]) == SPEC_SEAT_KEYS - {"seat"} | {"agreement"}
    assert with_merge["merged"]["agreement"] == [{"point": "x", "heldBy": ["Seat 1"], "contradictedBy": []}]
    # Optional keys appear only when set, under their camelCase names.
    flagged = seat_json(
        Seat("c_3", "Seat 2", "g", "limited", 0, frees_at="2026-01-01T00:00:00Z", explorer=True, note="n")
    )
    assert set(flagged) - SPEC_SEAT_KEYS == {"explorer", "freesAt", "note"}
    # Structured output asked: the seat's (and the merge's) check, `output`.
    checked = seat_json(
        Seat("c_4", "Seat 3", "h", "ok", 1.0, "4", output_check=OutputCheck("json_object", False, "e"))
    )
    assert checked["output"] == {"kind": "json_object", "valid": False, "error": "e"}
    # An answer cut at its output limit says so (one that stopped says nothing).
    cut = Seat("c_5", "Seat 4", "i", "ok", 1.0, "one two", finish="length")
    assert set(seat_json(cut)) - SPEC_SEAT_KEYS == {"finish"} and seat_json(cut)["finish"] == "length"
    assert "finish" not in merged_json(merged)
    assert merged_json(dataclasses.replace(merged, finish="length"))["finish"] == "length"


def _doc_json(page: str, holding: str) -> Any:
    """The first ```json block of a page (README.md, docs/*.md) that holds `holding`."""
    blocks = re.findall(r"```json\n(.*?)```", (ROOT / page).read_text(), flags=re.S)
    return json.loads(next(block for block in blocks if holding in block))


def test_an_unknown_price_is_null_never_zero() -> None:
    """A seat whose model's price is unknown says null; a free one says 0;
    the panel's sum leaves the unknown out and says it is not complete."""
    unknown = Seat("c_1", "Seat 1", "alpha", "ok", 1.0, "hi", cost_usd=None)
    free = Seat("c_2", "Seat 2", "beta", "ok", 1.0, "hi", cost_usd=0.0)
    bench = over_the_wire(panel_json(PanelReply("trio", "short", (unknown, free), cost_complete=False)))
    assert bench["seats"][0]["costUsd"] is None
    assert bench["seats"][1]["costUsd"] == 0
    assert bench["costUsd"] == 0 and bench["costComplete"] is False
    assert read_panel(bench).seats[0].cost_usd is None
    # A route turn says its cost once it has ended, not while it streams.
    assert "costUsd" not in route_json(RouteBench("agents", "code", "c_1", "alpha"))
    ended = route_json(RouteBench("agents", "code", "c_1", "alpha", cost_usd=0.25, cost_complete=True))
    assert (ended["costUsd"], ended["costComplete"]) == (0.25, True)


def test_the_documented_bench_objects_read_strictly() -> None:
    for page in ("README.md", "docs/api.md"):
        panel = _doc_json(page, '"seats": [')
        assert panel_json(read_panel(panel)) == panel
    route = _doc_json("docs/route-mode.md", '"mode": "route"')
    assert route_json(read_route(route)) == route


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (lambda b: b.pop("shape"), r"^bench: the key 'shape' is missing$"),
        (lambda b: b.update(collection="trio"), r"^bench\.collection: expected bench/<name>, got 'trio'$"),
        (lambda b: b["seats"][0].update(status="fine"), r"^bench\.seats\[0\]\.status: expected one of ok, "),
        (
            lambda b: b["seats"][0].update(seconds=True),
            r"^bench\.seats\[0\]\.seconds: expected a number, got a boolean$",
        ),
        (
            lambda b: b["seats"][0].update(seconds="1"),
            r"^bench\.seats\[0\]\.seconds: expected a number, got a string$",
        ),
        (
            lambda b: b["seats"][0]["usage"].update(inputTokens=1.5),
            r"^bench\.seats\[0\]\.usage\.inputTokens: expected an integer",
        ),
        (
            lambda b: b["seats"][0].update(explorer="yes"),
            r"^bench\.seats\[0\]\.explorer: expected true or false",
        ),
        (lambda b: b.update(seats={}), r"^bench\.seats: expected an array, got an object$"),
        (
            lambda b: b["seats"][0].update(output={"kind": "xml", "valid": True, "error": ""}),
            r"^bench\.seats\[0\]\.output\.kind: expected one of json_object, json_schema, got 'xml'$",
        ),
        (
            lambda b: b["seats"][0].update(output={"kind": "json_object", "valid": 1, "error": ""}),
            r"^bench\.seats\[0\]\.output\.valid: expected true or false",
        ),
        (
            lambda b: b["seats"][0].update(costUsd="0.1"),
            r"^bench\.seats\[0\]\.costUsd: expected a number or null, got a string$",
        ),
        (lambda b: b.update(costComplete=1), r"^bench\.costComplete: expected true or false"),
        (lambda b: b["leftOff"].append("tiny"), r"^bench\.leftOff\[0\]: expected an object, got a string$"),
        (
            lambda b: b["merged"]["agreement"][0].update(heldBy=[1]),
            r"^bench\.merged\.agreement\[0\]\.heldBy\[0\]: expected a string",
        ),
        (
            lambda b: b["merged"].update(report={**REPORT, "confidence": 2}),
            r"^bench\.merged\.report\.confidence: expected a number from 0 to 1",
        ),
        (
            lambda b: b["merged"].update(
                report={**REPORT, "unique": [{"point": "p", "seat": "A", "right": 1}]}
            ),
            r"^bench\.merged\.report\.unique\[0\]\.right: expected true, false or null",
        ),
        (
            lambda b: b["seats"][0].update(finish="tired"),
            r"^bench\.seats\[0\]\.finish: expected one of stop, length, ",
        ),
        (lambda b: b["merged"].update(finish=None), r"^bench\.merged\.finish: expected a string, got null$"),
        (
            lambda b: b.update(cut={"reason": "bored", "quorum": 1, "deadline": 0, "background": False}),
            r"^bench\.cut\.reason: expected quorum or deadline",
        ),
    ],
)
def test_a_wrong_bench_object_names_the_place(change: Any, message: str) -> None:
    seat = Seat("c_1", "Seat 1", "alpha", "ok", 1.0, "hi")
    merged = Merged("c_2", "beta", "ok", 2.0, agreement=(AgreementPoint("x", ("Seat 1",)),))
    bench = over_the_wire(panel_json(PanelReply("trio", "short", (seat,), merged=merged)))
    change(bench)
    with pytest.raises(BadBenchObject, match=message):
        read_panel(bench)


def test_keys_a_newer_server_adds_are_passed_over() -> None:
    seat = Seat("c_1", "Seat 1", "alpha", "ok", 1.0, "hi")
    bench = {**panel_json(PanelReply("trio", "short", (seat,))), "futureKey": 1}
    assert read_panel(bench) == PanelReply("trio", "short", (seat,))


def test_a_route_object_must_say_route() -> None:
    bench = route_json(RouteBench("agents", "code", "c_1", "alpha"))
    with pytest.raises(BadBenchObject, match=r"^bench\.mode: expected 'route', got 'panel'$"):
        read_route({**bench, "mode": "panel"})


def test_the_header_leaves_the_answers_out_past_its_budget() -> None:
    seat = Seat("c_1", "Seat 1", "alpha", "ok", 1.0, "x" * BENCH_HEADER_BUDGET)
    merged = Merged("c_2", "beta", "ok", 2.0, "y")
    header = json.loads(bench_header(PanelReply("trio", "short", (seat,), merged=merged))["x-bench"])
    assert header["contentOmitted"] is True
    assert "content" not in header["seats"][0] and "content" not in header["merged"]
    assert header["seats"][0]["call"] == "c_1"
    small = json.loads(
        bench_header(PanelReply("trio", "short", (Seat("c_1", "Seat 1", "a", "ok", 1.0, "hi"),)))["x-bench"]
    )
    assert "contentOmitted" not in small and small["seats"][0]["content"] == "hi"


def test_the_header_leaves_a_long_report_out_when_the_answers_were_not_enough() -> None:
    """A merger's long report (and the agreement map built from it) stayed
    in the header with the answers left out, past what proxies take."""
    seat = Seat("c_1", "Seat 1", "alpha", "ok", 1.0, "x")
    report = MergeReport(consensus=tuple("a point everyone made, said at length " * 4 for _ in range(80)))
    agreement = (AgreementPoint("the sky is blue", ("Seat 1",)),)
    merged = Merged("c_2", "beta", "ok", 2.0, "y", agreement=agreement, report=report)
    header = bench_header(PanelReply("trio", "short", (seat,), merged=merged))["x-bench"]
    assert len(header) <= BENCH_HEADER_BUDGET
    read = json.loads(header)
    assert read["contentOmitted"] is True and read["reportOmitted"] is True
    assert "report" not in read["merged"] and "agreement" not in read["merged"]
    assert read["merged"]["call"] == "c_2" and read["seats"][0]["call"] == "c_1"
