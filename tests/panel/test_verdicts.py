"""Verdict, record and pending over HTTP, round trip from a real panel."""

from __future__ import annotations

import asyncio
import sqlite3
from pathlib import Path
from typing import Any

import httpx
import pytest

from benchwarmers.runtime import Runtime
from benchwarmers.store.collections import add_collection
from benchwarmers.store.endpoints import add_endpoint
from benchwarmers.store.models import add_model
from benchwarmers.testing.fake_provider import FakeProvider
from benchwarmers.testing.live_server import live_server
from benchwarmers.testing.script import FakeError, FakeModel


def test_verdict_record_pending_round_trip(panel_server: Any) -> None:
    models = [
        FakeModel("one", answer="first"),
        FakeModel("two", answer=""),
        FakeModel("bad", error=FakeError()),
    ]
    with panel_server(models, {"trio": {"members": ["one", "two", "bad"]}}) as server:
        base = server.url
        asked = httpx.post(
            f"{base}/v1/chat/completions",
            json={"model": "bench/trio", "messages": [{"role": "user", "content": "hi"}]},
            timeout=60,
        ).json()
        seats = {s["alias"]: s for s in asked["bench"]["seats"]}
        assert {a: s["status"] for a, s in seats.items()} == {"one": "ok", "two": "empty", "bad": "error"}
        ids = [seats["one"]["call"], seats["two"]["call"], seats["bad"]["call"], "c_unknown"]

        # Answered seats (ok or empty) with no verdict; errors and unknown ids are not pending.
        pending = httpx.post(f"{base}/bench/pending", json={"calls": ids}).json()
        assert pending == {"pending": [seats["one"]["call"], seats["two"]["call"]]}

        body = {"call": seats["one"]["call"], "useful": True, "note": "thicken slab faces"}
        first = httpx.post(f"{base}/bench/verdict", json=body)
        assert first.status_code == 200
        assert first.json()["ok"] is True
        recorded = first.json()["recorded"]
        assert recorded["alias"] == "one" and recorded["useful"] is True and recorded["changed"] is True
        again = httpx.post(f"{base}/bench/verdict", json=body).json()
        assert again["recorded"]["changed"] is False
        with sqlite3.connect(server.home / "benchwarmers.db") as db:
            assert db.execute("SELECT count(*) FROM verdicts").fetchone()[0] == 1

        record = httpx.get(f"{base}/bench/record", params={"collection": "bench/trio"}).json()
        assert record["collection"] == "bench/trio" and record["task"] == ""
        one = record["aliases"]["one"]
        assert (one["useful"], one["notUseful"], one["judged"]) == (1, 0, 1) and one["lastAt"]
        assert set(record["aliases"]) == {"one"}
        by_task = httpx.get(
            f"{base}/bench/record", params={"collection": "bench/trio", "task": "slab"}
        ).json()
        assert by_task["aliases"]["one"]["judged"] == 1
        other = httpx.get(
            f"{base}/bench/record", params={"collection": "bench/trio", "task": "kitchen"}
        ).json()
        assert other["aliases"] == {}
        assert "first" not in str(record) and "thicken" not in str(record)  # counts only

        # A changed mind replaces the verdict.
        flipped = httpx.post(
            f"{base}/bench/verdict", json={"call": seats["one"]["call"], "useful": False}
        ).json()
        assert flipped["recorded"]["changed"] is True
        record = httpx.get(f"{base}/bench/record", params={"collection": "trio"}).json()
        assert (record["aliases"]["one"]["useful"], record["aliases"]["one"]["notUseful"]) == (0, 1)

        pending = httpx.post(f"{base}/bench/pending", json={"calls": ids}).json()
        assert pending == {"pending": [seats["two"]["call"]]}


def test_bad_input_is_a_clear_4xx(panel_server: Any) -> None:
    with panel_server([FakeModel("one")], {"solo": {"members": ["one"]}}) as server:
        base = server.url
        unknown = httpx.post(f"{base}/bench/verdict", json={"call": "c_nope", "useful": True})
        assert unknown.status_code == 404 and "c_nope" in unknown.json()["error"]["message"]
        for body in ({"call": "c_x"}, {"call": "c_x", "useful": "yes"}, {"useful": True}, [1, 2]):
            response = httpx.post(f"{base}/bench/verdict", json=body)
            assert response.status_code == 400, body
        missing = httpx.get(f"{base}/bench/record")
        assert missing.status_code == 400 and "collection=bench/<name>" in missing.json()["error"]["message"]
        for body in ({}, {"calls": "c_x"}, {"calls": [1]}):
            assert httpx.post(f"{base}/bench/pending", json=body).status_code == 400
        broken = httpx.post(
            f"{base}/bench/verdict", content=b"{not json", headers={"content-type": "application/json"}
        )
        assert broken.status_code == 400


def test_route_turns_judged_are_the_verdicts_behind_the_board_as_on_the_models_page(
    panel_server: Any,
) -> None:
    """An agent in route mode judges its turns: those verdicts move the
    model's score (the rating reads route turns as answers) and the model's
    page counted them (`judged`), but the leaderboard's `verdicts` said
    0 and 0, so the board showed a moved score with nothing behind it."""
    with panel_server([FakeModel("one", answer="first")], {"solo": {"members": ["one"]}}) as server:
        base = server.url
        turns = [
            httpx.post(
                f"{base}/v1/chat/completions",
                json={"model": "bench/solo:route", "messages": [{"role": "user", "content": f"turn {i}"}]},
                timeout=60,
            ).json()["bench"]["call"]
            for i in range(3)
        ]
        for call, useful in zip(turns, (True, True, False), strict=True):
            answer = httpx.post(f"{base}/bench/verdict", json={"call": call, "useful": useful})
            assert answer.status_code == 200 and answer.json()["recorded"]["kind"] == "route"
        board = httpx.get(f"{base}/bench/leaderboard", params={"collection": "bench/solo"}).json()
        (one,) = board["models"]
        assert one["verdicts"] == {"useful": 2, "notUseful": 1}
        assert [day["score"] for day in one["trend"]] == [0.6]  # (1 + 2) / (2 + 3)
        (standing,) = httpx.get(f"{base}/ui/api/models/one").json()["record"]
        assert standing["judged"] == sum(one["verdicts"].values())
        # The record counts judged calls of the collection, route turns too (it read empty).
        record = httpx.get(f"{base}/bench/record", params={"collection": "bench/solo"}).json()
        assert {k: v for k, v in record["aliases"]["one"].items() if k != "lastAt"} == {
            "useful": 2,
            "notUseful": 1,
            "judged": 3,
        }


@pytest.mark.integration
async def test_one_seat_judged_at_once_on_two_replicas_is_one_verdict_counted_once(
    tmp_path: Path, fake_provider: FakeProvider, postgres_url: str
) -> None:
    """Two tabs, an agent's retries, two replicas behind a balancer: on
    PostgreSQL (no one writer) verdicts on one seat at once each read "no
    verdict yet" and inserted (an IntegrityError: a 500), or moved the
    model's counts from a verdict another had replaced (the rating's tally
    read useful -7, not useful 8 for one seat), or deadlocked on the counts."""
    home = tmp_path / "home"
    home.mkdir()
    async with Runtime.open(home, database_url=postgres_url) as runtime:
        await add_endpoint(runtime.store, "fake", fake_provider.openai_base, "openai", needs_key=False)
        for model in (FakeModel("one", answer="first"), FakeModel("two"), FakeModel("three")):
            fake_provider.add(model)
            await add_model(runtime.store, model.served, "fake", model.served)
        await add_collection(runtime.store, "duo", members=["one", "two", "three"])
    with (
        live_server(home, database_url=postgres_url) as first,
        live_server(home, database_url=postgres_url) as second,
    ):
        async with httpx.AsyncClient(timeout=60) as client:
            asked = await client.post(
                f"{first.url}/v1/chat/completions",
                json={"model": "bench/duo", "messages": [{"role": "user", "content": "hi"}]},
            )
            one, two, three = (s["call"] for s in asked.json()["bench"]["seats"])
            bodies = [
                {"call": (one, two)[i % 4 // 2], "useful": i % 3 == 0, "note": f"take {i}"} for i in range(24)
            ]
            # "Best of the panel" given for each seat at once: each writes two pairs of the three.
            bodies += [{"best": (one, two, three)[i % 3]} for i in range(12)]
            said = [
                client.post(f"{(first, second)[i % 2].url}/bench/verdict", json=body)
                for i, body in enumerate(bodies)
            ]
            answers = await asyncio.gather(*said)
            assert [a.status_code for a in answers] == [200] * len(bodies), [
                a.text for a in answers if a.status_code != 200
            ]
            (ask,) = (await client.get(f"{first.url}/ui/api/asks")).json()["asks"]
            assert len(ask["pairs"]) == 3  # one row per two seats, whoever won last
            record = (await client.get(f"{second.url}/bench/record", params={"collection": "duo"})).json()
            board = (await client.get(f"{first.url}/bench/leaderboard", params={"collection": "duo"})).json()
            standing = (await client.get(f"{second.url}/ui/api/models/one")).json()["record"]
    assert {alias: r["judged"] for alias, r in record["aliases"].items()} == {"one": 1, "two": 1}
    assert {m["alias"]: sum(m["verdicts"].values()) for m in board["models"]} == {
        "one": 1,
        "two": 1,
        "three": 0,
    }
    assert [s["judged"] for s in standing] == [1]


async def test_seats_judged_at_once_on_two_workers_of_one_sqlite_file_are_counted_once(
    panel_server: Any,
) -> None:
    """`serve --workers 2` on the default SQLite: each worker's one writer
    is its own, and a verdict read the call and its verdict before its
    write took the file's lock, so two workers judging one seat at once
    both inserted (a 500) or moved counts from a verdict the other had
    just replaced (the record said 3 not useful, the rating's tally 14)."""
    models = [FakeModel("one"), FakeModel("two")]
    with (
        panel_server(models, {"duo": {"members": ["one", "two"]}}) as first,
        live_server(first.home) as second,
    ):
        async with httpx.AsyncClient(timeout=60) as client:
            for _ in range(5):
                asked = await client.post(
                    f"{first.url}/v1/chat/completions",
                    json={"model": "bench/duo", "messages": [{"role": "user", "content": "hi"}]},
                )
                one, two = (s["call"] for s in asked.json()["bench"]["seats"])
                bodies = [{"call": (one, two)[i % 4 // 2], "useful": i % 3 == 0} for i in range(16)]
                said = [
                    client.post(f"{(first, second)[i % 2].url}/bench/verdict", json=body)
                    for i, body in enumerate(bodies)
                ]
                answers = await asyncio.gather(*said)
                assert [a.status_code for a in answers] == [200] * len(bodies), [a.text for a in answers]
            record = (await client.get(f"{second.url}/bench/record", params={"collection": "duo"})).json()
            standing = (await client.get(f"{second.url}/ui/api/models/one")).json()["record"]
    with sqlite3.connect(first.home / "benchwarmers.db") as db:
        tallies = dict(
            db.execute(
                "SELECT useful, count FROM verdict_tallies WHERE alias = 'one' AND count != 0"
            ).fetchall()
        )
    one = record["aliases"]["one"]
    assert one["judged"] == 5 and [s["judged"] for s in standing] == [5]
    assert tallies == {k: v for k, v in ((1, one["useful"]), (0, one["notUseful"])) if v}
