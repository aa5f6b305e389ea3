"""Nothing a caller sends can lose a record: a flood of refused requests
leaves the call log and the verdicts exactly as they were; a valid verdict
sent in the middle of the flood is recorded exactly once; valid asks and
verdicts sent concurrently with junk all land."""

from __future__ import annotations

import json
import random
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import httpx
import pytest

from benchwarmers.server.guard import MAX_JSON_DEPTH
from tests.waiting import wait_for

from .hardening_support import (
    POST_ROUTES,
    Bench,
    Snapshot,
    ask_body,
    check_reply,
    headers_for,
    rows,
    seat_calls,
)


def junk_requests(seed: int, count: int) -> list[tuple[str, bytes]]:
    """Requests every route must refuse: not JSON, not UTF-8, NaN, too deep,
    wrong types, unknown collections and calls."""
    rng = random.Random(seed)
    makers = [
        lambda body: json.dumps(body).encode()[:-1],
        lambda body: json.dumps(body).encode(rng.choice(["utf-16", "utf-32", "utf-8-sig"])),
        lambda body: json.dumps({**body, "temperature": float("nan")}).encode(),
        lambda body: b"[" * (MAX_JSON_DEPTH + 1) + b"]" * (MAX_JSON_DEPTH + 1),
        lambda body: json.dumps([body]).encode(),
        # An unknown collection or call (a pending check of unknown ids is no mistake).
        lambda body: (
            json.dumps(body).replace("trio", "nope").replace("c_none", "c_gone").encode()
            if "trio" in json.dumps(body) or "useful" in body
            else b"{" + json.dumps(body).encode()
        ),
        lambda body: rng.randbytes(rng.randint(1, 40)),
    ]
    paths = [p for p in POST_ROUTES if not p.endswith("/mcp")]
    out = []
    for _ in range(count):
        path = rng.choice(paths)
        out.append((path, rng.choice(makers)(POST_ROUTES[path])))
    return out


def send_junk(client: httpx.Client, path: str, content: bytes) -> None:
    reply = client.post(path, content=content, headers=headers_for(path))
    check_reply(reply, path, content[:100])
    assert 400 <= reply.status_code < 500, (path, content[:100], reply.status_code, reply.text[:200])


@pytest.fixture(scope="module")
def judged(client: httpx.Client) -> list[str]:
    """A few seats, the first two already judged."""
    calls = seat_calls(client) + seat_calls(client, "duo")
    for call in calls[:2]:
        client.post(
            "/bench/verdict", json={"call": call, "useful": True, "note": "before"}
        ).raise_for_status()
    return calls


def test_a_flood_of_refused_requests_changes_nothing(
    bench: Bench, client: httpx.Client, judged: list[str]
) -> None:
    before = Snapshot.of(bench.home)
    for path, content in junk_requests(1, 300):
        send_junk(client, path, content)
    # Refusals about real calls too: a bad verdict on a judged seat does not touch its verdict.
    for call in judged[:2]:
        for body in (
            {"call": call, "useful": "no"},
            {"call": call, "useful": False, "note": 5},
            {"call": call},
        ):
            send_junk(client, "/bench/verdict", json.dumps(body).encode())
    assert Snapshot.of(bench.home) == before


def test_a_valid_verdict_among_junk_is_recorded_once(
    bench: Bench, client: httpx.Client, judged: list[str]
) -> None:
    call = judged[2]
    before = Snapshot.of(bench.home)
    flood = junk_requests(2, 60)
    for index, (path, content) in enumerate(flood):
        send_junk(client, path, content)
        if index in (20, 40):  # the same verdict twice: the second writes nothing
            reply = client.post("/bench/verdict", json={"call": call, "useful": False, "note": "among junk"})
            assert reply.status_code == 200, reply.text
            assert reply.json()["recorded"]["changed"] is (index == 20)
    after = Snapshot.of(bench.home)
    assert after.calls == before.calls
    assert after.verdicts - before.verdicts == {(call, 0, "among junk")}
    assert rows(bench.home, "SELECT count(*) AS n FROM verdicts WHERE call_id = ?", call) == [{"n": 1}]


def test_concurrent_asks_and_verdicts_among_junk_all_land(
    bench: Bench, client: httpx.Client, judged: list[str]
) -> None:
    before = Snapshot.of(bench.home)
    to_judge = judged[3:]
    assert to_judge, "the fixture asks for more seats than it judges"
    work: list[tuple[str, Any]] = [("junk", item) for item in junk_requests(3, 120)]
    work += [("ask", index) for index in range(8)]
    work += [("verdict", call) for call in to_judge]
    random.Random(4).shuffle(work)

    def run(item: tuple[str, Any]) -> list[str]:
        kind, what = item
        with httpx.Client(base_url=bench.url, timeout=30) as own:
            if kind == "junk":
                send_junk(own, *what)
                return []
            if kind == "verdict":
                reply = own.post("/bench/verdict", json={"call": what, "useful": True, "note": "concurrent"})
                assert reply.status_code == 200, reply.text
                return []
            reply = own.post("/v1/chat/completions", json=ask_body(prompt=f"question {what}"))
            assert reply.status_code == 200, reply.text
            seats = reply.json()["bench"]["seats"]
            assert all(seat["status"] == "ok" for seat in seats), [
                (seat["alias"], seat["status"], seat.get("error")) for seat in seats
            ]
            return [seat["call"] for seat in seats]

    with ThreadPoolExecutor(16) as pool:
        asked = [call for calls in pool.map(run, work) for call in calls]
    assert len(asked) == 8 * 3 and len(set(asked)) == len(asked)
    after = Snapshot.of(bench.home)
    new_calls = {call_id for call_id, _, _ in after.calls - before.calls}
    assert new_calls == set(asked)
    assert {(c, k, s) for c, k, s in after.calls if c in new_calls} == {(c, "seat", "ok") for c in asked}
    assert after.verdicts - before.verdicts == {(call, 1, "concurrent") for call in to_judge}
    assert before.verdicts <= after.verdicts


def test_refused_asks_spend_no_calls(bench: Bench, client: httpx.Client) -> None:
    """An ask refused for its body writes no call row: nothing was asked."""
    before = len(rows(bench.home, "SELECT id FROM calls"))
    bad = [
        ask_body("nope"),
        {**ask_body(), "messages": []},
        {**ask_body(), "messages": [{"role": "user", "content": 5}]},
        {**ask_body(), "max_tokens": -1},
        {**ask_body(), "tools": "x"},
    ]
    for body in bad:
        reply = client.post("/v1/chat/completions", content=json.dumps(body).encode())
        check_reply(reply, "/v1/chat/completions", body)
    assert wait_for(lambda: len(rows(bench.home, "SELECT id FROM calls")) == before, timeout=0.3) is True
