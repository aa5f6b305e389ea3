"""The panel through `POST /v1/chat/completions`, with the official `openai`
client against the live server, whose one endpoint is the fake provider."""

from __future__ import annotations

import asyncio
import json
import socket
import sqlite3
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx
import openai
import pytest

from benchwarmers.identity.keys import create_key
from benchwarmers.limits.user_limits import set_limits
from benchwarmers.testing.fake_provider import FakeProvider
from benchwarmers.testing.live_server import settle_logs
from benchwarmers.testing.script import FakeError, FakeModel, RateLimit, merger
from tests.waiting import wait_for

TRIO = {"trio": {"members": ["fast", "mid", "slow"], "purpose": "three opinions"}}


def trio_models() -> list[FakeModel]:
    return [
        FakeModel("fast", answer="fast answer", ttfb=0.2),
        FakeModel("mid", answer="mid answer", ttfb=0.4),
        FakeModel("slow", answer="slow answer", ttfb=0.6),
    ]


class HeldTrio:
    """The trio with each seat held (the fake's hold event) until the test
    lets it answer: concurrency and streaming shown by order of events, not
    by 0.2 s between seats, which a loaded machine can swallow. A watchdog
    lets every seat answer after `SAFETY` seconds, so a panel that does not
    do what the test waits for fails it instead of hanging."""

    SAFETY = 30.0

    def __init__(self) -> None:
        self.holds = {name: threading.Event() for name in ("fast", "mid", "slow")}
        self.models = [FakeModel(name, answer=f"{name} answer", hold=self.holds[name]) for name in self.holds]

    def release(self, *names: str) -> None:
        for name in names or tuple(self.holds):
            self.holds[name].set()

    @contextmanager
    def unheld(self) -> Iterator[None]:
        """Every seat answers at once (a warm-up ask)."""
        self.release()
        try:
            yield
        finally:
            for hold in self.holds.values():
                hold.clear()

    @contextmanager
    def watched(self) -> Iterator[None]:
        watchdog = threading.Timer(self.SAFETY, self.release)
        watchdog.start()
        try:
            yield
        finally:
            watchdog.cancel()
            self.release()


def call_rows(home: Path) -> dict[str, dict[str, Any]]:
    settle_logs()  # replies do not wait for their calls' commit
    with sqlite3.connect(home / "benchwarmers.db") as db:
        db.row_factory = sqlite3.Row
        return {row["id"]: dict(row) for row in db.execute("SELECT * FROM calls")}


def client(server: Any) -> openai.OpenAI:
    return openai.OpenAI(base_url=f"{server.url}/v1", api_key="unused", max_retries=0)


def warm_up(server: Any) -> None:
    """One ask first, so the timed one measures the panel, not first-use
    imports and caches in a freshly started server."""
    client(server).chat.completions.create(model="bench/trio", messages=[{"role": "user", "content": "warm"}])


def asked_before_any_answer(fake: FakeProvider, since: int) -> list[str]:
    """The seats the fake was asked for before it sent any answer (from the
    `since`-th event of its timeline): all of them when the seats run together."""
    asked = []
    for event, served in fake.timeline[since:]:
        if event == "answered":
            break
        asked.append(served)
    return asked


def test_three_seats_answer_together_sync(panel_server: Any, fake_provider: FakeProvider) -> None:
    trio = HeldTrio()
    with panel_server(trio.models, TRIO) as server:
        with trio.unheld():
            warm_up(server)
        since = len(fake_provider.timeline)

        def release_once_all_are_asked() -> None:
            wait_for(lambda: len(asked_before_any_answer(fake_provider, since)) == 3, timeout=trio.SAFETY)
            trio.release()

        releaser = threading.Thread(target=release_once_all_are_asked)
        releaser.start()
        with trio.watched():
            reply = client(server).chat.completions.create(
                model="bench/trio", messages=[{"role": "user", "content": "what is up?"}]
            )
        releaser.join()
        # One after the other, the first seat (held until all three are asked) would
        # answer before the others are asked.
        assert sorted(asked_before_any_answer(fake_provider, since)) == ["fast", "mid", "slow"], (
            "not concurrent"
        )
        bench = reply.model_extra["bench"]
        assert [s["alias"] for s in bench["seats"]] == ["fast", "mid", "slow"]
        assert [s["status"] for s in bench["seats"]] == ["ok", "ok", "ok"]
        assert bench["collection"] == "bench/trio" and bench["shape"] == "short"
        text = reply.choices[0].message.content
        for seat in bench["seats"]:
            assert f"{seat['seat']} · {seat['alias']}" in text and seat["content"] in text
            assert seat["call"] in text
        rows = call_rows(server.home)
        for seat in bench["seats"]:
            row = rows[seat["call"]]
            assert (row["kind"], row["status"], row["alias"]) == ("seat", "ok", seat["alias"])
            assert row["task"] == "panel seat (bench/trio, short)"
            assert row["tokens_out"] == 2
        assert len({s["call"] for s in bench["seats"]}) == 3
        settle_logs()
        with sqlite3.connect(server.home / "benchwarmers.db") as db:
            ledger = {
                row[0]: row[1:] for row in db.execute("SELECT served, requests, tokens_out FROM usage_ledger")
            }
        # Both asks (the warm-up and this one) asked each seat once, for two tokens.
        assert ledger == {alias: (2, 4) for alias in ("fast", "mid", "slow")}


async def test_three_seats_stream_async(panel_server: Any, fake_provider: FakeProvider) -> None:
    trio = HeldTrio()
    with panel_server(trio.models, TRIO) as server:
        with trio.unheld():
            await asyncio.to_thread(warm_up, server)
        since = len(fake_provider.timeline)
        aclient = openai.AsyncOpenAI(base_url=f"{server.url}/v1", api_key="unused", max_retries=0)
        # What the fake had answered when each piece arrived: order of events, not a clock.
        answered_by: list[tuple[list[str], str]] = []
        bench = None
        first_chunk_after: list[str] | None = None
        # Each seat may answer once the one before it has reached the client.
        after = {"fast": "mid", "mid": "slow"}

        def answered() -> list[str]:
            return [served for event, served in fake_provider.timeline[since:] if event == "answered"]

        def all_asked() -> bool:
            return len(asked_before_any_answer(fake_provider, since)) == 3

        async def release_fast_once_all_asked() -> None:
            await asyncio.to_thread(wait_for, all_asked, trio.SAFETY)
            trio.release("fast")

        with trio.watched():
            # The stream opens with the first seat that answers (a panel no seat answered is an
            # error in the caller's format, docs/api.md), so the fast seat goes once all are asked.
            releaser = asyncio.create_task(release_fast_once_all_asked())
            stream = await aclient.chat.completions.create(
                model="bench/trio",
                messages=[{"role": "user", "content": "hi"}],
                stream=True,
                extra_headers={"x-bench-stream": "sections"},  # each seat whole as it finishes
            )
            async for chunk in stream:
                if first_chunk_after is None:
                    first_chunk_after = answered()
                    assert chunk.choices[0].delta.role == "assistant"
                content = chunk.choices[0].delta.content if chunk.choices else None
                if content:
                    answered_by.append((answered(), content))
                    seat = content.split(" · ")[1].split(" ")[0] if " · " in content else ""
                    if seat in after:
                        trio.release(after[seat])
                if chunk.model_extra.get("bench"):
                    bench = chunk.model_extra["bench"]
        assert sorted(asked_before_any_answer(fake_provider, since)) == ["fast", "mid", "slow"], (
            "not concurrent"
        )
        assert [piece.split(" · ")[1].split(" ")[0] for _done, piece in answered_by] == [
            "fast",
            "mid",
            "slow",
        ]
        await releaser
        assert first_chunk_after == ["fast"], "the stream starts with the first seat, before the others"
        # Each seat arrives as it finishes, not all at the end: the slow seat
        # had not answered when the fast and the mid seats' pieces arrived.
        assert ["slow" not in done for done, _piece in answered_by[:2]] == [True, True]
        assert bench is not None and [s["status"] for s in bench["seats"]] == ["ok", "ok", "ok"]


def test_stream_sync_and_nonstream_async(panel_server: Any) -> None:
    with panel_server(trio_models(), TRIO) as server:
        pieces = [
            c.choices[0].delta.content or ""
            for c in client(server).chat.completions.create(
                model="bench/trio", messages=[{"role": "user", "content": "hi"}], stream=True
            )
            if c.choices
        ]
        assert "fast answer" in "".join(pieces) and "slow answer" in "".join(pieces)

        async def ask() -> Any:
            aclient = openai.AsyncOpenAI(base_url=f"{server.url}/v1", api_key="unused", max_retries=0)
            return await aclient.chat.completions.create(
                model="bench/trio", messages=[{"role": "user", "content": "hi"}]
            )

        reply = asyncio.run(ask())
        assert len(reply.model_extra["bench"]["seats"]) == 3


@pytest.mark.parametrize("stream", [False, True])
def test_failing_seats_leave_the_others_intact(panel_server: Any, stream: bool) -> None:
    models = [
        FakeModel("good", answer="a good answer", ttfb=0.05),
        FakeModel("broken", error=FakeError(500, "upstream exploded")),
        FakeModel("sleepy", answer="too late", ttfb=60.0),
        FakeModel("limited", rate_limit=RateLimit("retry-after", retry=30)),
        FakeModel("cut", answer="one two three four five six", cut_after=2, cut_mode="abort"),
    ]
    aliases = [m.served for m in models]
    # The good seat answers in 0.05 s and the sleepy one in 60 s: a 3 s timeout is
    # many times either, so a loaded machine neither times out the one nor waits for the other.
    collections = {"rough": {"members": aliases, "seat_timeout": 3.0}}
    with panel_server(models, collections) as server:
        started = time.monotonic()
        if stream:
            bench = None
            for chunk in client(server).chat.completions.create(
                model="bench/rough", messages=[{"role": "user", "content": "hi"}], stream=True
            ):
                bench = chunk.model_extra.get("bench") or bench
        else:
            reply = client(server).chat.completions.create(
                model="bench/rough", messages=[{"role": "user", "content": "hi"}]
            )
            bench = reply.model_extra["bench"]
            assert "a good answer" in reply.choices[0].message.content
        assert time.monotonic() - started < 30.0, "a timed-out seat must not hold the panel past its timeout"
        assert bench is not None
        status = {s["alias"]: s["status"] for s in bench["seats"]}
        assert status == {
            "good": "ok",
            "broken": "error",
            "sleepy": "timeout",
            "limited": "rate_limited",  # the provider's 429; `limited` is our own refusal
            "cut": "error",
        }
        by_alias = {s["alias"]: s for s in bench["seats"]}
        assert by_alias["good"]["content"] == "a good answer"
        assert "exploded" in by_alias["broken"]["error"]
        assert by_alias["limited"]["freesAt"]
        rows = call_rows(server.home)
        for seat in bench["seats"]:
            assert rows[seat["call"]]["status"] == seat["status"]


def test_merged_reply_with_its_report(panel_server: Any) -> None:
    def report(request: Any) -> str:
        # Read the anonymised answers back and say which letters hold "yes".
        holders, against = [], []
        for block in request.prompt.split("## Seat ")[1:]:
            letter, _, answer = block.partition("\n\n")
            (holders if "yes" in answer else against).append(letter.strip())
        sides = [{"position": "yes", "seats": holders}, {"position": "no", "seats": against}]
        return json.dumps(
            {
                "consensus": ["a question was asked"],
                "contradictions": [{"point": "the answer", "sides": sides}],
                "unique": [{"point": "indeed", "seat": holders[-1], "right": None}],
                "gaps": ["why"],
                "confidence": 0.7,
            }
        )

    models = [
        FakeModel("one", answer="yes", ttfb=0.02),
        FakeModel("two", answer="yes indeed", ttfb=0.04),
        FakeModel("three", answer="no", ttfb=0.06),
        FakeModel("judge", answer=merger("Mostly yes. Seats disagreed once.", report)),
    ]
    collections = {"trio": {"members": ["one", "two", "three"], "merger": "judge"}}
    with panel_server(models, collections) as server:
        reply = client(server).chat.completions.create(
            model="bench/trio:merged", messages=[{"role": "user", "content": "yes or no?"}]
        )
        assert reply.choices[0].message.content == "Mostly yes. Seats disagreed once."
        bench = reply.model_extra["bench"]
        assert len(bench["seats"]) == 3
        merged = bench["merged"]
        assert merged["alias"] == "judge" and merged["status"] == "ok" and merged["call"]
        label = {s["alias"]: s["seat"] for s in bench["seats"]}
        found = merged["report"]
        assert found["confidence"] == 0.7 and found["gaps"] == ["why"]
        yes, no = found["contradictions"][0]["sides"]
        assert sorted(yes["seats"]) == sorted([label["one"], label["two"]])
        assert no["seats"] == [label["three"]]
        assert found["unique"][0]["seat"] in (label["one"], label["two"])
        point = next(p for p in merged["agreement"] if p["point"] == "the answer: yes")
        assert sorted(point["heldBy"]) == sorted([label["one"], label["two"]])
        assert point["contradictedBy"] == [label["three"]]
        rows = call_rows(server.home)
        assert rows[merged["call"]]["kind"] == "merge"

        # The merge takes a verdict like a seat, and the record keeps it apart.
        base = server.url
        ok = httpx.post(f"{base}/bench/verdict", json={"call": merged["call"], "useful": True})
        assert ok.status_code == 200
        record = httpx.get(f"{base}/bench/record", params={"collection": "bench/trio"}).json()
        assert record["merged"]["useful"] == 1 and record["aliases"] == {}

        # Streamed, the merged answer arrives as it is written, bench last.
        text, bench = "", None
        for chunk in client(server).chat.completions.create(
            model="bench/trio:merged", messages=[{"role": "user", "content": "yes or no?"}], stream=True
        ):
            text += (chunk.choices[0].delta.content or "") if chunk.choices else ""
            bench = chunk.model_extra.get("bench") or bench
        assert text == "Mostly yes. Seats disagreed once."
        assert bench is not None and bench["merged"]["report"]["confidence"] == 0.7


def test_merger_never_sees_model_names_and_fails_over(panel_server: Any, fake_provider: Any) -> None:
    def alpha(request: Any) -> str:
        if "Seat A" in request.prompt:
            raise RuntimeError("alpha cannot merge today")
        return "four, says the first"

    models = [FakeModel("alpha", answer=alpha), FakeModel("beta", answer="four, says the second")]
    # No merger set: members merge by record; with none judged, in member order.
    with panel_server(models, {"duo": {"members": ["alpha", "beta"], "reply": "merged"}}) as server:
        reply = client(server).chat.completions.create(
            model="bench/duo", messages=[{"role": "user", "content": "2+2?"}]
        )
        bench = reply.model_extra["bench"]
        assert {s["alias"]: s["status"] for s in bench["seats"]} == {"alpha": "ok", "beta": "ok"}
        # alpha was first in line and failed; beta merged.
        assert bench["merged"]["alias"] == "beta" and bench["merged"]["status"] == "ok"
        assert fake_provider.calls["alpha"] == 3  # its seat, then the merge and the report, both failed
        merge_prompt = fake_provider.last("beta").prompt
        assert "Seat A" in merge_prompt and "Seat B" in merge_prompt
        assert "alpha" not in merge_prompt and "beta" not in merge_prompt
        assert "four, says the first" in merge_prompt


def test_all_mergers_fail_gives_the_panel_with_a_note(panel_server: Any) -> None:
    models = [
        FakeModel("one", answer="first"),
        FakeModel("two", answer="second"),
        FakeModel("judge", error=FakeError(500, "judge is out")),
    ]
    with panel_server(models, {"duo": {"members": ["one", "two"], "merger": "judge"}}) as server:
        reply = client(server).chat.completions.create(
            model="bench/duo:merged", messages=[{"role": "user", "content": "q"}]
        )
        text = reply.choices[0].message.content
        assert "No merger answered" in text and "first" in text and "second" in text
        merged = reply.model_extra["bench"]["merged"]
        assert merged["status"] == "error" and "judge" in merged["note"]


def test_tools_unknown_collections_and_models_list(panel_server: Any) -> None:
    with panel_server(trio_models(), TRIO) as server:
        c = client(server)
        with pytest.raises(openai.BadRequestError) as bad:
            c.chat.completions.create(
                model="bench/trio",
                messages=[{"role": "user", "content": "hi"}],
                tools=[{"type": "function", "function": {"name": "f", "parameters": {"type": "object"}}}],
            )
        assert "bench/trio:route" in str(bad.value) or "route mode" in str(bad.value)
        with pytest.raises(openai.NotFoundError) as missing:
            c.chat.completions.create(model="bench/nope", messages=[{"role": "user", "content": "hi"}])
        assert "bench/trio" in str(missing.value)
        with pytest.raises(openai.BadRequestError) as not_ours:
            c.chat.completions.create(model="gpt-4o", messages=[{"role": "user", "content": "hi"}])
        assert "bench/<collection>" in str(not_ours.value)
        listed = c.models.list()
        ids = [m.id for m in listed.data]
        assert ids == ["bench/trio"]
        assert listed.data[0].model_extra["purpose"] == "three opinions"
        assert listed.data[0].model_extra["members"] == ["fast", "mid", "slow"]
        malformed = httpx.post(
            f"{server.url}/v1/chat/completions", json={"model": "bench/trio", "messages": 3}
        )
        assert malformed.status_code == 400 and "messages" in malformed.json()["error"]["message"]


def test_models_retrieve_answers_what_the_list_carries(panel_server: Any) -> None:
    """`models.retrieve` (`GET /v1/models/{model}`, the slash kept): the
    list's entry, validated by the SDK's `Model`, under each of the
    collection's names; a model the list lacks is a 404 in OpenAI's shape."""
    with panel_server(trio_models(), TRIO) as server:
        c = client(server)
        (listed,) = c.models.list().data
        for name in listed.model_extra["modes"]:
            got = c.models.retrieve(name)
            assert isinstance(got, openai.types.Model) and got.object == "model"
            assert got.model_dump() == {**listed.model_dump(), "id": name}
        with pytest.raises(openai.NotFoundError) as missing:
            c.models.retrieve("bench/nope")
        assert missing.value.body["type"] == "not_found_error" and "bench/trio" in missing.value.message  # type: ignore[index]
        raw = httpx.get(f"{server.url}/v1/models/bench/trio:generateContent")
        assert raw.status_code == 405 and "is a POST" in raw.json()["error"]["message"]


def test_left_off_for_images_and_context_window(panel_server: Any) -> None:
    models = [
        FakeModel("reader", answer="I see a cat"),
        FakeModel("eyes", answer="a cat, clearly"),
        FakeModel("tiny", answer="short"),
        FakeModel("painter", answer="an image"),
    ]
    facts = {
        "eyes": {"role": "vision"},
        "reader": {"vision": True},
        "tiny": {"context_window": 400},
        "painter": {"role": "image"},
    }
    with panel_server(models, {"mixed": {"members": ["reader", "eyes", "tiny", "painter"]}}, facts) as server:
        c = client(server)
        plain = c.chat.completions.create(
            model="bench/mixed", messages=[{"role": "user", "content": "hello"}]
        )
        bench = plain.model_extra["bench"]
        assert [s["alias"] for s in bench["seats"]] == ["reader", "tiny"]
        reasons = {m["alias"]: m["reason"] for m in bench["leftOff"]}
        assert "seated only for requests with images" in reasons["eyes"]
        assert "image model" in reasons["painter"]
        assert "Left off this panel" in plain.choices[0].message.content

        pixel = (
            "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg=="
        )
        image = c.chat.completions.create(
            model="bench/mixed",
            messages=[
                {
                    "role": "user",
                    "content": [
                        {"type": "text", "text": "what is this?"},
                        {"type": "image_url", "image_url": {"url": f"data:image/png;base64,{pixel}"}},
                    ],
                }
            ],
        )
        bench = image.model_extra["bench"]
        assert bench["shape"] == "vision"
        assert [s["alias"] for s in bench["seats"]] == ["reader", "eyes"]
        assert "cannot read images" in {m["alias"]: m["reason"] for m in bench["leftOff"]}["tiny"]

        long_prompt = "word " * 2000
        long = c.chat.completions.create(
            model="bench/mixed", messages=[{"role": "user", "content": long_prompt}]
        )
        reasons = {m["alias"]: m["reason"] for m in long.model_extra["bench"]["leftOff"]}
        assert reasons["tiny"].startswith("context window 400 < ")
        assert [s["alias"] for s in long.model_extra["bench"]["seats"]] == ["reader"]


@pytest.mark.parametrize("stream", [False, True])
def test_a_client_that_hangs_up_still_gets_every_seat_recorded(
    panel_server: Any, fake_provider: FakeProvider, stream: bool
) -> None:
    with panel_server(trio_models(), TRIO) as server:
        body = {"model": "bench/trio", "messages": [{"role": "user", "content": "hi"}], "stream": stream}
        if stream:
            with httpx.stream("POST", f"{server.url}/v1/chat/completions", json=body, timeout=60) as response:
                next(response.iter_lines())  # the role chunk, then hang up
        else:
            # Hang up once the seats are asked, not on a client timeout that a
            # loaded machine can reach before the request is even read.
            since = len(fake_provider.timeline)
            port = httpx.URL(server.url).port
            payload = json.dumps(body).encode()
            head = (
                f"POST /v1/chat/completions HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n"
                f"content-type: application/json\r\ncontent-length: {len(payload)}\r\n\r\n"
            )
            with socket.create_connection(("127.0.0.1", port), timeout=60) as raw:
                raw.sendall(head.encode() + payload)
                assert wait_for(lambda: any(event == "asked" for event, _ in fake_provider.timeline[since:]))
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            rows = [r for r in call_rows(server.home).values() if r["kind"] == "seat"]
            if len(rows) == 3:
                break
            time.sleep(0.05)
        # Hung up, the panel stopped as the page's Stop stops it: a seat in
        # before is logged as it answered, one still answering `cancelled`
        # (tests/server/routes/test_disconnect.py holds the seats to show which).
        assert sorted(r["alias"] for r in rows) == ["fast", "mid", "slow"]
        assert {r["status"] for r in rows} <= {"ok", "cancelled"}, rows


def test_a_key_sees_and_calls_only_its_collections(panel_server: Any) -> None:
    async def key_for_trio(runtime: Any) -> str:
        await runtime.settings.set_named("require_key", "true")
        _info, secret = await create_key(runtime.store, "trio-only", collections=("bench/trio",))
        return secret

    collections = {**TRIO, "other": {"members": ["fast"]}}
    with panel_server(trio_models(), collections, then=key_for_trio) as server:
        keyed = openai.OpenAI(base_url=f"{server.url}/v1", api_key=server.prepared, max_retries=0)
        assert [m.id for m in keyed.models.list().data] == ["bench/trio"]
        assert keyed.models.retrieve("bench/trio:merged").id == "bench/trio:merged"
        with pytest.raises(openai.NotFoundError) as unlisted:  # not this key's: not in its list either
            keyed.models.retrieve("bench/other")
        assert "bench/other'" in str(unlisted.value) and "bench/trio" in str(unlisted.value)
        with pytest.raises(openai.PermissionDeniedError):
            keyed.chat.completions.create(model="bench/other", messages=[{"role": "user", "content": "hi"}])
        with pytest.raises(openai.NotFoundError) as missing:
            keyed.chat.completions.create(model="bench/gone", messages=[{"role": "user", "content": "hi"}])
        assert "bench/trio" in str(missing.value) and "bench/other" not in str(missing.value)
        reply = keyed.chat.completions.create(
            model="bench/trio", messages=[{"role": "user", "content": "hi"}]
        )
        assert len(reply.model_extra["bench"]["seats"]) == 3
        with pytest.raises(openai.AuthenticationError):
            client(server).chat.completions.create(
                model="bench/trio", messages=[{"role": "user", "content": "x"}]
            )


def test_our_own_limit_refuses_a_seat_before_it_goes_out(panel_server: Any, fake_provider: Any) -> None:
    async def one_a_minute(runtime: Any) -> None:
        await set_limits(runtime.store, "fake", "slow", {"rpm": 1})

    # The wait (a minute) does not fit in a seat's 2 s, so the seat is refused at once.
    trio = {"trio": {**TRIO["trio"], "seat_timeout": 2.0}}
    with panel_server(trio_models(), trio, then=one_a_minute) as server:
        client(server).chat.completions.create(
            model="bench/trio", messages=[{"role": "user", "content": "a"}]
        )
        reply = client(server).chat.completions.create(
            model="bench/trio", messages=[{"role": "user", "content": "b"}]
        )
        seats = {s["alias"]: s for s in reply.model_extra["bench"]["seats"]}
        assert (seats["fast"]["status"], seats["mid"]["status"]) == ("ok", "ok")
        assert seats["slow"]["status"] == "limited" and seats["slow"]["freesAt"]
        assert fake_provider.calls["slow"] == 1  # the second never went out
        settle_logs()
        with sqlite3.connect(server.home / "benchwarmers.db") as db:
            requests = db.execute("SELECT requests FROM usage_ledger WHERE served = 'slow'").fetchone()[0]
        assert requests == 1
        assert call_rows(server.home)[seats["slow"]["call"]]["status"] == "limited"


def test_the_explorer_seat_rotates_and_never_goes_to_an_ad_hoc_model(panel_server: Any) -> None:
    models = [FakeModel("member"), FakeModel("new1"), FakeModel("new2"), FakeModel("private")]
    facts = {"private": {"ad_hoc": True}}
    with panel_server(models, {"solo": {"members": ["member"], "explorer_seats": 1}}, facts) as server:
        explorers = []
        for _ in range(2):
            reply = client(server).chat.completions.create(
                model="bench/solo", messages=[{"role": "user", "content": "hi"}]
            )
            seats = reply.model_extra["bench"]["seats"]
            assert seats[0]["alias"] == "member" and "explorer" not in seats[0]
            assert len(seats) == 2 and seats[1]["explorer"] is True
            explorers.append(seats[1]["alias"])
        assert sorted(explorers) == ["new1", "new2"]  # fewest seats first: it rotates
        assert call_rows(server.home)[seats[1]["call"]]["explorer"] == 1


@pytest.mark.parametrize("mode", ["", ":merged"])
def test_a_big_max_tokens_is_clamped_per_member_and_bench_says_so(
    panel_server: Any, fake_provider: FakeProvider, mode: str
) -> None:
    """64000 (the openai SDK's agents) against members that write 4096 and
    16384: each is asked for what it can write, none is left off."""
    models = [FakeModel("small", answer="small answers"), FakeModel("big", answer="big answers")]
    facts = {"small": {"output_limit": 4096}, "big": {"output_limit": 16384, "context_window": 200_000}}
    with panel_server(models, {"pair": {"members": ["small", "big"]}}, facts) as server:
        reply = client(server).chat.completions.create(
            model=f"bench/pair{mode}", max_tokens=64_000, messages=[{"role": "user", "content": "hi"}]
        )
    seats = {s["alias"]: s for s in reply.model_extra["bench"]["seats"]}
    assert {a: s["status"] for a, s in seats.items()} == {"small": "ok", "big": "ok"}
    assert seats["small"]["note"] == "max_tokens 64000 lowered to 4096, its output limit"
    assert seats["big"]["note"] == "max_tokens 64000 lowered to 16384, its output limit"
    seat_asks = [r for r in fake_provider.requests if r.prompt == "hi"]
    assert sorted(r.max_tokens for r in seat_asks if r.model == "small") == [4096]
    assert max(r.max_tokens or 0 for r in fake_provider.requests) <= 16384  # the merger too
