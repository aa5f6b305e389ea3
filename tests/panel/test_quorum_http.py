"""Quorum, deadline and the streaming merger through the official SDKs
(openai chat, anthropic), against the live server whose bench is the fake
provider. Event order, never wall time: the slow seat and the merger are
held (the fake's `hold`) until the test lets them go, so a reply that
waited for them could not arrive before the test released them."""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import anthropic
import httpx
import openai
import pytest

from benchwarmers.testing.live_server import settle_logs
from benchwarmers.testing.script import PLAIN_REPORT, FakeModel, merger

SAFETY = 30.0  # a held model answers after this anyway: a broken server fails a test, never hangs it
ANSWER = "The seats agree: four, written slowly one word at a time."
REPORT = {**PLAIN_REPORT, "consensus": ["two and two make four"], "confidence": 0.9}


class Held:
    """fast and mid answer at once; slow (a 3-second seat) and judge (a
    merger that stops after two words) wait for the test."""

    def __init__(self) -> None:
        self.slow = threading.Event()
        self.judge = threading.Event()
        self.models = [
            FakeModel("fast", answer="four"),
            FakeModel("mid", answer="4"),
            FakeModel("slow", answer="five", ttfb=3.0, hold=self.slow),
            FakeModel("judge", answer=merger(ANSWER, REPORT), hold=self.judge, hold_after=2),
        ]

    @contextmanager
    def watched(self) -> Iterator[None]:
        timers = [threading.Timer(SAFETY, e.set) for e in (self.slow, self.judge)]
        for timer in timers:
            timer.start()
        try:
            yield
        finally:
            for timer in timers:
                timer.cancel()
            self.slow.set()
            self.judge.set()


def collections(**fields: Any) -> dict[str, dict[str, Any]]:
    return {"trio": {"members": ["fast", "mid", "slow"], "merger": "judge", **fields}}


def call_statuses(home: Path) -> dict[str, str]:
    settle_logs()
    with sqlite3.connect(home / "benchwarmers.db") as db:
        return dict(db.execute("SELECT id, status FROM calls"))


def openai_client(server: Any) -> openai.OpenAI:
    return openai.OpenAI(base_url=f"{server.url}/v1", api_key="unused", max_retries=0)


@pytest.mark.parametrize("on_cut", ["cancel", "finish"])
def test_quorum_2_of_3_replies_after_the_two_fast_seats_and_names_the_cut_one(
    panel_server: Any, on_cut: str
) -> None:
    held = Held()
    with panel_server(held.models, collections(on_cut=on_cut)) as server, held.watched():
        reply = openai_client(server).chat.completions.create(
            model="bench/trio",
            messages=[{"role": "user", "content": "2+2?"}],
            extra_headers={"x-bench-quorum": "2"},
        )
        assert not held.slow.is_set()  # the reply came while the slow seat was still held
        bench = reply.model_extra["bench"]
        status = {s["alias"]: s["status"] for s in bench["seats"]}
        assert status == {"fast": "ok", "mid": "ok", "slow": "cancelled"}
        slow = next(s for s in bench["seats"] if s["alias"] == "slow")
        assert slow["error"] == "cut: quorum 2 of 3 reached" and slow["call"]
        assert bench["cut"] == {
            "reason": "quorum",
            "quorum": 2,
            "deadline": 0.0,
            "background": on_cut == "finish",
        }
        assert "cut: quorum 2 of 3 reached: the reply went without it" in reply.choices[0].message.content
        held.slow.set()
        logged = call_statuses(server.home)
        if on_cut == "finish":  # it finishes in the background, logged with its real outcome
            settle_logs()
            for _ in range(300):
                if logged.get(slow["call"]) == "ok":
                    break
                threading.Event().wait(0.1)
                logged = call_statuses(server.home)
        assert [logged.get(s["call"]) for s in bench["seats"] if s["alias"] != "slow"] == ["ok", "ok"]
        assert logged[slow["call"]] == ("cancelled" if on_cut == "cancel" else "ok")


def test_openai_stream_the_merger_writes_before_it_is_done_and_the_report_is_in_bench(
    panel_server: Any,
) -> None:
    held = Held()
    with panel_server(held.models, collections()) as server, held.watched():
        stream = openai_client(server).chat.completions.create(
            model="bench/trio:merged",
            messages=[{"role": "user", "content": "2+2?"}],
            stream=True,
            extra_body={"bench": {"quorum": 2}},
        )
        text, bench, first_while_held = "", None, None
        for chunk in stream:
            piece = (chunk.choices[0].delta.content or "") if chunk.choices else ""
            if piece and first_while_held is None:
                first_while_held = not held.judge.is_set()  # the merger is stopped half way
                held.judge.set()
            text += piece
            bench = chunk.model_extra.get("bench") or bench
        assert first_while_held is True
        assert text == ANSWER
        assert bench is not None
        merged = bench["merged"]
        assert merged["alias"] == "judge" and merged["content"] == ANSWER
        assert merged["report"]["consensus"] == ["two and two make four"]
        assert merged["report"]["confidence"] == 0.9
        assert {s["alias"]: s["status"] for s in bench["seats"]}["slow"] == "cancelled"


def test_anthropic_stream_the_merger_writes_before_it_is_done(panel_server: Any) -> None:
    held = Held()
    with panel_server(held.models, collections()) as server, held.watched():
        client = anthropic.Anthropic(base_url=server.url, api_key="unused", max_retries=0)
        text, first_while_held, bench = "", None, None
        with client.messages.stream(
            model="bench/trio:merged",
            max_tokens=200,
            messages=[{"role": "user", "content": "2+2?"}],
            extra_headers={"x-bench-quorum": "2", "x-bench-deadline": "20"},
        ) as stream:
            for event in stream:
                if event.type == "content_block_delta" and event.delta.type == "text_delta":
                    if first_while_held is None:
                        first_while_held = not held.judge.is_set()
                        held.judge.set()
                    text += event.delta.text
                if event.type == "message_delta":
                    bench = (event.model_extra or {}).get("bench")
        assert first_while_held is True and text == ANSWER
        assert bench is not None and bench["merged"]["report"]["confidence"] == 0.9
        assert bench["cut"]["reason"] == "quorum" and bench["cut"]["deadline"] == 20


@pytest.mark.parametrize(
    ("headers", "body", "message"),
    [
        ({"x-bench-quorum": "0"}, {}, "x-bench-quorum must be at least 1 seat"),
        ({"x-bench-quorum": "-1"}, {}, "x-bench-quorum must be at least 1 seat"),
        ({"x-bench-quorum": "two"}, {}, "x-bench-quorum must be a whole number"),
        ({"x-bench-quorum": "1.5"}, {}, "x-bench-quorum must be a whole number"),
        ({"x-bench-deadline": "-2"}, {}, "x-bench-deadline must be more than 0 seconds"),
        ({"x-bench-deadline": "soon"}, {}, "x-bench-deadline must be a number of seconds"),
        ({}, {"bench": {"quorum": "2"}}, "bench.quorum must be a whole number"),
        ({}, {"bench": {"deadline": 0}}, "bench.deadline must be more than 0 seconds"),
        ({"x-bench-deadline": "1e12"}, {}, "x-bench-deadline must be at most 86400 seconds"),
        ({}, {"bench": {"deadline": 10**30}}, "bench.deadline must be at most 86400 seconds"),
        ({"x-bench-quorum": "4"}, {}, "quorum 4 is more than the 3 seats bench/trio can seat"),
        ({"x-bench-quorum": "9" * 23}, {}, f"quorum {'9' * 23} is more than the 3 seats"),
        ({}, {"bench": {"quorom": 2}}, "bench.quorom is not known; bench takes quorum, deadline, with"),
        ({}, {"bench": {"quorum": 10**20}}, "is more than the 3 seats bench/trio can seat"),
    ],
)
def test_bad_values_are_a_400_in_the_callers_format(
    panel_server: Any, headers: dict[str, str], body: dict[str, Any], message: str
) -> None:
    held = Held()
    with panel_server(held.models, collections()) as server, held.watched():
        ask = {"model": "bench/trio", "messages": [{"role": "user", "content": "hi"}], **body}
        chat = httpx.post(f"{server.url}/v1/chat/completions", json=ask, headers=headers, timeout=30)
        assert chat.status_code == 400 and message in chat.json()["error"]["message"]
        messages = httpx.post(
            f"{server.url}/v1/messages", json={**ask, "max_tokens": 10}, headers=headers, timeout=30
        )
        assert messages.status_code == 400
        assert messages.json()["type"] == "error" and message in messages.json()["error"]["message"]
        generate = httpx.post(
            f"{server.url}/api/generate",
            json={"model": "bench/trio", "prompt": "hi", **body},
            headers=headers,
        )
        assert generate.status_code == 400 and message in generate.json()["error"]
        assert not call_statuses(server.home)  # nothing was asked
