"""The reasons where people look: `GET /bench/decisions` on the real server
and `benchwarmers model show` in a terminal."""

from __future__ import annotations

import asyncio
import html
import re
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import httpx
from sqlalchemy import select, update
from typer.testing import CliRunner

from benchwarmers.bench.explain import record_seating
from benchwarmers.calls.pairs import PairJudgement, record_pairs
from benchwarmers.calls.verdicts import record_verdict
from benchwarmers.cli.main import app
from benchwarmers.runtime import Runtime
from benchwarmers.store.collections import add_collection
from benchwarmers.store.endpoints import add_endpoint
from benchwarmers.store.models import add_model
from benchwarmers.store.schema import Call, Probe, SuiteResult, Verdict
from benchwarmers.testing.live_server import live_server


def prepare(home: Path) -> None:
    async def work() -> None:
        async with Runtime.open(home=home) as rt:
            await add_endpoint(rt.store, "local", "http://127.0.0.1:9/v1", "openai", needs_key=False)
            for alias in ("a", "b", "spare"):
                await add_model(rt.store, alias, "local", alias, price_in=0, price_out=0)
            await add_collection(rt.store, "duo", ["a", "b"], explorer_seats=1)
            now = datetime.now(UTC)
            async with rt.store.write() as session:
                # Four onboarding probes answered (one wrongly); a daily one unanswered, last week.
                for i, name in enumerate(("word", "sum", "json", "format")):
                    session.add(Probe(alias="a", kind="onboard", name=name, at=now, answered=True, ok=i > 0))
                week_ago = now - timedelta(days=8)
                session.add(
                    Probe(alias="a", kind="daily", name="word", at=week_ago, answered=False, ok=False)
                )
                for i in range(4):
                    session.add(
                        Call(
                            id=f"c{i}",
                            at=now,
                            kind="seat",
                            alias="a",
                            collection="duo",
                            shape="short",
                            status="ok",
                        )
                    )
                    session.add(
                        SuiteResult(
                            run_id="r",
                            alias="a",
                            task=f"t{i}",
                            shape="short",
                            at=now,
                            passed=i > 0,
                            confidently_wrong=i == 0,
                        )
                    )
            for i in range(4):
                await record_verdict(rt.store, f"c{i}", True, "secret note")
            await record_seating(rt.store, "duo", "short", ["a", "b", "spare"], "a leads; spare explores")

    asyncio.run(work())


def test_decisions_over_http(home: Path) -> None:
    prepare(home)
    with live_server(home) as server, httpx.Client(timeout=60) as client:
        answer = client.get(
            f"{server.url}/bench/decisions", params={"collection": "bench/duo", "shape": "short"}
        )
        assert answer.status_code == 200, answer.text
        body = answer.json()
        assert body["collection"] == "bench/duo" and list(body["shapes"]) == ["short"]
        first = body["shapes"]["short"][0]
        assert (
            first["alias"] == "a"
            and first["judged"] == 4
            and "4 of 4 verdicts here useful" in first["reasons"][0]
        )
        assert body["explorers"]["short"] == ["spare"]
        assert body["history"][0]["seated"] == ["a", "b", "spare"]
        assert "secret note" not in answer.text

        assert client.get(f"{server.url}/bench/decisions").status_code == 400
        assert (
            client.get(
                f"{server.url}/bench/decisions", params={"collection": "duo", "shape": "x"}
            ).status_code
            == 400
        )
        assert client.get(f"{server.url}/bench/decisions", params={"collection": "nope"}).status_code == 404


def test_leaderboard_over_http(home: Path) -> None:
    prepare(home)
    with live_server(home) as server, httpx.Client(timeout=60) as client:
        answer = client.get(f"{server.url}/bench/leaderboard", params={"collection": "bench/duo"})
        assert answer.status_code == 200, answer.text
        board = answer.json()
        assert (board["collection"], board["shape"], board["shapes"]) == ("bench/duo", "short", ["short"])
        first = board["models"][0]
        assert (first["alias"], first["rank"], first["member"]) == ("a", 1, True)
        assert first["verdicts"] == {"useful": 4, "notUseful": 0}
        assert first["suite"] == {"passed": 3, "total": 4}
        assert first["low"] <= first["score"] <= first["high"]
        assert [p["score"] for p in first["trend"]] == [round(5 / 6, 4)]  # (1 + 4 useful) / (2 + 4)
        assert board["nextPanel"]["seats"] == ["a", "b"] and board["nextPanel"]["explorers"] == ["spare"]
        assert "secret note" not in answer.text
        assert client.get(f"{server.url}/bench/leaderboard").status_code == 400
        shape = client.get(f"{server.url}/bench/leaderboard", params={"collection": "duo", "shape": "x"})
        assert shape.status_code == 400
        assert client.get(f"{server.url}/bench/leaderboard", params={"collection": "nope"}).status_code == 404


def test_model_show(home: Path) -> None:
    prepare(home)
    result = CliRunner().invoke(app, ["model", "show", "a"])
    assert result.exit_code == 0, result.output
    out = result.output
    assert "status available" in out and "free" in out
    assert "bench/duo" in out and "short" in out
    assert "suite: short 3/4 (1 confidently wrong)" in out
    assert "4 of 4 verdicts here useful" in out
    assert "probes: answered 4 of 5 recent ones (3 of those passed their check)" in out
    missing = CliRunner().invoke(app, ["model", "show", "nope"])
    assert missing.exit_code != 0


def capped(home: Path, lost_pairs: int = 0) -> None:
    """Collection `capped`: members a, b, c, two seats and an explorer seat;
    `lost_pairs` asks of the three in which c lost to a and to b."""

    async def work() -> None:
        async with Runtime.open(home=home) as rt:
            await add_endpoint(rt.store, "local", "http://127.0.0.1:9/v1", "openai", needs_key=False)
            for alias in ("a", "b", "c"):
                await add_model(rt.store, alias, "local", alias, price_in=0, price_out=0)
            await add_collection(rt.store, "capped", ["a", "b", "c"], seats=2, explorer_seats=1)
            seats = [(f"c{ask}{alias}", alias, f"a{ask}") for ask in range(lost_pairs) for alias in "abc"]
            common = {"at": datetime.now(UTC), "kind": "seat", "collection": "capped", "shape": "short"}
            async with rt.store.write() as session:
                session.add_all(Call(id=i, alias=a, ask_id=k, status="ok", **common) for i, a, k in seats)
            for ask in range(lost_pairs):
                for winner in "ab":
                    await record_pairs(rt.store, PairJudgement("better", (f"c{ask}{winner}", f"c{ask}c")))

    asyncio.run(work())


def next_panel(client: httpx.Client, url: str) -> dict[str, Any]:
    params = {"collection": "bench/capped", "shape": "short"}
    nxt: dict[str, Any] = client.get(f"{url}/bench/leaderboard", params=params).json()["nextPanel"]
    assert nxt["seats"] == ["a", "b"] and nxt["explorers"] == ["c"], nxt
    return nxt


def test_the_board_names_a_member_the_seat_cap_leaves_out_as_the_explorer_it_will_be(home: Path) -> None:
    """Over the seat cap, the explorer seat goes to a member left out (the
    decider's pool takes unseated members): the board's next panel says so,
    as the decisions report does, and the seating the asks get agrees."""
    capped(home)
    with live_server(home) as server, httpx.Client(timeout=60) as client:
        nxt = next_panel(client, server.url)
        assert "c explores" in " ".join(nxt["reasons"]) and "c waits" not in " ".join(nxt["reasons"])
        params = {"collection": "bench/capped", "shape": "short"}
        decided = client.get(f"{server.url}/bench/decisions", params=params).json()
        assert decided["explorers"]["short"] == ["c"], decided["explorers"]


def test_an_explorer_with_a_long_record_is_not_said_to_have_little(home: Path) -> None:
    """The board's explorer reason is the decider's: a member that lost
    every pair it was in explores as the next best by record, not as "a
    model with little record here" (what every explorer was said to be)."""
    capped(home, lost_pairs=8)
    with live_server(home) as server, httpx.Client(timeout=60) as client:
        (said,) = [r for r in next_panel(client, server.url)["reasons"] if r.startswith("c explores")]
        assert "little record" not in said and "few verdicts" not in said, said
        assert "by record" in said or "might beat" in said, said


def fell(home: Path) -> None:
    """Collection `fell`: members steady and fall judged on 3 asks a day for
    60 days; fall's answers useful for 50 days, then not (10 days)."""

    async def work() -> None:
        async with Runtime.open(home=home) as rt:
            await add_endpoint(rt.store, "local", "http://127.0.0.1:9/v1", "openai", needs_key=False)
            for alias in ("steady", "fall"):
                await add_model(rt.store, alias, "local", alias, price_in=0, price_out=0)
            await add_collection(rt.store, "fell", ["steady", "fall"])
            now = datetime.now(UTC)
            calls = [
                Call(
                    id=f"c{day}-{n}-{alias}", at=now - timedelta(days=day, hours=n), kind="seat", alias=alias
                )
                for day in range(60)
                for n in range(3)
                for alias in ("steady", "fall")
            ]
            async with rt.store.write() as session:
                for call in calls:
                    call.collection, call.shape, call.status, call.ask_id = (
                        "fell",
                        "short",
                        "ok",
                        call.id[:-5],
                    )
                session.add_all(calls)
            for call in calls:
                day, n = map(int, call.id[1:].split("-")[:2])
                useful = n > 0 if call.alias == "steady" else day >= 10
                await record_verdict(rt.store, call.id, useful)
            async with rt.store.write() as session:  # each verdict given the day its answer came
                judged_at = select(Call.at).where(Call.id == Verdict.call_id).scalar_subquery()
                await session.execute(update(Verdict).values(at=judged_at))

    asyncio.run(work())


def test_the_trend_of_a_model_that_got_worse_falls_to_where_its_score_is(home: Path) -> None:
    """A model useful for fifty days, then useless for ten: the rating
    forgets with age and its change detector reopens the model ("changed"),
    so its score is low now; the trend ends there too. It ended at 83%
    beside a score under 30% (an all-time share since the first verdict,
    neither forgetting nor change), as if the model had barely slipped."""
    fell(home)
    with live_server(home) as server, httpx.Client(timeout=60) as client:
        board = client.get(f"{server.url}/bench/leaderboard", params={"collection": "fell"}).json()
        fall, steady = (next(m for m in board["models"] if m["alias"] == a) for a in ("fall", "steady"))
        assert any(r.startswith("fall sits") and "changed" in r for r in board["nextPanel"]["reasons"])
        scores = [point["score"] for point in fall["trend"]]
        assert scores[0] > 0.9 and scores[-1] < 0.3, scores
        assert fall["low"] - 0.05 <= scores[-1] <= fall["high"] + 0.05, (fall, scores)
        assert steady["low"] - 0.05 <= steady["trend"][-1]["score"] <= steady["high"] + 0.05, steady
        # The detector's finding is the model's own, on its row: not only in the next panel's reasons.
        assert fall["changed"].startswith("changed: ") and steady["changed"] == "", (fall, steady)
        page = client.get(f"{server.url}/leaderboard", params={"collection": "fell"}).text
        row = re.search(r'<tr data-alias="fall".*?</tr>', page, re.S)
        assert row and html.escape(fall["changed"]) in row.group(), row
