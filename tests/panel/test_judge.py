"""Judge verdicts over a real server, the fake provider as the judge: on a
collection that opts in, a model that did not sit compares the answers
after the reply (blind) and its pairs are stored as kind "judge"; off, no
judge is asked; the judge is never a seat; a judge that fails or answers
nonsense stores nothing and fails nothing."""

from __future__ import annotations

import json
import re
import sqlite3
from pathlib import Path
from typing import Any

import httpx
import pytest

from benchwarmers.identity.keys import create_key
from benchwarmers.panel import judge
from benchwarmers.testing.fake_provider import FakeProvider
from benchwarmers.testing.script import FakeError, FakeModel, FakeRequest
from tests.waiting import wait_for

pytestmark = pytest.mark.integration


def prefers(word: str) -> Any:
    """A judge that finds the seat whose answer says `word` and says it is
    better than every other (by the letters it was shown)."""

    def answer(request: FakeRequest) -> str:
        seats = dict(re.findall(r"## Seat ([A-Z])\n\n(\S+)", request.prompt))
        best = next(letter for letter, text in seats.items() if text == word)
        pairs = [{"a": best, "b": other, "verdict": "A"} for other in sorted(seats) if other != best]
        return "```json\n" + json.dumps({"pairs": pairs}) + "\n```"

    return answer


def ask(base: str, collection: str) -> dict[str, Any]:
    reply = httpx.post(
        f"{base}/v1/chat/completions",
        json={"model": f"bench/{collection}", "messages": [{"role": "user", "content": "which is it?"}]},
        timeout=60,
    )
    assert reply.status_code == 200, reply.text
    return reply.json()["bench"]


def rows(home: Path, query: str) -> list[tuple[Any, ...]]:
    with sqlite3.connect(home / "benchwarmers.db") as db:
        return db.execute(query).fetchall()


def pairs(home: Path) -> list[tuple[Any, ...]]:
    return rows(
        home, "SELECT better_alias, worse_alias, outcome, kind, collection FROM pair_verdicts ORDER BY id"
    )


def judge_calls(home: Path) -> list[tuple[Any, ...]]:
    return rows(home, "SELECT alias, status, ask_id, collection FROM calls WHERE kind = 'judge' ORDER BY at")


def test_a_judge_outside_the_panel_stores_its_pairs_as_kind_judge(
    panel_server: Any, fake_provider: FakeProvider
) -> None:
    models = [
        FakeModel("alpha-model", answer="first"),
        FakeModel("beta-model", answer="second"),
        FakeModel("gamma-model", answer="third"),
        FakeModel("referee", answer=prefers("second")),
    ]
    collections = {
        # The merger sits on this panel: it is not the judge; the bench's referee is.
        "trio": {
            "members": ["alpha-model", "beta-model", "gamma-model"],
            "merger": "alpha-model",
            "judge_verdicts": True,
        },
        "quiet": {"members": ["alpha-model", "beta-model"]},
    }
    with panel_server(models, collections) as server:
        quiet = ask(server.url, "quiet")  # off: nobody judges it
        bench = ask(server.url, "trio")
        seats = {s["alias"] for s in bench["seats"]}
        assert seats == {"alpha-model", "beta-model", "gamma-model"}
        stored = wait_for(lambda: len(pairs(server.home)) == 2 and pairs(server.home))
        assert sorted(stored) == [
            ("beta-model", "alpha-model", "better", "judge", "trio"),
            ("beta-model", "gamma-model", "better", "judge", "trio"),
        ]
        (call,) = judge_calls(server.home)
        assert call[0] == "referee" and call[0] not in seats
        # Counted like any call: the usage ledger has it.
        wait_for(lambda: rows(server.home, "SELECT requests FROM usage_ledger WHERE served = 'referee'"))
        assert rows(server.home, "SELECT requests FROM usage_ledger WHERE served = 'referee'") == [(1,)]
        seat_asks = rows(
            server.home, "SELECT DISTINCT ask_id FROM calls WHERE kind = 'seat' AND collection = 'trio'"
        )
        assert call[1:] == ("ok", seat_asks[0][0], "trio")
        # Blind: the judge was shown seat letters and answers, never a model's name.
        (asked,) = [r for r in fake_provider.requests if r.model == "referee"]
        shown = asked.system + asked.prompt
        assert "Seat A" in shown and "second" in shown
        assert not any(name in shown for name in ("alpha-model", "beta-model", "gamma-model"))
        # The quiet collection's ask came first and no judge was asked for it.
        assert quiet["collection"] == "bench/quiet"
        assert [c[3] for c in judge_calls(server.home)] == ["trio"]
        # People's pairs are theirs alone: the judge's do not show as the person's.
        people = httpx.get(f"{server.url}/bench/leaderboard", params={"collection": "bench/trio"}).json()
        assert all(m["pairs"]["wins"] == 0 for m in people["models"])
        assert people["judge"]["verdicts"] == 2 and people["judge"]["on"] is True
        assert people["judge"]["compared"] == 0
        # A person compares one of the same pairs and agrees: the board shows the agreement.
        call_of = {s["alias"]: s["call"] for s in bench["seats"]}
        mine = {"better": call_of["beta-model"], "worse": call_of["alpha-model"]}
        assert httpx.post(f"{server.url}/bench/verdict", json=mine).status_code == 200
        board = httpx.get(f"{server.url}/bench/leaderboard", params={"collection": "bench/trio"}).json()
        assert (board["judge"]["agreed"], board["judge"]["compared"]) == (1, 1)
        assert board["judge"]["summary"].startswith("judge agreement 1/1, weight ")
        assert board["judge"]["weight"] > people["judge"]["weight"]
        page = httpx.get(f"{server.url}/leaderboard", params={"collection": "trio"})
        assert page.status_code == 200 and board["judge"]["summary"] in page.text


def test_off_no_judge_is_asked(panel_server: Any, fake_provider: FakeProvider) -> None:
    models = [
        FakeModel("alpha-model", answer="first"),
        FakeModel("beta-model", answer="second"),
        FakeModel("referee", answer=prefers("second")),
    ]
    collections = {
        "pair": {"members": ["alpha-model", "beta-model"]},
        "judged": {"members": ["alpha-model", "beta-model"], "judge_verdicts": True},
    }
    with panel_server(models, collections) as server:
        ask(server.url, "pair")
        ask(server.url, "pair")
        ask(server.url, "judged")  # judged after the two: its pair shows the background work has run
        wait_for(lambda: pairs(server.home))
        assert pairs(server.home) == [("beta-model", "alpha-model", "better", "judge", "judged")]
        assert [c[3] for c in judge_calls(server.home)] == ["judged"]
        assert [r.model for r in fake_provider.requests].count("referee") == 1


def test_a_failing_or_unreadable_judge_stores_nothing_and_fails_nothing(panel_server: Any) -> None:
    models = [
        FakeModel("alpha-model", answer="first"),
        FakeModel("beta-model", answer="second"),
        FakeModel("broken", error=FakeError()),
        FakeModel("rambler", answer="Seat A is better, I think, but Seat B has its moments."),
        FakeModel("referee", answer=prefers("second")),
    ]
    collections = {
        "down": {"members": ["alpha-model", "beta-model"], "merger": "broken", "judge_verdicts": True},
        "prose": {"members": ["alpha-model", "beta-model"], "merger": "rambler", "judge_verdicts": True},
        "fine": {"members": ["alpha-model", "beta-model"], "merger": "referee", "judge_verdicts": True},
    }
    with panel_server(models, collections) as server:
        for name in ("down", "prose"):
            bench = ask(server.url, name)
            assert [s["status"] for s in bench["seats"]] == ["ok", "ok"]
        ask(server.url, "fine")
        wait_for(lambda: len(judge_calls(server.home)) == 3 and pairs(server.home))
        calls = {c[3]: c for c in judge_calls(server.home)}
        assert calls["down"][0] == "broken" and calls["down"][1] != "ok"
        assert calls["prose"][:2] == ("rambler", "ok")
        assert pairs(server.home) == [("beta-model", "alpha-model", "better", "judge", "fine")]


def test_a_panel_with_one_answer_is_not_judged(panel_server: Any, fake_provider: FakeProvider) -> None:
    models = [
        FakeModel("alpha-model", answer="first"),
        FakeModel("down-model", error=FakeError()),
        FakeModel("referee", answer=prefers("first")),
        FakeModel("beta-model", answer="second"),
    ]
    collections = {
        "half": {"members": ["alpha-model", "down-model"], "judge_verdicts": True},
        "whole": {"members": ["alpha-model", "beta-model"], "merger": "referee", "judge_verdicts": True},
    }
    with panel_server(models, collections) as server:
        ask(server.url, "half")
        ask(server.url, "whole")
        wait_for(lambda: pairs(server.home))
        assert [c[3] for c in judge_calls(server.home)] == ["whole"]


def _two_seats_and_a_referee() -> tuple[list[FakeModel], dict[str, Any]]:
    """Two seats and a judge (also the merger) that prefers the second's answer."""
    models = [
        FakeModel("alpha-model", answer="first"),
        FakeModel("beta-model", answer="second"),
        FakeModel("referee", answer=prefers("second")),
    ]
    collections = {
        "judged": {"members": ["alpha-model", "beta-model"], "merger": "referee", "judge_verdicts": True}
    }
    return models, collections


def test_the_judges_call_is_the_asking_keys_like_its_seats(panel_server: Any) -> None:
    """The judge's call is logged under the gateway key that asked, as the
    seats' and the merger's are: usage by key (and a key limited to its
    collections, reading its own usage) counts what the judge cost it."""
    models, collections = _two_seats_and_a_referee()

    async def make_key(runtime: Any) -> str:
        return (await create_key(runtime.store, "agent", collections=("judged",)))[1]

    with panel_server(models, collections, then=make_key) as server:
        reply = httpx.post(
            f"{server.url}/v1/chat/completions",
            headers={"authorization": f"Bearer {server.prepared}"},
            json={"model": "bench/judged", "messages": [{"role": "user", "content": "which is it?"}]},
            timeout=60,
        )
        assert reply.status_code == 200, reply.text
        wait_for(lambda: judge_calls(server.home) and pairs(server.home))
        keys = rows(server.home, "SELECT kind, gateway_key FROM calls ORDER BY kind")
        assert keys == [("judge", "agent"), ("seat", "agent"), ("seat", "agent")]
        usage = httpx.get(
            f"{server.url}/bench/usage",
            params={"by": "model"},
            headers={"authorization": f"Bearer {server.prepared}"},
        ).json()
        assert {row["group"]: row["calls"] for row in usage["rows"]}["referee"] == 1


def test_a_judge_without_structured_output_is_asked_in_its_prompt(
    panel_server: Any, fake_provider: FakeProvider
) -> None:
    """A model marked as not answering in JSON natively judges as it merges:
    asked for the JSON in its system prompt, not its API's setting. It was
    passed over as unfit (the judge's request asks for structured output),
    so a bench of such models had no judge at all."""
    models, collections = _two_seats_and_a_referee()
    with panel_server(models, collections, {"referee": {"structured_output": False}}) as server:
        ask(server.url, "judged")
        wait_for(lambda: pairs(server.home))
        assert pairs(server.home) == [("beta-model", "alpha-model", "better", "judge", "judged")]
        (asked,) = [r for r in fake_provider.requests if r.model == "referee"]
        assert asked.output is None and "response_format" not in asked.body
        assert "valid against this JSON Schema" in asked.system


def test_the_judges_answer_is_read_leniently_and_wrong_pairs_passed_over() -> None:
    labels = {"A": "Seat 2", "B": "Seat 1", "C": "Seat 3"}
    answer = """Here is my judgement:
    ```json
    {"pairs": [{"a": "Seat A", "b": "b", "verdict": "B"},
               {"a": "A", "b": "C", "verdict": "tie"},
               {"a": "B", "b": "C", "verdict": "both bad"},
               {"a": "A", "b": "B", "verdict": "A"},
               {"a": "A", "b": "A", "verdict": "A"},
               {"a": "A", "b": "Z", "verdict": "A"},
               {"a": "B", "b": "C", "verdict": "maybe"},],}
    ```"""
    assert judge.parse_judgement(answer, labels) == [
        ("better", "Seat 1", "Seat 2"),  # b (Seat 1) over a (Seat 2)
        ("tie", "Seat 2", "Seat 3"),
        ("both_bad", "Seat 1", "Seat 3"),
        # A-B again, A against itself, an unknown letter, an unknown verdict: passed over.
    ]
    assert judge.parse_judgement('{"pairs": [{"a": "C", "b": "A", "verdict": "C"}]}', labels) == [
        ("better", "Seat 3", "Seat 2")  # the winner named by its own letter
    ]
    # A reasoning judge's leading think block, braces and all, is its working, not its verdicts.
    thought = '<think>Is {"a": "A"} fair? A-C: C.</think>\n{"pairs": [{"a": "A", "b": "C", "verdict": "B"}]}'
    assert judge.parse_judgement(thought, labels) == [("better", "Seat 3", "Seat 2")]
    for unreadable in ("Seat A is better.", "", '{"pairs": "A"}', "[1, 2]", '{"pairs": [{"a": "A"}]}'):
        assert judge.parse_judgement(unreadable, labels) == []


def test_the_judge_is_shown_letters_and_asked_for_json() -> None:
    from benchwarmers.panel.merge import anonymise
    from benchwarmers.types import Request, Seat, user

    seats = [
        Seat("c1", "Seat 1", "alpha-model", "ok", 1.0, "first"),
        Seat("c2", "Seat 2", "beta-model", "ok", 1.0, "second"),
    ]
    asked = judge.judge_request(Request(messages=(user("which?"),)), anonymise(seats))
    text = asked.messages[0].text
    assert "## Seat A" in text and "## Seat B" in text and "which?" in text and "A-B" in text
    assert "alpha-model" not in text + asked.system and "beta-model" not in text + asked.system
    assert asked.output == judge.JUDGE_OUTPUT and asked.output.kind == "json_schema"


def test_a_member_that_did_not_sit_judges_before_the_rest_of_the_bench(panel_server: Any) -> None:
    models = [
        FakeModel("alpha-model", answer="first"),
        FakeModel("beta-model", answer="second"),
        FakeModel("bench-referee", answer=prefers("first")),
        FakeModel("member-referee", answer=prefers("first")),
    ]
    members = ["alpha-model", "beta-model", "member-referee"]
    with panel_server(models, {"capped": {"members": members, "seats": 2, "judge_verdicts": True}}) as server:
        seats = {s["alias"] for s in ask(server.url, "capped")["seats"]}
        assert len(seats) == 2
        wait_for(lambda: judge_calls(server.home))
        (call,) = judge_calls(server.home)
        assert call[0] not in seats
        assert call[0] == next(m for m in members if m not in seats)  # a member, not the bench's referee
