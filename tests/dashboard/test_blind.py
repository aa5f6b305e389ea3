"""A blind ask's stream as the page may see it (`dashboard/blind.py`): each
seat a handle, a follow-up's seats the handles they had, a merger's
citations handles too, and nothing that tells a model (a provider's error,
a note, a price) until the names are asked for. Over HTTP:
tests/panel/test_judging_stream.py."""

from __future__ import annotations

import pytest

from benchwarmers.dashboard.blind import ERROR_HIDDEN, Blinder, hidden_ask

pytestmark = pytest.mark.unit


def seat(label: str, alias: str, call: str, **more: object) -> dict[str, object]:
    return {"seat": label, "alias": alias, "call": call, **more}


def test_a_follow_ups_seats_keep_their_handles_and_a_new_seat_gets_its_call() -> None:
    """The seats come shuffled: in the server's order they were the members' order."""
    blinder = Blinder({"gpt-4o": "c_first"})
    started = blinder.event(
        {
            "event": "started",
            "seats": [seat("Seat 1", "gpt-4o", "c_2a"), seat("Seat 2", "claude", "c_2b")],
            "left_off": [{"alias": "gpt-4o-mini", "reason": "retired"}, {"alias": "claude", "reason": "x"}],
        }
    )
    assert sorted((s["seat"], s["alias"], s["call"]) for s in started["seats"]) == [
        ("c_2b", "c_2b", "c_2b"),
        ("c_first", "c_first", "c_2a"),
    ]
    assert started["left_off"] == [{"alias": "", "reason": "retired"}, {"alias": "c_2b", "reason": "x"}]
    text = blinder.event(
        {"event": "seat_text", "seat": "Seat 2", "alias": "claude", "call": "c_2b", "text": "hi"}
    )
    assert (text["seat"], text["alias"], text["text"]) == ("c_2b", "c_2b", "hi")
    assert blinder.hide("no model 'gpt-4o-mini' nor 'gpt-4o'") == "no model 'gpt-4o-mini' nor 'c_first'"


def test_what_tells_a_model_waits_and_a_stop_of_ours_does_not() -> None:
    orders = set()
    for _ in range(40):
        started = {"event": "started", "seats": [seat(f"Seat {n}", str(n), f"c_{n}") for n in range(4)]}
        orders.add(tuple(s["call"] for s in Blinder().event({**started, "left_off": []})["seats"]))
    assert len(orders) > 1
    blinder = Blinder()
    failed = seat("Seat 1", "gemini", "c_1", status="error", error="gemini is overloaded", costUsd=0.1)
    failed.update(usage={"inputTokens": 3}, note="max_tokens lowered", explorer=True)
    shown = blinder.event({"event": "seat", "seat": failed})["seat"]
    assert shown == {"seat": "c_1", "alias": "c_1", "call": "c_1", "status": "error", "error": ERROR_HIDDEN}
    cut = seat("Seat 2", "llama", "c_2", status="cancelled", error="cut: quorum 1 of 2 reached")
    assert blinder.event({"event": "seat", "seat": cut})["seat"]["error"] == "cut: quorum 1 of 2 reached"
    assert blinder.event({"event": "done", "costUsd": 0.2, "costComplete": True}) == {"event": "done"}


def test_a_merge_names_its_seats_by_handle_and_its_merger_not_at_all() -> None:
    blinder = Blinder()
    blinder.event(
        {
            "event": "started",
            "seats": [seat("Seat 1", "a", "c_a"), seat("Seat 2", "b", "c_b")],
            "left_off": [],
        }
    )
    assert blinder.event({"event": "merge_text", "alias": "m", "call": "c_m", "text": "x"})["alias"] == ""
    report = {
        "consensus": ["sky"],
        "contradictions": [{"point": "hue", "sides": [{"position": "blue", "seats": ["Seat 1"]}]}],
        "unique": [{"point": "haze", "seat": "Seat 2", "right": None}],
        "gaps": [],
        "confidence": 0.5,
    }
    merged = {"call": "c_m", "alias": "m", "status": "ok", "content": "both", "error": "", "costUsd": 0.1}
    merged.update(
        agreement=[{"point": "sky", "heldBy": ["Seat 1", "b"], "contradictedBy": []}], report=report
    )
    shown = blinder.event({"event": "merged", "merged": merged})["merged"]
    assert shown["alias"] == "" and "costUsd" not in shown and shown["content"] == "both"
    assert shown["agreement"] == [{"point": "sky", "heldBy": ["c_a", "c_b"], "contradictedBy": []}]
    assert shown["report"]["contradictions"][0]["sides"][0]["seats"] == ["c_a"]
    assert shown["report"]["unique"][0]["seat"] == "c_b"


def test_a_recent_ask_is_hidden_until_judged_and_one_no_seat_answered_is_not() -> None:
    def row(call: str, status: str, verdict: object = None, kind: str = "seat") -> dict[str, object]:
        seat = {"call": call, "kind": kind, "seat": "Seat 1", "alias": call.upper(), "status": status}
        return {**seat, "error": "" if status == "ok" else "X failed", "cost_usd": 0.1, "verdict": verdict}

    ask = {"ask": "a_1", "collection": "trio", "pairs": [], "seats": [row("c_a", "ok"), row("c_b", "error")]}
    hidden = hidden_ask(ask)
    assert hidden["hidden"] is True and [s["alias"] for s in hidden["seats"]] == ["c_a", "c_b"]
    assert hidden["seats"][1]["error"] == ERROR_HIDDEN and "cost_usd" not in hidden["seats"][0]
    assert (
        hidden_ask({**ask, "seats": [row("c_a", "ok", {"useful": True}), row("c_b", "error")]})["seats"][0][
            "alias"
        ]
        == "C_A"
    )
    assert hidden_ask({**ask, "pairs": [{"better": "c_a"}]}) == {**ask, "pairs": [{"better": "c_a"}]}
    nobody = {**ask, "seats": [row("c_a", "timeout"), row("c_m", "ok", kind="merge")]}
    assert hidden_ask(nobody) == nobody  # no answer to judge: named at once, as the page does
