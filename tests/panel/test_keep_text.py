"""keep_text from end to end: a collection that keeps text shows each ask's
question and answers in the recent asks, which can be judged later; one
that does not keeps no text of an ask anywhere in the data folder."""

from __future__ import annotations

import json
import threading
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import httpx
from typer.testing import CliRunner

from benchwarmers.cli.main import app
from benchwarmers.dashboard import auth
from benchwarmers.testing.fake_provider import FakeProvider
from benchwarmers.testing.live_server import settle_logs
from benchwarmers.testing.script import FakeModel
from tests.waiting import wait_for

MODELS = [FakeModel("one", answer="one answers"), FakeModel("two", answer="two answers")]
COLLECTIONS = {
    "kept": {"members": ["one", "two"], "keep_text": True, "keep_days": 3},
    "plain": {"members": ["one"]},
}


def ask(base: str, collection: str, prompt: str) -> dict[str, str]:
    reply = httpx.post(
        f"{base}/v1/chat/completions",
        json={"model": f"bench/{collection}", "messages": [{"role": "user", "content": prompt}]},
        timeout=60,
    ).json()
    return {s["alias"]: s["call"] for s in reply["bench"]["seats"]}


def folder_text(home: Path) -> str:
    settle_logs()
    return "".join(p.read_bytes().decode(errors="ignore") for p in home.rglob("*") if p.is_file())


def test_kept_text_is_shown_and_judged_later_and_plain_keeps_none(panel_server: Any) -> None:
    with panel_server(MODELS, COLLECTIONS) as server, httpx.Client(base_url=server.url, timeout=60) as ui:
        ui.get("/endpoints")
        ui.headers["x-csrf-token"] = ui.cookies[auth.CSRF_COOKIE]
        seats = ask(server.url, "kept", "what is kept-marker-7731?")
        plain = ask(server.url, "plain", "what is plain-marker-5519?")

        def recent(collection: str) -> list[dict[str, Any]]:
            return [a for a in ui.get("/ui/api/asks").json()["asks"] if a["collection"] == collection]

        (shown,) = wait_for(lambda: [a for a in recent("kept") if "question" in a])
        assert shown["question"]["messages"] == [{"role": "user", "content": "what is kept-marker-7731?"}]
        assert {s["alias"]: s["content"] for s in shown["seats"]} == {
            "one": "one answers",
            "two": "two answers",
        }
        (plain_ask,) = recent("plain")
        assert "question" not in plain_ask and all("content" not in s for s in plain_ask["seats"])
        assert plain_ask["seats"][0]["call"] == plain["one"]

        # Judged later, from the recent asks: a pair, then read back on the ask.
        judged = ui.post(
            "/ui/api/verdict", json={"better": seats["two"], "worse": seats["one"], "note": "later"}
        )
        assert judged.status_code == 200 and judged.json()["recorded"]["pairs"][0]["betterAlias"] == "two"
        (again,) = [a for a in recent("kept") if a["ask"] == shown["ask"]]
        assert [p["note"] for p in again["pairs"]] == ["later"]

        collections = {c["name"]: c for c in ui.get("/ui/api/collections").json()["collections"]}
        assert (collections["kept"]["keep_text"], collections["kept"]["keep_days"]) == (True, 3)
        assert collections["plain"]["keep_text"] is False
        edited = ui.post(
            "/ui/api/collections/plain", json={"members": ["one"], "keep_text": True, "keep_days": 5}
        )
        assert edited.status_code == 200 and edited.json()["collection"]["keep_days"] == 5
        refused = ui.post("/ui/api/collections/plain", json={"members": ["one"], "keep_days": 0})
        assert refused.status_code == 400 and refused.json()["error"]["field"] == "keep_days"

        text = folder_text(server.home)
        assert "kept-marker-7731" in text
        assert "plain-marker-5519" not in text


def test_the_cli_turns_keep_text_on_and_off(panel_server: Any, monkeypatch: Any) -> None:
    with panel_server(MODELS, COLLECTIONS) as server:
        home = server.home
    monkeypatch.setenv("BENCHWARMERS_HOME", str(home))
    on = CliRunner().invoke(app, ["collection", "set", "plain", "--keep-text", "--keep-days", "9"])
    assert on.exit_code == 0, on.output
    assert "9 days" in on.output
    off = CliRunner().invoke(app, ["collection", "set", "plain", "--no-keep-text"])
    assert off.exit_code == 0 and "keep text" in off.output and "9 days" not in off.output
    # Turning it off deleted what was kept: said, not left to the help (it printed the table alone).
    assert "Deleted the questions and answers it kept" in off.output
    again = CliRunner().invoke(app, ["collection", "set", "plain", "--no-keep-text"])
    assert again.exit_code == 0 and "Deleted" not in again.output  # nothing was kept to delete


def test_a_panel_stopped_from_the_page_keeps_the_answers_that_were_in(panel_server: Any) -> None:
    """Stop (the dashboard's stream closed) cancels the slow seat; in a
    collection that keeps text, the question and the answers already in are
    kept all the same, to be read and judged later in the recent asks. The
    slow seat keeps what it had written when it was cut (before, nothing:
    its history showed only "stopped by the person who asked"); cancelled,
    it owes no verdict and takes none."""
    models = [
        FakeModel("one", answer="one answers"),
        FakeModel("two", answer="two answers"),
        FakeModel("slow", answer=" ".join(f"word{n}" for n in range(200)), tokens_per_second=10),
    ]
    collections = {"kept": {"members": ["one", "two", "slow"], "keep_text": True, "keep_days": 3}}
    with panel_server(models, collections) as server, httpx.Client(base_url=server.url, timeout=60) as ui:
        ui.get("/endpoints")
        ui.headers["x-csrf-token"] = ui.cookies[auth.CSRF_COOKIE]
        events: list[dict[str, Any]] = []
        body = {"collection": "kept", "prompt": "stopped-marker-4410?"}
        with ui.stream("POST", "/ui/api/ask", json=body) as reply:
            for line in reply.iter_lines():
                if line.strip():
                    events.append(json.loads(line))
                done = {e["seat"]["alias"] for e in events if e["event"] == "seat"}
                if done == {"one", "two"} and any(
                    e["event"] == "seat_text" and e["alias"] == "slow" for e in events
                ):
                    break  # the page's Stop, with two seats in (one awaited in the panel's own task)
        calls = {s["alias"]: s["call"] for s in events[0]["seats"]}

        def kept() -> list[dict[str, Any]]:
            asks = ui.get("/ui/api/asks", params={"collection": "kept"}).json()["asks"]
            # Kept, and the three seats' rows in the log (the cancelled one's may land a batch later).
            return [
                a for a in asks if a["ask"] == events[0]["ask"] and "question" in a and len(a["seats"]) == 3
            ]

        (shown,) = wait_for(kept)
        assert shown["question"]["messages"] == [{"role": "user", "content": "stopped-marker-4410?"}]
        seats = {s["alias"]: s for s in shown["seats"]}
        assert (seats["one"]["content"], seats["two"]["content"]) == ("one answers", "two answers")
        assert seats["slow"]["status"] == "cancelled"
        cut = seats["slow"]["content"]
        assert cut.startswith("word0") and not cut.endswith("word199"), cut
        judged = ui.post("/ui/api/verdict", json={"call": calls["one"], "useful": True, "note": "later"})
        assert judged.status_code == 200
        refused = ui.post("/ui/api/verdict", json={"call": calls["slow"], "useful": True})
        assert refused.status_code == 400 and "cancelled" in refused.text, refused.text


def test_an_ask_answering_while_keep_text_is_turned_off_keeps_nothing(
    panel_server: Any, fake_provider: FakeProvider
) -> None:
    """Turned off (from the page) while a panel was still answering: when it
    is done, nothing of it is kept, not its question, not its answers (they
    stayed for the old days, shown under a collection that keeps none)."""
    held = threading.Event()
    models = [FakeModel("one", answer="one answers"), FakeModel("two", answer="late-marker-3391", hold=held)]
    with panel_server(models, COLLECTIONS) as server, httpx.Client(base_url=server.url, timeout=60) as ui:
        ui.get("/endpoints")
        ui.headers["x-csrf-token"] = ui.cookies[auth.CSRF_COOKIE]
        with ThreadPoolExecutor(1) as pool:
            asked = pool.submit(ask, server.url, "kept", "in-flight-marker-8802?")
            wait_for(lambda: fake_provider.calls.get("two", 0) == 1)
            off = ui.post("/ui/api/collections/kept", json={"members": ["one", "two"], "keep_text": False})
            assert off.status_code == 200
            held.set()
            calls = asked.result(timeout=60)
        home = server.home
        assert len(calls) == 2
    # The server closed once its panels were done (their text kept or not by then): none of it anywhere.
    text = folder_text(home)
    assert "in-flight-marker-8802" not in text and "late-marker-3391" not in text
