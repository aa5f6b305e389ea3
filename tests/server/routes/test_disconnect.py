"""A client that hangs up loses no record: on every streaming route, the
seats that had finished are in the call log as they finished, and the
seats (or the route turn) still running end in the log too. A panel's
client hanging up (a stream closed, or a whole reply's connection before
it) stops the panel as the dashboard's Stop does: the seats still
answering are cancelled upstream and logged `cancelled` (docs/api.md), an
MCP tool call's too (docs/mcp.md); a whole route turn's client hanging up
stops its member's call so, with no failover (docs/route-mode.md)."""

from __future__ import annotations

import json
import socket
import threading
from typing import Any

import httpx
import openai
import pytest

from tests.waiting import wait_for

from .hardening_support import MCP_HEADERS, Bench, rows

LAGGING_PROMPT = "hang up on me"
# path, body of a panel stream whose fast seat (alpha) is done before the slow one.
PANEL_STREAMS: dict[str, tuple[str, dict[str, Any]]] = {
    "openai": (
        "/v1/chat/completions",
        {"model": "bench/lagging", "stream": True, "messages": [{"role": "user", "content": LAGGING_PROMPT}]},
    ),
    "responses": ("/v1/responses", {"model": "bench/lagging", "stream": True, "input": LAGGING_PROMPT}),
    "anthropic": (
        "/v1/messages",
        {
            "model": "bench/lagging",
            "stream": True,
            "max_tokens": 50,
            "messages": [{"role": "user", "content": LAGGING_PROMPT}],
        },
    ),
    "gemini": (
        "/v1beta/models/bench/lagging:streamGenerateContent?alt=sse",
        {"contents": [{"role": "user", "parts": [{"text": LAGGING_PROMPT}]}]},
    ),
    "ollama-chat": (
        "/api/chat",
        {"model": "bench/lagging", "stream": True, "messages": [{"role": "user", "content": LAGGING_PROMPT}]},
    ),
    "ollama-generate": (
        "/api/generate",
        {"model": "bench/lagging", "stream": True, "prompt": LAGGING_PROMPT},
    ),
}
ROUTE_STREAMS: dict[str, tuple[str, dict[str, Any]]] = {
    "openai": (
        "/v1/chat/completions",
        {
            "model": "bench/only-trickle:route",
            "stream": True,
            "messages": [{"role": "user", "content": "go"}],
        },
    ),
    "anthropic": (
        "/v1/messages",
        {
            "model": "bench/only-trickle:route",
            "stream": True,
            "max_tokens": 50,
            "messages": [{"role": "user", "content": "go"}],
        },
    ),
}


def new_calls(home: Any, known: set[str], kind: str) -> list[dict[str, Any]]:
    found = rows(home, "SELECT id, alias, status, kind, ask_id FROM calls WHERE kind = ?", kind)
    return [row for row in found if row["id"] not in known]


def hang_up_when(
    client: httpx.Client, path: str, body: dict[str, Any], marker: bytes, **headers: str
) -> bytes:
    """Stream the reply until `marker` arrives, then close the connection."""
    seen = b""
    with client.stream("POST", path, json=body, headers=headers) as reply:
        assert reply.status_code == 200, reply.read()[:300]
        for chunk in reply.iter_raw():
            seen += chunk
            if marker in seen:
                break
    assert marker in seen, seen[-300:]
    return seen


# path, body of a whole (non-streamed) panel reply, per format, on the same collection.
PANEL_WHOLES: dict[str, tuple[str, dict[str, Any]]] = {
    "openai": ("/v1/chat/completions", {**PANEL_STREAMS["openai"][1], "stream": False}),
    "responses": ("/v1/responses", {**PANEL_STREAMS["responses"][1], "stream": False}),
    "anthropic": ("/v1/messages", {**PANEL_STREAMS["anthropic"][1], "stream": False}),
    "gemini": ("/v1beta/models/bench/lagging:generateContent", PANEL_STREAMS["gemini"][1]),
    "ollama-chat": ("/api/chat", {**PANEL_STREAMS["ollama-chat"][1], "stream": False}),
    "ollama-generate": ("/api/generate", {**PANEL_STREAMS["ollama-generate"][1], "stream": False}),
}


def raw_ask(bench: Bench, path: str, body: dict[str, Any]) -> socket.socket:
    """The request sent on a socket of its own, whose reply is never read:
    closing it (the `with` block's end) is the client hanging up."""
    payload = json.dumps(body).encode()
    port = httpx.URL(bench.url).port
    raw = socket.create_connection(("127.0.0.1", port), timeout=30)
    head = (
        f"POST {path} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n"
        f"content-type: application/json\r\ncontent-length: {len(payload)}\r\n\r\n"
    )
    raw.sendall(head.encode() + payload)
    return raw


def panels_in_flight(client: httpx.Client) -> float:
    """The `benchwarmers_panels_in_flight` gauge of `/metrics`."""
    text = client.get("/metrics").text
    lines = [line for line in text.splitlines() if line.startswith("benchwarmers_panels_in_flight ")]
    return float(lines[0].split()[1]) if lines else 0.0


def assert_stopped_like_stop(bench: Bench, client: httpx.Client, known: set[str]) -> None:
    """The hung-up panel as the page's Stop leaves one: the seat that was in
    is logged as it finished and can be judged; the one still answering is
    cancelled upstream (the fake saw its connection closed), logged
    `cancelled` in the same ask, and owes no verdict (one is refused);
    nothing of the panel runs on."""
    both = wait_for(lambda: len(new_calls(bench.home, known, "seat")) == 2)
    seats = {r["alias"]: r for r in new_calls(bench.home, known, "seat")}
    assert both, seats
    assert (seats["alpha"]["status"], seats["slow"]["status"]) == ("ok", "cancelled"), seats
    assert len({r["ask_id"] for r in seats.values()}) == 1
    assert wait_for(lambda: ("closed", "slow") in bench.fake.timeline), bench.fake.timeline
    error = rows(bench.home, "SELECT error FROM calls WHERE id = ?", seats["slow"]["id"])[0]["error"]
    assert error == "stopped: the client hung up before the reply", error
    refused = client.post("/bench/verdict", json={"call": seats["slow"]["id"], "useful": False})
    assert refused.status_code == 400, refused.text
    pair = {"better": seats["alpha"]["id"], "worse": seats["slow"]["id"]}
    refused = client.post("/bench/verdict", json=pair)
    assert refused.status_code == 400 and "did not answer (cancelled)" in refused.text, refused.text
    judged = client.post("/bench/verdict", json={"call": seats["alpha"]["id"], "useful": True})
    assert judged.status_code == 200, judged.text
    assert wait_for(lambda: panels_in_flight(client) == 0), panels_in_flight(client)
    assert client.get("/healthz").status_code == 200


@pytest.mark.parametrize("name", sorted(PANEL_STREAMS))
def test_a_panel_stream_hung_up_cancels_the_seats_still_answering(bench: Bench, name: str) -> None:
    known = {row["id"] for row in rows(bench.home, "SELECT id FROM calls")}
    path, body = PANEL_STREAMS[name]
    with httpx.Client(base_url=bench.url, timeout=30) as client, bench.slow_held(started=True):
        # Alpha's status line follows its text once it is done (the stream shows text as written).
        hang_up_when(client, path, body, b"_(ok, ")
        # The slow seat, still held upstream, is cancelled at once, not
        # left to run for nobody: it ends before the hold is let go.
        assert_stopped_like_stop(bench, client, known)


@pytest.mark.parametrize("name", sorted(PANEL_WHOLES))
def test_a_whole_panel_reply_hung_up_cancels_the_seats_still_answering(bench: Bench, name: str) -> None:
    """A client waiting for a whole reply that hangs up (a timeout, Ctrl-C)
    stops the panel as a stream's does: no seat runs on for nobody."""
    known = {row["id"] for row in rows(bench.home, "SELECT id FROM calls")}
    path, body = PANEL_WHOLES[name]
    with httpx.Client(base_url=bench.url, timeout=30) as client, bench.slow_held(started=True):
        since = len(bench.fake.timeline)
        with raw_ask(bench, path, body):
            # Hang up once alpha answered and slow is asked (and held).
            assert wait_for(
                lambda: {("answered", "alpha"), ("asked", "slow")} <= set(bench.fake.timeline[since:])
            )
            assert wait_for(lambda: new_calls(bench.home, known, "seat"))
        assert_stopped_like_stop(bench, client, known)
        # The reply nobody reads is counted as a client that closed its request.
        assert 'status="499"' in client.get("/metrics").text


@pytest.mark.parametrize("words", [1, 0], ids=["mid-reply", "before-first-byte"])
@pytest.mark.parametrize("name", sorted(ROUTE_STREAMS))
def test_a_route_stream_hung_up_cancels_its_member(bench: Bench, name: str, words: int) -> None:
    """A streamed route turn whose client hangs up stops its member's call
    as a whole turn's does: cancelled upstream, logged `cancelled` with the
    hang-up's error (no verdict owed, nothing said of the member's health),
    no failover. The member sends `words` words and is held to the test's
    end: the turn notices its client gone while it waits, not when the
    member next writes. With none, the turn still waits for the member's
    first byte before its response starts (failover needs it; an agent
    interrupted while a local model loads or a reasoning model thinks):
    no 200 was sent, and the hang-up is counted under 499."""
    known = {row["id"] for row in rows(bench.home, "SELECT id FROM calls")}
    path, body = ROUTE_STREAMS[name]
    trickle = bench.fake.models["trickle"]
    trickle.hold, trickle.hold_after = threading.Event(), words
    try:
        with httpx.Client(base_url=bench.url, timeout=30) as client:
            before = hung_up_replies(client)
            since = len(bench.fake.timeline)
            if words:
                hang_up_when(client, path, body, b"word")
            else:
                with raw_ask(bench, path, body):
                    assert wait_for(lambda: ("asked", "trickle") in bench.fake.timeline[since:])
            turn = wait_for(lambda: new_calls(bench.home, known, "route"), timeout=10)
            assert [(r["alias"], r["status"]) for r in turn] == [("trickle", "cancelled")], turn
            error = rows(bench.home, "SELECT error FROM calls WHERE id = ?", turn[0]["id"])[0]["error"]
            assert error == "stopped: the client hung up before the reply", error
            assert wait_for(lambda: ("closed", "trickle") in bench.fake.timeline[since:]), bench.fake.timeline
            refused = client.post("/bench/verdict", json={"call": turn[0]["id"], "useful": False})
            assert refused.status_code == 400, refused.text
            assert words or wait_for(lambda: hung_up_replies(client) > before)
    finally:
        trickle.hold.set()
        trickle.hold, trickle.hold_after = None, None


@pytest.mark.parametrize("path", ["/mcp", "/v1/mcp"])
def test_an_mcp_ask_hung_up_stops_its_panel(bench: Bench, path: str) -> None:
    """An MCP tool call's panel ran on for nobody when its client hung up;
    now it stops as any panel's client hanging up does (docs/mcp.md)."""
    known = {row["id"] for row in rows(bench.home, "SELECT id FROM calls")}
    call = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "tools/call",
        "params": {"name": "ask", "arguments": {"collection": "lagging", "prompt": LAGGING_PROMPT}},
    }
    with httpx.Client(base_url=bench.url, timeout=30) as client, bench.slow_held(started=True):
        with client.stream(
            "POST",
            path,
            content=json.dumps(call),
            headers={**MCP_HEADERS, "content-type": "application/json"},
        ) as reply:
            assert reply.status_code == 200
            assert wait_for(
                lambda: [r for r in new_calls(bench.home, known, "seat") if r["alias"] == "alpha"]
            )
        # Hung up once alpha is in, while slow is held answering.
        assert_stopped_like_stop(bench, client, known)


def test_an_sdk_that_times_out_stops_its_panel(bench: Bench) -> None:
    """The official OpenAI client giving up on a whole reply (its timeout,
    no retry) is a client hanging up: the seat still held upstream is
    cancelled, not left to answer nobody (with retries, each attempt's
    panel would have run on)."""
    known = {row["id"] for row in rows(bench.home, "SELECT id FROM calls")}
    client = openai.OpenAI(base_url=bench.url + "/v1", api_key="unused", timeout=5.0, max_retries=0)
    with httpx.Client(base_url=bench.url, timeout=30) as http, bench.slow_held(started=True):
        with pytest.raises(openai.APITimeoutError):
            client.chat.completions.create(
                model="bench/lagging", messages=[{"role": "user", "content": LAGGING_PROMPT}]
            )
        assert_stopped_like_stop(bench, http, known)


@pytest.mark.parametrize("name", sorted(PANEL_STREAMS))
def test_a_panel_stream_hung_up_before_any_seat_answered_cancels_every_seat(bench: Bench, name: str) -> None:
    """Hung up while the stream still waits for its first answer (its status
    not sent yet): every seat is cancelled upstream and logged `cancelled`."""
    known = {row["id"] for row in rows(bench.home, "SELECT id FROM calls")}
    path, body = PANEL_STREAMS[name]
    alpha = bench.fake.models["alpha"]
    alpha.hold, alpha.hold_after = threading.Event(), 0
    try:
        with bench.slow_held(started=True):
            since = len(bench.fake.timeline)
            with raw_ask(bench, path, body):
                assert wait_for(
                    lambda: {("asked", "alpha"), ("asked", "slow")} <= set(bench.fake.timeline[since:])
                )
            both = wait_for(lambda: len(new_calls(bench.home, known, "seat")) == 2)
            seats = {r["alias"]: r["status"] for r in new_calls(bench.home, known, "seat")}
            assert both and seats == {"alpha": "cancelled", "slow": "cancelled"}, seats
            timeline = bench.fake.timeline
            assert wait_for(lambda: {s for e, s in timeline[since:] if e == "closed"} >= {"alpha", "slow"})
    finally:
        alpha.hold.set()
        alpha.hold, alpha.hold_after = None, None


def as_route_turn(path: str, body: dict[str, Any]) -> tuple[str, dict[str, Any]]:
    """A whole panel ask made a whole route turn on `duo` (alpha, beta)."""
    return path.replace("bench/lagging", "bench/duo:route"), json.loads(
        json.dumps(body).replace("bench/lagging", "bench/duo:route")
    )


# path, body of a whole (non-streamed) route turn, per format route mode serves (not /api/generate).
ROUTE_WHOLES = {
    name: as_route_turn(*PANEL_WHOLES[name])
    for name in ("openai", "responses", "anthropic", "gemini", "ollama-chat")
}


def hung_up_replies(client: httpx.Client) -> float:
    """How many replies `/metrics` counts under status 499 (a client that closed its request)."""
    lines = client.get("/metrics").text.splitlines()
    return sum(
        float(line.split()[-1]) for line in lines if 'status="499"' in line and not line.startswith("#")
    )


@pytest.mark.parametrize(("name", "after"), [*((name, 1) for name in sorted(ROUTE_WHOLES)), ("openai", 0)])
def test_a_whole_route_turn_hung_up_cancels_its_member(bench: Bench, name: str, after: int) -> None:
    """A client waiting for a whole route turn that hangs up stops its
    member's call as a panel's client does: cancelled upstream (not left to
    spend tokens and hold its slot for nobody), logged `cancelled`, and no
    other member asked in its place. `after`: the pieces the member sent
    before it is held (0: the turn still waits for its first byte)."""
    known = {row["id"] for row in rows(bench.home, "SELECT id FROM calls")}
    path, body = ROUTE_WHOLES[name]
    body = json.loads(json.dumps(body).replace(LAGGING_PROMPT, f"{LAGGING_PROMPT} ({name}, {after})"))
    members = [bench.fake.models[alias] for alias in ("alpha", "beta")]
    for model in members:  # whichever drives the conversation is held
        model.hold, model.hold_after = threading.Event(), after
    try:
        with httpx.Client(base_url=bench.url, timeout=30) as client:
            before = hung_up_replies(client)
            since = len(bench.fake.timeline)
            with raw_ask(bench, path, body):
                assert wait_for(lambda: any(event == "asked" for event, _ in bench.fake.timeline[since:]))
            # Ended at once: the member's hold is let go only after the test.
            turn = wait_for(lambda: new_calls(bench.home, known, "route"), timeout=10)
            assert len(turn) == 1 and turn[0]["status"] == "cancelled", turn
            driver = turn[0]["alias"]
            assert wait_for(lambda: ("closed", driver) in bench.fake.timeline[since:]), bench.fake.timeline
            error = rows(bench.home, "SELECT error FROM calls WHERE id = ?", turn[0]["id"])[0]["error"]
            assert error == "stopped: the client hung up before the reply", error
            assert wait_for(lambda: hung_up_replies(client) > before)
            # No failover for a hang-up: the other member was never asked.
            assert [s for e, s in bench.fake.timeline[since:] if e == "asked"] == [driver]
            assert new_calls(bench.home, known, "route") == turn
    finally:
        for model in members:
            model.hold.set()
            model.hold, model.hold_after = None, None
