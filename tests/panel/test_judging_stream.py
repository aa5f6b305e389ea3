"""A person's panel through the dashboard's stream (`POST /ui/api/ask`):
each seat's text arrives as it is written, closing the stream stops the
seats still answering (upstream too) and they are logged `cancelled`, not
judgeable; a follow-up turn reaches exactly the seats named, with the
history."""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx

from benchwarmers.dashboard import auth
from benchwarmers.testing.fake_provider import FakeProvider
from benchwarmers.testing.live_server import settle_logs
from benchwarmers.testing.script import FakeError, FakeModel
from tests.waiting import wait_for

# The slow seat writes a word every 0.1 s for 20 s: stopped long before its end.
SLOW_ANSWER = " ".join(f"word{n}" for n in range(200))
MODELS = [
    FakeModel("fast", answer="fast has three words"),
    FakeModel("mid", answer="mid has four words too"),
    FakeModel("slow", answer=SLOW_ANSWER, tokens_per_second=10),
]
TRIO = {"trio": {"members": ["fast", "mid", "slow"]}}


@contextmanager
def dashboard(server: Any) -> Iterator[httpx.Client]:
    with httpx.Client(base_url=server.url, timeout=60) as client:
        client.get("/endpoints")
        client.headers["x-csrf-token"] = client.cookies[auth.CSRF_COOKIE]
        yield client


def call_rows(home: Path) -> dict[str, dict[str, Any]]:
    settle_logs()
    with sqlite3.connect(home / "benchwarmers.db") as db:
        db.row_factory = sqlite3.Row
        return {row["id"]: dict(row) for row in db.execute("SELECT * FROM calls")}


def test_text_streams_per_seat_and_stop_cancels_the_slow_seat(
    panel_server: Any, fake_provider: FakeProvider
) -> None:
    with panel_server(MODELS, TRIO) as server, dashboard(server) as ui:
        events: list[dict[str, Any]] = []
        with ui.stream("POST", "/ui/api/ask", json={"collection": "trio", "prompt": "go"}) as reply:
            assert reply.status_code == 200
            for line in reply.iter_lines():
                if not line.strip():
                    continue
                events.append(json.loads(line))
                done = {e["seat"]["alias"] for e in events if e["event"] == "seat"}
                slow_text = [e for e in events if e["event"] == "seat_text" and e["alias"] == "slow"]
                if done == {"fast", "mid"} and len(slow_text) >= 2:
                    break  # the page's stop button: the stream is closed mid-panel
        started = events[0]
        assert started["event"] == "started" and started["ask"]
        calls = {s["alias"]: s["call"] for s in started["seats"]}
        assert set(calls) == {"fast", "mid", "slow"} and all(c.startswith("c_") for c in calls.values())
        for alias in ("fast", "mid"):
            texts = [i for i, e in enumerate(events) if e["event"] == "seat_text" and e["alias"] == alias]
            (seat_at,) = [
                i for i, e in enumerate(events) if e["event"] == "seat" and e["seat"]["alias"] == alias
            ]
            assert texts and max(texts) < seat_at, "its text came before the seat was done"
            written = "".join(events[i]["text"] for i in texts)
            assert written == events[seat_at]["seat"]["content"]
            assert {events[i]["call"] for i in texts} == {calls[alias]}
        partial = "".join(e["text"] for e in events if e["event"] == "seat_text" and e["alias"] == "slow")
        assert partial and SLOW_ANSWER.startswith(partial) and partial != SLOW_ANSWER

        # The upstream saw the slow seat's connection closed, and the seat is logged cancelled.
        assert wait_for(lambda: ("closed", "slow") in fake_provider.timeline)
        row = wait_for(lambda: call_rows(server.home).get(calls["slow"]))
        assert row is not None and row["status"] == "cancelled" and row["ask_id"] == started["ask"]
        assert ("answered", "slow") not in fake_provider.timeline
        # Not judgeable: not pending, and no pair names it.
        pending = httpx.post(f"{server.url}/bench/pending", json={"calls": list(calls.values())}).json()
        assert pending == {"pending": [calls["fast"], calls["mid"]]}
        refused = httpx.post(
            f"{server.url}/bench/verdict", json={"better": calls["fast"], "worse": calls["slow"]}
        )
        assert refused.status_code == 400 and "cancelled" in refused.json()["error"]["message"]
        alone = httpx.post(f"{server.url}/bench/verdict", json={"call": calls["slow"], "useful": False})
        assert alone.status_code == 400 and "cancelled" in alone.json()["error"]["message"]


def test_a_follow_up_reaches_exactly_the_seats_named_with_the_history(
    panel_server: Any, fake_provider: FakeProvider
) -> None:
    models = [FakeModel(alias, answer=f"{alias} answer") for alias in ("fast", "mid", "slow")]
    with panel_server(models, TRIO) as server, dashboard(server) as ui:
        body = {
            "collection": "trio",
            "messages": [
                {"role": "user", "content": "first question"},
                {"role": "assistant", "content": "the answer chosen"},
            ],
            "prompt": "and then?",
            "seats": ["mid", "fast"],
        }
        with ui.stream("POST", "/ui/api/ask", json=body) as reply:
            events = [json.loads(line) for line in reply.iter_lines() if line.strip()]
        assert [s["alias"] for s in events[0]["seats"]] == ["mid", "fast"]
        assert events[-1]["event"] == "done"
        assert fake_provider.calls["slow"] == 0
        for alias in ("mid", "fast"):
            asked = fake_provider.last(alias)
            assert [(m.role, m.text) for m in asked.messages] == [
                ("user", "first question"),
                ("assistant", "the answer chosen"),
                ("user", "and then?"),
            ]

        refusals = {
            "an assistant turn last": {
                "collection": "trio",
                "messages": [{"role": "assistant", "content": "x"}],
            },
            "a bad role": {
                "collection": "trio",
                "messages": [{"role": "tool", "content": "x"}],
                "prompt": "y",
            },
            "no content": {"collection": "trio", "messages": [{"role": "user"}]},
            "an unknown seat": {"collection": "trio", "prompt": "y", "seats": ["ghost"]},
        }
        for case, refused_body in refusals.items():
            refused = ui.post("/ui/api/ask", json=refused_body)
            assert refused.status_code in (400, 404), case
            assert refused.json()["error"]["field"] in ("messages", "seats"), case

        # A seat taken off the bench since the turn before is left off, saying so: the others answer
        # (the whole follow-up was a 404 naming it, on a blind page too).
        body = {"collection": "trio", "prompt": "and after that?", "seats": ["fast", "ghost", "mid"]}
        with ui.stream("POST", "/ui/api/ask", json=body) as reply:
            assert reply.status_code == 200
            events = [json.loads(line) for line in reply.iter_lines() if line.strip()]
        assert [s["alias"] for s in events[0]["seats"]] == ["fast", "mid"]
        assert events[0]["left_off"] == [{"alias": "ghost", "reason": "no longer on the bench"}]
        assert [e["seat"]["status"] for e in events if e["event"] == "seat"] == ["ok", "ok"]


def test_a_blind_ask_names_no_model_in_what_the_page_fetches_until_judged(
    panel_server: Any, fake_provider: FakeProvider
) -> None:
    """The page hid a blind ask's names, but its stream named every seat's
    model (`alias`, the members' order in `seat`, a provider's error, the
    price), and a verdict's answer named the model judged: any reader of the
    page's requests saw them. Now seats are handles (a call id) until the
    ask is judged, and `POST /ui/api/names` tells them then."""
    models = [
        FakeModel("fast", answer="one answer"),
        FakeModel("mid", answer="another answer"),
        FakeModel("slow", error=FakeError(404, "no such model: slow")),
    ]
    blind = {"trio": {"members": ["fast", "mid", "slow"], "blind": True}}
    with panel_server(models, blind) as server, dashboard(server) as ui:

        def ask(body: dict[str, Any]) -> tuple[str, list[dict[str, Any]]]:
            with ui.stream("POST", "/ui/api/ask", json={"collection": "trio", **body}) as reply:
                assert reply.status_code == 200
                raw = reply.read().decode()
            return raw, [json.loads(line) for line in raw.splitlines() if line.strip()]

        raw, events = ask({"prompt": "which?"})
        assert not any(name in raw for name in ("fast", "mid", "slow", "Seat 1", "costUsd"))
        handles = [s["alias"] for s in events[0]["seats"]]
        assert handles == [s["call"] for s in events[0]["seats"]] == [s["seat"] for s in events[0]["seats"]]
        done = {e["seat"]["alias"]: e["seat"] for e in events if e["event"] == "seat"}
        failed = next(h for h, seat in done.items() if seat["status"] == "error")
        assert done[failed]["error"] == "hidden until the names are shown"
        answered = [h for h in handles if h != failed]

        # A verdict names no model; the names wait for every answer judged (or a pair).
        said = ui.post("/ui/api/verdict", json={"call": answered[0], "useful": True, "blind": True})
        assert said.status_code == 200 and "alias" not in said.text and "record" not in said.json()
        assert ui.post("/ui/api/names", json={"calls": handles}).json() == {
            "calls": {},
            "asks": {},
            "merges": {},
        }
        # Recent asks (the Collections page) name no model of it either, nor its error.
        listed = ui.get("/ui/api/asks")
        assert not any(name in listed.text for name in ("fast", "mid", "slow"))
        seats = listed.json()["asks"][0]["seats"]  # by call, not in the members' order
        assert [(s["alias"], s["seat"]) for s in seats] == [(h, h) for h in sorted(handles)]
        assert listed.json()["asks"][0]["hidden"] is True
        pair = {"better": answered[1], "worse": answered[0], "blind": True}
        said = ui.post("/ui/api/verdict", json=pair)
        assert said.status_code == 200 and "Alias" not in said.text
        named = ui.post("/ui/api/names", json={"calls": handles}).json()
        assert sorted(n["alias"] for n in named["calls"].values()) == ["fast", "mid", "slow"]
        assert named["calls"][failed]["error"].endswith("no such model: slow")
        assert list(named["asks"].values()) == [{"costUsd": 0, "costComplete": False}]
        (judged,) = ui.get("/ui/api/asks").json()["asks"]
        assert "hidden" not in judged and {s["alias"] for s in judged["seats"]} == {"fast", "mid", "slow"}

        # A follow-up names its seats (and a seat's own thread) by their handles, and they keep them.
        history = [{"role": "user", "content": "which?"}, {"role": "assistant", "content": "one"}]
        own = [{"role": "user", "content": "which?"}, {"role": "assistant", "content": "its own"}]
        threads = {answered[0]: own, answered[1]: history}
        raw, again = ask({"messages": history, "prompt": "and now?", "seats": answered, "threads": threads})
        assert sorted(s["alias"] for s in again[0]["seats"]) == sorted(answered)
        first_model = named["calls"][answered[0]]["alias"]
        assert [m.text for m in fake_provider.last(first_model).messages] == ["which?", "its own", "and now?"]
        assert not any(name in raw for name in ("fast", "mid", "slow"))
        second_model = named["calls"][answered[1]]["alias"]
        assert [m.text for m in fake_provider.last(second_model).messages] == ["which?", "one", "and now?"]
        # Unticked on the page, the same collection's ask names its models.
        raw, shown = ask({"prompt": "named?", "blind": False})
        assert {s["alias"] for s in shown[0]["seats"]} == {"fast", "mid", "slow"}
        refused = ui.post("/ui/api/names", json={"calls": "c_x"})
        assert refused.status_code == 200  # a name given as text is one name (`names`), unknown: none
        many = ui.post("/ui/api/names", json={"calls": [f"c_{n}" for n in range(1001)]})
        assert many.status_code == 400 and many.json()["error"]["field"] == "calls"


def test_an_ask_the_toggle_made_blind_is_hidden_in_recent_asks_until_judged(
    panel_server: Any, fake_provider: FakeProvider
) -> None:
    """The page's Blind toggle changes one ask from its collection's setting,
    but nothing stored it: Recent asks (and the Ask page's own poll of them)
    named the models of an ask asked blind in a collection that is not at
    once, before it was judged. Its calls now say so (`calls.blind`, only
    where it differs from the collection), and an ask unticked in a blind
    collection shows its names likewise."""
    models = [FakeModel("fast", answer="one answer"), FakeModel("mid", answer="another answer")]
    both = {"open": {"members": ["fast", "mid"]}, "shut": {"members": ["fast", "mid"], "blind": True}}
    with panel_server(models, both) as server, dashboard(server) as ui:

        def ask(collection: str, blind: bool) -> list[str]:
            body = {"collection": collection, "prompt": "which?", "blind": blind}
            with ui.stream("POST", "/ui/api/ask", json=body) as reply:
                assert reply.status_code == 200
                events = [json.loads(line) for line in reply.iter_lines() if line.strip()]
            return [s["call"] for s in events[0]["seats"]]

        def listed(collection: str) -> dict[str, Any]:
            """The collection's one ask, once its calls are committed (behind the reply)."""
            page = wait_for(lambda: ui.get("/ui/api/asks", params={"collection": collection}).json()["asks"])
            assert len(page) == 1
            return dict(page[0])

        asked_blind = ask("open", True)
        hidden = listed("open")
        assert hidden["hidden"] is True and hidden["blind"] is True
        assert {s["alias"] for s in hidden["seats"]} == set(asked_blind)
        assert not any(name in ui.get("/ui/api/asks").text for name in ("fast", "mid"))
        shown = ask("shut", False)
        unticked = listed("shut")
        assert "hidden" not in unticked and unticked["blind"] is False
        assert {s["alias"] for s in unticked["seats"]} == {"fast", "mid"}
        rows = call_rows(server.home)
        assert {rows[c]["blind"] for c in asked_blind} == {1} and {rows[c]["blind"] for c in shown} == {0}

        # Judged (a verdict on each answer), its names show, as a blind collection's ask's do.
        for call in asked_blind:
            said = ui.post("/ui/api/verdict", json={"call": call, "useful": True, "blind": True})
            assert said.status_code == 200
        judged = listed("open")
        assert "hidden" not in judged and {s["alias"] for s in judged["seats"]} == {"fast", "mid"}

        # Ticked as its collection says, nothing is stored: the ask follows the collection.
        ask("open", False)
        ask("shut", True)

        def four() -> list[dict[str, Any]] | None:
            asks: list[dict[str, Any]] = ui.get("/ui/api/asks").json()["asks"]
            return asks if len(asks) == 4 else None

        newest = {a["collection"]: a for a in wait_for(four)[:2]}
        assert "blind" not in newest["open"] and "hidden" not in newest["open"]
        assert "blind" not in newest["shut"] and newest["shut"]["hidden"] is True
