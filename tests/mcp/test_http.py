"""The MCP server at `/mcp` and `/v1/mcp` on the live server, through the
official SDK's client over streamable HTTP, in both protocol eras: the
2026 per-request envelope the SDK's client picks by itself ("auto") and
the initialize handshake Claude Code speaks ("legacy")."""

from __future__ import annotations

import asyncio
import sqlite3
import threading
import time
from pathlib import Path
from typing import Any

import httpx
import pytest

from benchwarmers.mcp.http import _Running
from benchwarmers.mcp.text import ask_text
from benchwarmers.testing.fake_provider import FakeProvider
from benchwarmers.types import Merged, PanelReply, Seat

from .mcp_support import (
    TRIO,
    call_rows,
    cancel_an_ask,
    http_client,
    make_key,
    sample_transcript,
    seat_calls,
    slow_trio,
    stopped_like_stop,
    tool_text,
    trio_models,
)

MODES = ["auto", "legacy"]
HANDSHAKE_VERSION = "2025-06-18"


@pytest.mark.parametrize("mode", MODES)
async def test_tools_carry_the_rules_of_use(bench_server: Any, mode: str) -> None:
    with bench_server() as server:
        async with http_client(server.url + "/mcp", mode=mode) as client:
            tools = {tool.name: tool for tool in (await client.list_tools()).tools}
    assert set(tools) == {"list_collections", "ask", "verdict", "pending_verdicts"}
    ask = tools["ask"]
    description = (ask.description or "").lower()
    for rule in ("collection, not a favourite model", "verify before acting", "name every seat", "verdict"):
        assert rule in description, rule
    assert "verdict per seat" in (tools["verdict"].description or "").lower() or "one verdict per" in (
        tools["verdict"].description or ""
    )
    properties = ask.input_schema["properties"]
    assert set(properties) == {"collection", "prompt", "merged", "with", "system", "quorum", "deadline"}
    assert ask.input_schema["required"] == ["collection", "prompt"]
    assert set(tools["pending_verdicts"].input_schema["properties"]) == {"transcript_path", "calls"}


@pytest.mark.parametrize("mode", MODES)
async def test_ask_verdict_and_pending_from_a_transcript(
    bench_server: Any, tmp_path: Path, mode: str
) -> None:
    with bench_server() as server:
        async with http_client(server.url + "/mcp", mode=mode) as client:
            listing = await client.call_tool("list_collections", {})
            assert not listing.is_error
            assert "bench/trio — three opinions" in tool_text(listing)
            assert [c["id"] for c in listing.structured_content["collections"]] == ["bench/trio"]

            asked = await client.call_tool("ask", {"collection": "bench/trio", "prompt": "what is up?"})
            assert not asked.is_error, tool_text(asked)
            bench = asked.structured_content["bench"]
            assert bench["collection"] == "bench/trio"
            assert [s["alias"] for s in bench["seats"]] == ["fast", "mid", "slow"]
            text = tool_text(asked)
            for seat in bench["seats"]:
                assert f"{seat['seat']} · {seat['alias']} · ok" in text
                assert f"call {seat['call']}" in text and f"{seat['alias']} answer" in text
            rows = call_rows(server.home)
            assert {rows[c]["alias"] for c in seat_calls(bench)} == {"fast", "mid", "slow"}

            fast, mid, slow = seat_calls(bench)
            judged = await client.call_tool("verdict", {"call": fast, "useful": True, "note": "right"})
            assert not judged.is_error, tool_text(judged)
            assert judged.structured_content["recorded"]["alias"] == "fast"
            assert judged.structured_content["recorded"]["changed"] is True
            again = await client.call_tool("verdict", {"call": fast, "useful": True, "note": "right"})
            assert again.structured_content["recorded"]["changed"] is False
            assert "nothing changed" in tool_text(again)

            transcript = sample_transcript(tmp_path / "session.jsonl", text)
            pending = await client.call_tool("pending_verdicts", {"transcript_path": str(transcript)})
            assert not pending.is_error, tool_text(pending)
            assert pending.structured_content["pending"] == [mid, slow]
            assert mid in tool_text(pending) and fast not in tool_text(pending)

            by_calls = await client.call_tool("pending_verdicts", {"calls": [slow, "c_" + "x" * 20]})
            assert by_calls.structured_content["pending"] == [slow]

            paired = await client.call_tool("verdict", {"better": mid, "worse": slow, "note": "shorter"})
            assert not paired.is_error, tool_text(paired)
            (pair,) = paired.structured_content["recorded"]["pairs"]
            assert (pair["betterAlias"], pair["worseAlias"], pair["outcome"]) == ("mid", "slow", "better")
            assert f"{mid} (mid) better than {slow} (slow) — shorter" in tool_text(paired)
            tied = await client.call_tool("verdict", {"tie": [fast, slow]})
            assert tied.structured_content["recorded"]["pairs"][0]["outcome"] == "tie"

            # A person's pair is a verdict too: the seats it names are judged.
            after = await client.call_tool("pending_verdicts", {"transcript_path": str(transcript)})
            assert after.structured_content["pending"] == [], tool_text(after)


async def test_v1_mcp_answers_the_same(bench_server: Any) -> None:
    with bench_server() as server:
        async with http_client(server.url + "/v1/mcp", mode="legacy") as client:
            asked = await client.call_tool("ask", {"collection": "trio", "prompt": "hi", "merged": False})
    assert [s["status"] for s in asked.structured_content["bench"]["seats"]] == ["ok", "ok", "ok"]


@pytest.mark.parametrize("mode", MODES)
async def test_slow_panel_sends_progress_before_the_result(
    bench_server: Any, monkeypatch: pytest.MonkeyPatch, mode: str
) -> None:
    monkeypatch.setenv("BENCHWARMERS_MCP_PROGRESS_SECONDS", "0.2")
    # The slow seat answers once progress has said two seats are in: an order of
    # events, so a loaded machine cannot let it finish before the notes come.
    release = threading.Event()
    with bench_server(trio_models(hold=release)) as server:
        async with http_client(server.url + "/mcp", mode=mode) as client:
            notes: list[tuple[float, float, str | None]] = []

            async def on_progress(progress: float, total: float | None, message: str | None) -> None:
                notes.append((time.monotonic(), progress, message))
                if len(notes) >= 2 and "2 of 3 seats in" in (message or ""):
                    release.set()

            asked = await client.call_tool(
                "ask", {"collection": "trio", "prompt": "hi"}, progress_callback=on_progress
            )
            finished = time.monotonic()
    assert not asked.is_error, tool_text(asked)
    assert len(notes) >= 2, notes
    assert all(at < finished for at, _value, _message in notes)
    values = [value for _at, value, _message in notes]
    assert values == sorted(values) and len(set(values)) == len(values)
    assert all(message and message.startswith("bench/trio:") for _at, _value, message in notes)
    assert any(
        "2 of 3 seats in" in (message or "") and "waiting on slow" in (message or "") for *_, message in notes
    )


async def test_keep_alive_comments_without_a_progress_token(
    bench_server: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A client that sends no progress token still sees bytes while the panel runs."""
    monkeypatch.setenv("BENCHWARMERS_MCP_PROGRESS_SECONDS", "0.2")
    release = threading.Event()  # the slow seat answers once a keep-alive has come
    with bench_server(trio_models(hold=release)) as server:
        async with httpx.AsyncClient(timeout=30) as http:
            body = raw_call(1, "ask", {"collection": "trio", "prompt": "hi"})
            async with http.stream("POST", server.url + "/mcp", json=body, headers=SSE_HEADERS) as reply:
                assert reply.status_code == 200
                assert reply.headers["content-type"].startswith("text/event-stream")
                raw = b""
                async for chunk in reply.aiter_raw():
                    raw += chunk
                    if b": keep-alive" in raw:
                        release.set()
    text = raw.decode()
    assert ": keep-alive" in text
    assert text.index(": keep-alive") < text.index('"result"')
    assert "slow answer" in text


async def test_a_client_that_leaves_mid_panel_stops_it_as_stop_does(
    bench_server: Any, fake_provider: FakeProvider
) -> None:
    """The panel ran to the end for nobody (the slow seat's 20 s spent); now
    a tool call whose HTTP connection goes stops it as the page's Stop."""
    with bench_server(slow_trio()) as server:
        async with httpx.AsyncClient(timeout=30) as http:
            body = raw_call(1, "ask", {"collection": "trio", "prompt": "hi"})
            async with http.stream("POST", server.url + "/mcp", json=body, headers=SSE_HEADERS) as reply:
                assert reply.status_code == 200
                await asyncio.sleep(1.0)  # fast and mid are in; slow is writing
            # The connection is closed now, long before the slow seat answers.
        stopped_like_stop(server, fake_provider)


@pytest.mark.parametrize("mode", MODES)
async def test_a_tool_call_the_client_cancels_stops_the_panel(
    bench_server: Any, fake_provider: FakeProvider, mode: str
) -> None:
    """The official client's cancel (`notifications/cancelled`, its request's
    stream closed) stops the panel's slow seat upstream, logged `cancelled`."""
    with bench_server(slow_trio()) as server:
        async with http_client(server.url + "/mcp", mode=mode) as client:
            await cancel_an_ask(client, server, fake_provider, after=1.0)


async def test_a_cancel_is_acted_on_only_for_the_one_call_it_can_name() -> None:
    """A handshake-era cancel names a request id only, under which two
    clients of one key may each have a call running: neither is cancelled."""
    running = _Running()
    call = ("owner", "1")
    with running.held(call) as first, running.held(call) as second:
        running.cancel(call)
        assert not first.cancel_called and not second.cancel_called
    with running.held(call) as only:
        running.cancel(("owner", '"1"'))  # the id spelled as a string names another call
        running.cancel(("someone", "1"))
        assert not only.cancel_called
        running.cancel(call)
        assert only.cancel_called
    assert running.calls == {}


@pytest.mark.parametrize("mode", MODES)
async def test_a_key_limited_to_one_collection_cannot_ask_another(bench_server: Any, mode: str) -> None:
    collections = {**TRIO, "solo": {"members": ["fast"], "purpose": "one opinion"}}
    with bench_server(collections=collections) as server:
        key = make_key(server.home, "solo-only", ("solo",))
        async with http_client(server.url + "/mcp", key=key, mode=mode) as client:
            listing = await client.call_tool("list_collections", {})
            assert [c["id"] for c in listing.structured_content["collections"]] == ["bench/solo"]
            refused = await client.call_tool("ask", {"collection": "trio", "prompt": "hi"})
            assert refused.is_error
            assert "may not call bench/trio" in tool_text(refused)
            allowed = await client.call_tool("ask", {"collection": "solo", "prompt": "hi"})
            assert not allowed.is_error, tool_text(allowed)
        assert not [r for r in call_rows(server.home).values() if r["task"].endswith("(bench/trio, short)")]


async def test_a_wrong_key_is_refused_where_keys_are_required(bench_server: Any) -> None:
    with bench_server() as server:
        make_key(server.home, "someone")
        server.stop()
        server.acting_as = "0.0.0.0"
        server.start()
        async with httpx.AsyncClient(timeout=60) as http:
            body = raw_call(1, "tools/list", {})
            bare = await http.post(server.url + "/mcp", json=body, headers=SSE_HEADERS)
            wrong = await http.post(
                server.url + "/mcp", json=body, headers={**SSE_HEADERS, "authorization": "Bearer nope"}
            )
    assert bare.status_code == 401 and wrong.status_code == 401


async def test_the_guard_checks_mcp_as_it_checks_v1(bench_server: Any) -> None:
    with bench_server() as server:
        key = make_key(server.home, "slow-caller", per_minute=3)
        body = raw_call(1, "tools/list", {})
        async with httpx.AsyncClient(timeout=60) as http:
            for path in ("/mcp", "/v1/mcp"):
                reply = await http.get(server.url + path, headers={"accept": "text/event-stream"})
                assert reply.status_code == 405, path
                assert reply.headers["allow"] == "POST"
                foreign = {**SSE_HEADERS, "origin": "http://evil.example"}
                assert (await http.post(server.url + path, json=body, headers=foreign)).status_code == 403
                rebound = {**SSE_HEADERS, "host": "evil.example"}
                assert (await http.post(server.url + path, json=body, headers=rebound)).status_code == 421
            # The plugin sends "Bearer none" when no key is set: the local owner, as with no header.
            empty = {**SSE_HEADERS, "authorization": "Bearer none"}
            assert (await http.post(server.url + "/mcp", json=body, headers=empty)).status_code == 200
            keyed = {**SSE_HEADERS, "authorization": f"Bearer {key}"}
            statuses = [
                (await http.post(server.url + "/mcp", json=body, headers=keyed)).status_code for _ in range(4)
            ]
    assert statuses == [200, 200, 200, 429], "the key's rate counts MCP requests"


UNKNOWN_COLLECTION = "no collection 'bench/nope'; collections here: bench/trio"
MISTAKES: list[tuple[str, dict[str, Any], str]] = [
    ("ask", {"collection": "nope", "prompt": "hi"}, UNKNOWN_COLLECTION),
    ("ask", {"collection": "trio", "prompt": "  "}, "the prompt is empty"),
    ("ask", {"collection": "trio:route", "prompt": "hi"}, "route mode"),
    ("ask", {"collection": "not a name", "prompt": "hi"}, "names no collection"),
    ("ask", {"collection": "trio", "prompt": "hi", "with": ["ghost"]}, "ghost"),
    ("ask", {"collection": "trio", "prompt": "hi", "quorum": 0}, "quorum must be at least 1 seat"),
    ("ask", {"collection": "trio", "prompt": "hi", "deadline": -1}, "deadline must be more than 0 seconds"),
    ("ask", {"collection": "trio", "prompt": "hi", "quorum": 99}, "quorum 99 is more than the"),
    ("ask", {"collection": "trio", "prompt": "hi", "deadline": 1e9}, "deadline must be at most 86400"),
    ("verdict", {"call": "c_" + "y" * 20, "useful": True}, "no call"),
    ("verdict", {"call": " ", "useful": True}, '"call" must be a call id'),
    ("verdict", {"call": "c_" + "y" * 20, "useful": "yes"}, "useful"),
    ("verdict", {"call": "c_" + "y" * 20, "useful": 1}, "useful"),
    ("verdict", {"better": "c_" + "y" * 20}, '"worse" must be a call id'),
    ("verdict", {"tie": ["c_" + "y" * 20, "c_" + "y" * 20]}, "named twice"),
    ("verdict", {"call": "c_" + "y" * 20, "useful": True, "best": "c_" + "y" * 20}, "not both"),
    ("verdict", {"better": "c_" + "y" * 20, "worse": "c_" + "z" * 20}, "no call"),
    ("pending_verdicts", {}, "give transcript_path"),
    ("pending_verdicts", {"transcript_path": "/etc/passwd"}, "no readable transcript at that path"),
    ("pending_verdicts", {"transcript_path": "/nowhere/x.jsonl"}, "no readable transcript at that path"),
]


async def test_mistakes_are_tool_errors_that_say_what_is_wrong(bench_server: Any) -> None:
    with bench_server() as server:
        async with http_client(server.url + "/mcp", mode="legacy") as client:
            for tool, arguments, says in MISTAKES:
                result = await client.call_tool(tool, arguments)
                assert result.is_error, (tool, arguments)
                assert says in tool_text(result), (says, tool_text(result))
        assert not [r for r in call_rows(server.home).values() if r["kind"] == "seat"], "nothing was asked"


SSE_HEADERS = {
    "accept": "application/json, text/event-stream",
    "content-type": "application/json",
    "mcp-protocol-version": HANDSHAKE_VERSION,
}


def raw_call(request_id: int, method: str, params: dict[str, Any]) -> dict[str, Any]:
    """A JSON-RPC request as a client without the SDK (and without a
    progress token) sends it to the stateless server."""
    if method != "tools/list":
        params = {"name": method, "arguments": params}
        method = "tools/call"
    return {"jsonrpc": "2.0", "id": request_id, "method": method, "params": params}


def test_a_seat_standing_in_for_the_merge_is_named_once_with_the_note() -> None:
    """No merger's answer valid against the schema: the merge's place holds
    a seat's answer; the agent reads the note, and the call id once."""
    seat = Seat("c_fast", "Seat 1", "fast", "ok", 1.0, '{"n": 4}')
    note = "No merger's answer was valid (slow: empty); this is Seat 1's answer instead (fast, call c_fast)."
    merged = Merged("c_fast", "fast", "ok", 0.0, '{"n": 4}', note=note)
    text = ask_text(PanelReply("c", "chat", (seat,), merged=merged))
    assert f"## Merged · fast · call c_fast\n\n({note})\n\n" in text
    assert text.count("c_fast") == 4  # the merge's heading and note, the seat's heading, the verdict line
    assert text.rstrip().endswith("for each seat you judged: c_fast")  # named there once


def test_two_answers_say_how_to_compare_them_one_says_nothing_of_pairs() -> None:
    """Before, the result told an agent to judge each seat alone, though two
    answers of one ask compare in one pair verdict (the tool takes it); the
    CLI's ask said so, the MCP result did not."""
    fast = Seat("c_fast", "Seat 1", "fast", "ok", 1.0, "four")
    slow = Seat("c_slow", "Seat 2", "slow", "ok", 2.0, "4")
    broken = Seat("c_broken", "Seat 3", "broken", "error", 0.1, "", error="500")
    two = ask_text(PanelReply("c", "chat", (fast, slow, broken)))
    assert "for each seat you judged: c_fast, c_slow\n" in two
    assert two.rstrip().endswith(
        "Or compare two seats of this ask in one verdict: `better` and `worse` (call ids), "
        "`tie` or `both_bad` (two call ids), or `best` (one call id: better than every other seat "
        "that answered)."
    )
    one = ask_text(PanelReply("c", "chat", (fast, broken)))
    assert "compare" not in one and one.rstrip().endswith("for each seat you judged: c_fast")


async def test_with_seats_extra_models_and_merged_adds_a_merge(bench_server: Any) -> None:
    collections = {**TRIO, "solo": {"members": ["fast"]}}
    with bench_server(collections=collections) as server:
        async with http_client(server.url + "/mcp", mode="legacy") as client:
            arguments = {"collection": "solo", "prompt": "hi", "with": ["slow"], "merged": True}
            asked = await client.call_tool("ask", arguments)
    assert not asked.is_error, tool_text(asked)
    bench = asked.structured_content["bench"]
    assert [s["alias"] for s in bench["seats"]] == ["fast", "slow"]
    assert "merged" in bench
    text = tool_text(asked)
    merged = bench["merged"]
    if merged["status"] == "ok":
        assert f"## Merged · {merged['alias']} · call {merged['call']}" in text
    else:
        assert "(No merged answer:" in text
    for seat in bench["seats"]:
        assert f"call {seat['call']}" in text


async def test_the_same_verdict_again_without_its_note_keeps_it_as_over_http(bench_server: Any) -> None:
    """The tool's `note` defaulted to "": an agent judging a seat again
    without a note (a retry) wrote "" over its note; over HTTP a body
    without "note" keeps it, and the tool now says the same."""
    with bench_server() as server:
        async with http_client(server.url + "/mcp") as client:
            asked = await client.call_tool("ask", {"collection": "bench/trio", "prompt": "what is up?"})
            fast, mid, _slow = seat_calls(asked.structured_content["bench"])
            await client.call_tool("verdict", {"call": fast, "useful": True, "note": "right"})
            again = await client.call_tool("verdict", {"call": fast, "useful": True})
            assert again.structured_content["recorded"] | {"at": ""} == (
                httpx.post(f"{server.url}/bench/verdict", json={"call": fast, "useful": True}).json()[
                    "recorded"
                ]
                | {"at": ""}
            )
            assert (
                again.structured_content["recorded"]["note"],
                again.structured_content["recorded"]["changed"],
            ) == (
                "right",
                False,
            )
            await client.call_tool("verdict", {"best": mid, "note": "clearest"})
            best = await client.call_tool("verdict", {"best": mid})
            assert {(p["note"], p["changed"]) for p in best.structured_content["recorded"]["pairs"]} == {
                ("clearest", False)
            }


async def test_a_bad_verdict_is_the_same_one_line_over_mcp_as_over_http(bench_server: Any) -> None:
    """`useful` not a boolean was the SDK's pydantic report over MCP ("1
    validation error for verdictArguments ... errors.pydantic.dev"), where
    HTTP and the CLI say '"useful" must be true or false'."""
    with bench_server() as server:
        async with http_client(server.url + "/mcp") as client:
            asked = await client.call_tool("ask", {"collection": "bench/trio", "prompt": "what is up?"})
            fast = seat_calls(asked.structured_content["bench"])[0]
            for useful in ("yes", 1, "true", None):
                body: dict[str, Any] = {"call": fast, "useful": useful}
                over_http = httpx.post(f"{server.url}/bench/verdict", json=body)
                assert over_http.status_code == 400
                refused = await client.call_tool("verdict", body)
                assert refused.is_error
                said = tool_text(refused)
                assert said.endswith(over_http.json()["error"]["message"]) and "pydantic" not in said, said
            schema = (await client.list_tools()).tools
            (verdict,) = [t for t in schema if t.name == "verdict"]
            assert verdict.input_schema["properties"]["useful"]["type"] == "boolean"


def judged_rows(home: Path) -> tuple[int, int]:
    """How many seat verdicts and pairs the store holds."""
    with sqlite3.connect(home / "benchwarmers.db") as db:
        seats = db.execute("SELECT count(*) FROM verdicts").fetchone()[0]
        pairs = db.execute("SELECT count(*) FROM pair_verdicts").fetchone()[0]
    return seats, pairs


async def test_an_argument_a_tool_does_not_take_is_refused_not_dropped(bench_server: Any) -> None:
    """The SDK dropped a key a tool does not take: `notes` for `note`
    recorded the verdict and lost the note, `bothBad` (as our JSON spells
    it, and HTTP takes) was read as no verdict at all, an extra key judged
    the pair anyway. Now the verdict tool's arguments are checked as
    `POST /bench/verdict` checks its body, in its words, nothing stored."""
    with bench_server() as server:
        async with http_client(server.url + "/mcp") as client:
            asked = await client.call_tool("ask", {"collection": "bench/trio", "prompt": "what is up?"})
            fast, mid, slow = seat_calls(asked.structured_content["bench"])
            other = seat_calls(
                (await client.call_tool("ask", {"collection": "trio", "prompt": "again"})).structured_content[
                    "bench"
                ]
            )
            before = judged_rows(server.home)
            for body in (
                {"call": fast, "useful": False, "notes": "wrong"},
                {"better": fast, "worse": mid, "notes": "clearer"},
                {"best": fast, "x": 1},
                {"tie": [fast, 5]},
                {"tie": [fast, mid, slow]},
                {"both_bad": [fast, other[1]]},
            ):
                over_http = httpx.post(f"{server.url}/bench/verdict", json=body)
                assert over_http.status_code in (400, 404), body
                refused = await client.call_tool("verdict", body)
                assert refused.is_error, body
                said = tool_text(refused)
                assert said.endswith(over_http.json()["error"]["message"]) and "pydantic" not in said, said
            assert judged_rows(server.home) == before, "nothing stored"
            spelled = await client.call_tool("verdict", {"bothBad": [fast, mid]})
            assert not spelled.is_error, tool_text(spelled)
            assert spelled.structured_content["recorded"]["pairs"][0]["outcome"] == "both_bad"
            as_text = await client.call_tool("verdict", {"tie": f'["{mid}", "{slow}"]'})
            assert as_text.structured_content["recorded"]["pairs"][0]["outcome"] == "tie"
            typo = await client.call_tool("ask", {"colection": "trio", "collection": "trio", "prompt": "hi"})
            assert typo.is_error and "ask takes no 'colection'" in tool_text(typo), tool_text(typo)
        assert len([r for r in call_rows(server.home).values() if r["kind"] == "seat"]) == 6, (
            "the typo asked nothing"
        )
