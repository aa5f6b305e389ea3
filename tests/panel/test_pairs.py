"""Pair verdicts over HTTP, from real panels: better/worse, tie, both bad,
best of the panel; the same twice writes nothing, a changed mind replaces;
bad input is a clear 4xx with nothing stored; notes read back."""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any

import httpx

from benchwarmers.identity.keys import create_key
from benchwarmers.testing.script import FakeError, FakeModel

MODELS = [
    FakeModel("one", answer="first"),
    FakeModel("two", answer="second"),
    FakeModel("three", answer=""),
    FakeModel("bad", error=FakeError()),
]
COLLECTIONS = {"quad": {"members": ["one", "two", "three", "bad"]}, "solo": {"members": ["one"]}}


def ask(base: str, collection: str = "quad", headers: dict[str, str] | None = None) -> dict[str, str]:
    """A panel's seats, alias -> call id."""
    reply = httpx.post(
        f"{base}/v1/chat/completions",
        json={"model": f"bench/{collection}", "messages": [{"role": "user", "content": "hi"}]},
        headers=headers,
        timeout=60,
    ).json()
    return {s["alias"]: s["call"] for s in reply["bench"]["seats"]}


def pair_rows(home: Path) -> list[tuple[Any, ...]]:
    with sqlite3.connect(home / "benchwarmers.db") as db:
        return db.execute(
            "SELECT better_alias, worse_alias, outcome, kind, collection, note FROM pair_verdicts ORDER BY id"
        ).fetchall()


def test_pairs_are_recorded_replaced_and_not_written_twice(panel_server: Any) -> None:
    with panel_server(MODELS, COLLECTIONS) as server:
        base = server.url
        seats = ask(base)
        body = {"better": seats["one"], "worse": seats["two"], "note": "cites the source"}
        first = httpx.post(f"{base}/bench/verdict", json=body)
        assert first.status_code == 200
        (pair,) = first.json()["recorded"]["pairs"]
        assert pair == {
            "better": seats["one"],
            "worse": seats["two"],
            "outcome": "better",
            "ask": pair["ask"],
            "betterAlias": "one",
            "worseAlias": "two",
            "note": "cites the source",
            "changed": True,
        }
        assert pair["ask"].startswith("a_") or pair["ask"]
        again = httpx.post(f"{base}/bench/verdict", json=body).json()
        assert again["recorded"]["pairs"][0]["changed"] is False
        assert pair_rows(server.home) == [("one", "two", "better", "person", "quad", "cites the source")]

        # A changed mind (the other way round, then a tie) replaces the pair: one row per pair.
        flipped = httpx.post(f"{base}/bench/verdict", json={"better": seats["two"], "worse": seats["one"]})
        assert flipped.json()["recorded"]["pairs"][0]["changed"] is True
        assert pair_rows(server.home) == [("two", "one", "better", "person", "quad", "")]
        tie = httpx.post(f"{base}/bench/verdict", json={"tie": [seats["two"], seats["one"]]}).json()
        (tied,) = tie["recorded"]["pairs"]
        assert tied["outcome"] == "tie" and [tied["better"], tied["worse"]] == sorted(
            [seats["one"], seats["two"]]
        )
        both_bad = httpx.post(
            f"{base}/bench/verdict", json={"both_bad": [seats["one"], seats["three"]]}
        ).json()
        assert both_bad["recorded"]["pairs"][0]["outcome"] == "both_bad"
        assert len(pair_rows(server.home)) == 2

        # Best of the panel: better than every other seat that answered (ok or empty), not the failed one.
        best = httpx.post(f"{base}/bench/verdict", json={"best": seats["two"], "note": "clearest"}).json()
        won = {(p["betterAlias"], p["worseAlias"], p["outcome"]) for p in best["recorded"]["pairs"]}
        assert won == {("two", "one", "better"), ("two", "three", "better")}
        rows = pair_rows(server.home)
        assert len(rows) == 3  # the tie of one and two replaced; one and three's stays
        assert {(b, w, o, n) for b, w, o, _k, _c, n in rows if o == "better"} == {
            ("two", "one", "better", "clearest"),
            ("two", "three", "better", "clearest"),
        }
        assert {frozenset((b, w)) for b, w, o, *_ in rows if o == "both_bad"} == {frozenset(("one", "three"))}

        # Notes read back: the recent asks carry the pairs, the model's page its notes.
        asks = httpx.get(f"{base}/ui/api/asks").json()
        (recent,) = [a for a in asks["asks"] if a["ask"] == pair["ask"]]
        assert {p["note"] for p in recent["pairs"]} == {"", "clearest"}
        page = httpx.get(f"{base}/ui/api/models/two").json()
        assert [n["note"] for n in page["notes"]] == ["clearest", "clearest"]
        assert {n["other"] for n in page["notes"]} == {"one", "three"}
        assert {n["side"] for n in page["notes"]} == {"better"}


def test_bad_pairs_are_a_clear_4xx_and_store_nothing(panel_server: Any) -> None:
    with panel_server(MODELS, COLLECTIONS) as server:
        base = server.url
        first, second = ask(base), ask(base)
        refused = {
            "two asks": ({"better": first["one"], "worse": second["two"]}, 400, "different asks"),
            "a call twice": ({"tie": [first["one"], first["one"]]}, 400, "named twice"),
            "better than itself": ({"better": first["two"], "worse": first["two"]}, 400, "named twice"),
            "unknown call": ({"better": first["one"], "worse": "c_nope"}, 404, "c_nope"),
            "unknown call, both bad": ({"both_bad": ["c_gone", first["one"]]}, 404, "c_gone"),
            "unknown best": ({"best": "c_none"}, 404, "c_none"),
            "failed seat": ({"better": first["one"], "worse": first["bad"]}, 400, "did not answer"),
            "no other answered": ({"best": ask(base, "solo")["one"]}, 400, "only seat"),
            "two ways at once": ({"tie": [first["one"], first["two"]], "best": first["one"]}, 400, "one way"),
            "a tie of one": ({"tie": [first["one"]]}, 400, "two call ids"),
            "no worse": ({"better": first["one"]}, 400, '"worse"'),
            "a number": ({"best": 7}, 400, '"best"'),
            "a seat's verdict too": (
                {"better": first["one"], "worse": first["two"], "useful": True},
                400,
                "not both",
            ),
            # A key the body does not take was ignored: the pair stored, the typo's meaning lost.
            "a misspelt key": ({"better": first["one"], "worse": first["two"], "nots": "x"}, 400, "'nots'"),
            "both bad spelt twice": (
                {"both_bad": [first["one"], first["two"]], "bothBad": [first["one"], first["two"]]},
                400,
                "one way at a time",
            ),
        }
        for case, (body, status, says) in refused.items():
            response = httpx.post(f"{base}/bench/verdict", json=body)
            assert response.status_code == status, case
            assert says in response.json()["error"]["message"], case
        assert pair_rows(server.home) == []


def test_both_bad_is_spelt_as_the_json_spells_it_too_and_a_verdict_takes_no_other_key(
    panel_server: Any,
) -> None:
    """The leaderboard and the asks name that outcome `bothBad`; a body
    spelt so was told '"call" must be a call id'. A seat's verdict with a
    key it does not take (`usefull`) was stored without it."""
    with panel_server(MODELS, COLLECTIONS) as server:
        base = server.url
        seats = ask(base)
        spelt = httpx.post(f"{base}/bench/verdict", json={"bothBad": [seats["one"], seats["two"]]})
        assert spelt.status_code == 200, spelt.text
        assert spelt.json()["recorded"]["pairs"][0]["outcome"] == "both_bad"
        ((better, worse, *stored),) = pair_rows(server.home)  # an unordered pair: stored in call-id order
        assert {better, worse} == {"one", "two"} and stored == ["both_bad", "person", "quad", ""]
        for body in (
            {"call": seats["three"], "useful": True, "usefull": False},
            {"call": seats["three"], "useful": True, "notes": "why"},
        ):
            refused = httpx.post(f"{base}/bench/verdict", json=body)
            assert refused.status_code == 400, body
            extra = next(k for k in body if k not in ("call", "useful"))
            assert f"'{extra}'" in refused.json()["error"]["message"]
        with sqlite3.connect(server.home / "benchwarmers.db") as db:
            assert db.execute("SELECT count(*) FROM verdicts").fetchone() == (0,)


def test_a_key_cannot_judge_another_keys_seats(panel_server: Any) -> None:
    async def keys(runtime: Any) -> dict[str, str]:
        await runtime.settings.set_named("require_key", "true")
        _info, quad = await create_key(runtime.store, "quad-only", collections=("bench/quad",))
        _info, solo = await create_key(runtime.store, "solo-only", collections=("bench/solo",))
        return {"quad": quad, "solo": solo}

    with panel_server(MODELS, COLLECTIONS, then=keys) as server:
        base = server.url
        quad = {"authorization": f"Bearer {server.prepared['quad']}"}
        solo = {"authorization": f"Bearer {server.prepared['solo']}"}
        seats = ask(base, headers=quad)
        other = httpx.post(
            f"{base}/bench/verdict", json={"better": seats["one"], "worse": seats["two"]}, headers=solo
        )
        assert other.status_code == 404 and seats["one"] in other.json()["error"]["message"]
        # Every form of pair alike: the other key's calls are not there for it.
        for body in ({"tie": [seats["one"], seats["two"]]}, {"both_bad": [seats["two"], seats["one"]]}):
            refused = httpx.post(f"{base}/bench/verdict", json=body, headers=solo)
            assert refused.status_code == 404, body
        best = httpx.post(f"{base}/bench/verdict", json={"best": seats["two"]}, headers=solo)
        assert best.status_code == 404 and seats["two"] in best.json()["error"]["message"]
        assert pair_rows(server.home) == []
        own = httpx.post(
            f"{base}/bench/verdict", json={"better": seats["one"], "worse": seats["two"]}, headers=quad
        )
        assert own.status_code == 200
        assert len(pair_rows(server.home)) == 1


def test_the_same_verdict_again_without_its_note_keeps_the_note(panel_server: Any) -> None:
    """An agent's retry, a hook firing twice, `benchwarmers verdict CALL
    --useful` said again: the same verdict without a "note" key wrote "" over
    the note given with it (changed: true), and the model's page lost it. Now
    it writes nothing; a note given (even "") is what is stored, and a
    changed verdict without a note carries none (the old note was its why)."""
    with panel_server(MODELS, COLLECTIONS) as server:
        base = server.url
        seats = ask(base)
        said = {"call": seats["one"], "useful": True, "note": "cites the source"}
        assert httpx.post(f"{base}/bench/verdict", json=said).json()["recorded"]["changed"] is True
        again = httpx.post(f"{base}/bench/verdict", json={"call": seats["one"], "useful": True}).json()
        assert (again["recorded"]["changed"], again["recorded"]["note"]) == (False, "cites the source")
        best = {"best": seats["two"], "note": "clearest"}
        assert {
            p["changed"] for p in httpx.post(f"{base}/bench/verdict", json=best).json()["recorded"]["pairs"]
        } == {True}
        repeated = httpx.post(f"{base}/bench/verdict", json={"best": seats["two"]}).json()["recorded"][
            "pairs"
        ]
        assert {(p["changed"], p["note"]) for p in repeated} == {(False, "clearest")}
        notes = httpx.get(f"{base}/ui/api/models/one").json()["notes"]
        assert [n["note"] for n in notes if n["kind"] == "verdict"] == ["cites the source"]
        assert {n["note"] for n in notes if n["kind"] == "pair"} == {"clearest"}
        # Cleared on purpose: an empty note is a note.
        cleared = httpx.post(f"{base}/bench/verdict", json={"call": seats["one"], "useful": True, "note": ""})
        assert cleared.json()["recorded"]["changed"] is True
        # A changed verdict without a note: the old note was why of the other verdict.
        httpx.post(f"{base}/bench/verdict", json={"call": seats["one"], "useful": True, "note": "again"})
        flipped = httpx.post(f"{base}/bench/verdict", json={"call": seats["one"], "useful": False}).json()
        assert (flipped["recorded"]["changed"], flipped["recorded"]["note"]) == (True, "")
        with sqlite3.connect(server.home / "benchwarmers.db") as db:
            assert db.execute("SELECT useful, note FROM verdicts").fetchall() == [(0, "")]
