"""Faults on one seat of a three-seat panel, one kind at a time: the seat
times out, answers 500, 429 with and without headers, malformed JSON, cuts
its stream, sends an error inside its 200 stream, never ends it, drips a
word a second, refuses the connection, or sends a reply larger than any
sane one. Streamed and not, across every
inbound format: the other two seats' answers arrive within the collection's
time, the faulty seat is logged with the right status, and the server keeps
serving with its memory back near where it was."""

from __future__ import annotations

import asyncio
import resource
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from benchwarmers.providers import transport
from benchwarmers.runtime import Runtime
from benchwarmers.store.collections import add_collection
from benchwarmers.store.endpoints import add_endpoint
from benchwarmers.store.models import add_model
from benchwarmers.testing import FakeError, FakeModel, FakeProvider, RateLimit
from benchwarmers.testing.live_server import LiveServer, live_server
from tests.serving import free_port

from .hardening_support import FORMATS, format_request, rows

SEAT_SECONDS = 2.0
HUGE = 64 * 1024  # the reply cap while this module runs (the real one is 32 MB)
FAULTS: dict[str, tuple[dict[str, Any], str]] = {
    "timeout": ({"ttfb": 60.0}, "timeout"),
    "error-500": ({"error": FakeError(500, "the model is on fire")}, "error"),
    "429-headers": ({"rate_limit": RateLimit("retry-after", retry=30)}, "rate_limited"),
    "429-bare": ({"rate_limit": RateLimit("body", retry=30)}, "rate_limited"),
    "malformed": ({"malformed_json": True}, "error"),
    "cut": ({"answer": "one two three four five six", "cut_after": 2, "cut_mode": "abort"}, "error"),
    # An error object inside a 200 stream after some text (OpenRouter does this).
    "stream-error": ({"answer": "one two three four five six", "cut_after": 2, "cut_mode": "error"}, "error"),
    "never-ending": ({"never_ending": True}, "timeout"),
    "drip": ({"answer": " ".join(["drip"] * 60), "tokens_per_second": 1}, "timeout"),
    "refused": ({}, "error"),
    "huge": ({"answer": "word " * (HUGE // 4)}, "error"),
}
MESSAGES = [{"role": "user", "content": "hi"}]
# Each fault streamed and not, the formats taken in turn: every format meets several faults.
CASES = [
    (kind, stream, FORMATS[(i * 2 + int(stream)) % len(FORMATS)])
    for i, kind in enumerate(FAULTS)
    for stream in (False, True)
]


def _register(home: Path, fake: FakeProvider) -> None:
    async def work() -> None:
        async with Runtime.open(home) as runtime:
            store = runtime.store
            await add_endpoint(store, "fake", fake.openai_base, "openai", needs_key=False)
            await add_endpoint(store, "gone", f"http://127.0.0.1:{free_port()}/v1", "openai", needs_key=False)
            for good in ("good-a", "good-b"):
                fake.add(FakeModel(good, answer=f"{good} says hi"))
                await add_model(store, good, "fake", good)
            for kind, (script, _status) in FAULTS.items():
                alias = f"bad-{kind}"
                fake.add(FakeModel(alias, **script))
                await add_model(store, alias, "gone" if kind == "refused" else "fake", alias)
                await add_collection(
                    store, f"f-{kind}", ["good-a", "good-b", alias], seat_timeout=SEAT_SECONDS
                )

            # Route mode with every member refused by a quota that says not when.
            fake.add(FakeModel("quota", rate_limit=RateLimit("day")))
            await add_model(store, "quota", "fake", "quota")
            await add_collection(store, "all-limited", ["quota"], seat_timeout=SEAT_SECONDS)

    asyncio.run(work())


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveServer]:
    home = tmp_path_factory.mktemp("home")
    with pytest.MonkeyPatch.context() as patch, FakeProvider() as fake:
        patch.setattr(transport, "MAX_REPLY_BYTES", HUGE)
        _register(home, fake)
        with live_server(home) as live:
            yield live


def _rss_mb() -> float:
    """This process's resident memory now (the live server runs in it)."""
    pages = int(Path("/proc/self/statm").read_text().split()[1])
    return pages * resource.getpagesize() / 2**20


@pytest.mark.parametrize(
    ("kind", "stream", "fmt"), CASES, ids=[f"{k}-{f}-{'stream' if s else 'whole'}" for k, s, f in CASES]
)
def test_one_faulty_seat_leaves_the_others_answering(
    server: LiveServer, kind: str, stream: bool, fmt: str
) -> None:
    path, body = format_request(fmt, f"bench/f-{kind}", stream)
    reply = httpx.post(server.url + path, json=body, timeout=SEAT_SECONDS * 10)
    assert reply.status_code == 200, reply.text
    assert "good-a says hi" in reply.text and "good-b says hi" in reply.text, reply.text[:500]
    [latest] = rows(
        server.home,
        "SELECT ask_id FROM calls WHERE collection = ? AND kind = 'seat' ORDER BY rowid DESC LIMIT 1",
        f"f-{kind}",
    )
    seats = {
        r["alias"]: r
        for r in rows(
            server.home, "SELECT alias, status, error FROM calls WHERE ask_id = ?", latest["ask_id"]
        )
    }
    assert seats["good-a"]["status"] == seats["good-b"]["status"] == "ok"
    expected = FAULTS[kind][1]
    if expected == "rate_limited" and f"bad-{kind}" not in seats:
        return  # resting since its first 429 (until the reset it sent): not seated at all
    assert seats[f"bad-{kind}"]["status"] == expected, seats[f"bad-{kind}"]
    if kind == "stream-error":  # the upstream's own words, not a 500 of ours
        assert "the model is overloaded" in seats[f"bad-{kind}"]["error"], seats[f"bad-{kind}"]
    assert httpx.get(server.url + "/healthz", timeout=10).status_code == 200


def test_the_server_keeps_serving_and_memory_stays_near_its_level(
    server: LiveServer, counts: Callable[[str], None]
) -> None:
    async def every_case_at_once() -> list[int]:  # side by side: the seats' timeouts overlap
        async with httpx.AsyncClient(base_url=server.url, timeout=SEAT_SECONDS * 10) as http:
            asks = [format_request(fmt, f"bench/f-{kind}", stream) for kind, stream, fmt in CASES]
            replies = await asyncio.gather(*(http.post(path, json=body) for path, body in asks))
        return [reply.status_code for reply in replies]

    before = _rss_mb()
    assert asyncio.run(every_case_at_once()) == [200] * len(CASES)
    after = _rss_mb()
    counts(f"fault matrix: {len(CASES)} faulty panels more, RSS {before:.0f} -> {after:.0f} MB")
    assert after - before < 300


def test_a_429_with_no_time_from_upstream_still_carries_retry_after(server: LiveServer) -> None:
    body: dict[str, Any] = {"model": "bench/all-limited:route", "messages": MESSAGES}
    reply = httpx.post(server.url + "/v1/chat/completions", json=body, timeout=SEAT_SECONDS * 10)
    assert reply.status_code == 429, reply.text
    assert int(reply.headers["retry-after"]) >= 1
