"""A panel's finish reason, in every format, whole and streamed: when every
seat that answered was cut at its output limit the reply says so in the
format's own words (OpenAI chat `length`, Responses `incomplete` for
`max_output_tokens`, Anthropic `max_tokens`, Gemini `MAX_TOKENS`, Ollama
`length`); seats that ended differently keep "stop", each seat's own reason
in `bench.seats[].finish`; a merged reply says how the merged answer
ended. Every body and stream event is read under the official SDK's own
type, strictly (`testing.sdk_types`), and the reasons are read from those
typed values. The seats sit on endpoints of all four API kinds, each cut by
the fake's `max_output`, so each adapter's length stop is read too."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

import anthropic
import httpx
import ollama
import openai
import pytest
from google import genai
from google.genai import types as genai_types

from benchwarmers.runtime import Runtime
from benchwarmers.store.collections import add_collection
from benchwarmers.store.endpoints import add_endpoint
from benchwarmers.store.models import add_model
from benchwarmers.testing import FakeModel, FakeProvider
from benchwarmers.testing.live_server import live_server
from benchwarmers.testing.sdk_types import check, check_all, ndjson_lines, sse_events
from benchwarmers.types import API_KINDS, Merged, PanelReply, Seat

LONG = "one two three four five six seven eight"
CUT = [f"cut-{api}" for api in API_KINDS]  # each cut at 3 words, one on each API kind
USER = "Count for me."

# name: (whole kind, stream kind, path, body); Gemini's path is built by `_post`.
FORMATS: dict[str, tuple[str, str, str, dict[str, Any]]] = {
    "chat": ("chat", "chat_chunk", "/v1/chat/completions", {"messages": [{"role": "user", "content": USER}]}),
    "responses": ("responses", "responses_event", "/v1/responses", {"input": USER}),
    "anthropic": (
        "anthropic",
        "anthropic_event",
        "/v1/messages",
        {"max_tokens": 100, "messages": [{"role": "user", "content": USER}]},
    ),
    "gemini": ("gemini", "gemini", "", {"contents": [{"role": "user", "parts": [{"text": USER}]}]}),
    "ollama_chat": (
        "ollama_chat",
        "ollama_chat",
        "/api/chat",
        {"messages": [{"role": "user", "content": USER}]},
    ),
    "ollama_generate": ("ollama_generate", "ollama_generate", "/api/generate", {"prompt": USER}),
}
# How each format says "cut at the output limit", and "stopped".
LENGTH = {
    "chat": "length",
    "responses": ("incomplete", "max_output_tokens"),
    "anthropic": "max_tokens",
    "gemini": "MAX_TOKENS",
    "ollama_chat": "length",
    "ollama_generate": "length",
}
STOP = {
    "chat": "stop",
    "responses": ("completed", None),
    "anthropic": "end_turn",
    "gemini": "STOP",
    "ollama_chat": "stop",
    "ollama_generate": "stop",
}


@pytest.fixture(scope="module")
def url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """`cut`: four seats, each cut at its own limit; `mixed`: a cut seat and
    one that stops; `held`: the cut seats merged by one that is not cut."""
    home = tmp_path_factory.mktemp("home")
    with FakeProvider() as fake:
        for served in CUT:
            fake.add(FakeModel(served, answer=LONG, max_output=3))
        fake.add(FakeModel("whole", answer="four"))
        asyncio.run(_register(home, fake))
        with live_server(home) as server:
            yield server.url


async def _register(home: Path, fake: FakeProvider) -> None:
    async with Runtime.open(home) as runtime:
        for api in API_KINDS:
            await add_endpoint(runtime.store, api, fake.base_for(api), api, needs_key=False)
            await add_model(runtime.store, f"cut-{api}", api, f"cut-{api}")
        await add_model(runtime.store, "whole", "openai", "whole")
        await add_collection(runtime.store, "cut", CUT)
        await add_collection(runtime.store, "mixed", ["cut-anthropic", "whole"])
        await add_collection(runtime.store, "held", CUT, merger="whole")


def _post(url: str, name: str, model: str, *, stream: bool) -> httpx.Response:
    _whole, _streamed, path, body = FORMATS[name]
    if name == "gemini":
        method = "streamGenerateContent" if stream else "generateContent"
        params = {"alt": "sse"} if stream else {}
        return httpx.post(f"{url}/v1beta/models/{model}:{method}", params=params, json=body, timeout=30)
    return httpx.post(url + path, json={**body, "model": model, "stream": stream}, timeout=30)


def _said(name: str, typed: Any) -> Any:
    """The finish reason a whole reply (or a stream's last word) says, read
    from the SDK's typed value; None when this value says none."""
    if name in ("chat", "chat_chunk"):
        return typed.choices[0].finish_reason if typed.choices else None
    if name == "responses":
        details = typed.incomplete_details
        return typed.status, None if details is None else details.reason
    if name == "anthropic":
        return typed.stop_reason
    if name == "gemini":
        reason = typed.candidates[0].finish_reason if typed.candidates else None
        return None if reason is None else reason.value
    return typed.done_reason if typed.done else None


def _stream_said(name: str, events: list[Any]) -> Any:
    """What a stream's closing events say: the last finish reason given."""
    if name == "responses":
        last = events[-1]
        assert last.type in ("response.completed", "response.incomplete"), last.type
        assert last.type == f"response.{last.response.status}"
        return _said("responses", last.response)
    if name == "anthropic":
        deltas = [e for e in events if e.type == "message_delta"]
        return deltas[-1].delta.stop_reason
    said = [s for s in (_said("chat_chunk" if name == "chat" else name, e) for e in events) if s is not None]
    assert len(said) == 1, said  # one closing chunk says it
    return said[0]


def _ask(url: str, name: str, model: str) -> tuple[Any, Any, dict[str, Any]]:
    """The reason a whole reply says, the reason its stream says, and the
    whole reply's `bench` object."""
    whole_kind, stream_kind, _path, _body = FORMATS[name]
    reply = _post(url, name, model, stream=False)
    assert reply.status_code == 200, reply.text
    whole = _said(name, check(whole_kind, reply.json()))
    stream = _post(url, name, model, stream=True)
    assert stream.status_code == 200, stream.text
    raw = list(ndjson_lines(stream.content) if name.startswith("ollama") else sse_events(stream.content))
    events = check_all(stream_kind, [e for e in raw if e.get("type") != "ping"])
    return whole, _stream_said(name, events), reply.json()["bench"]


@pytest.mark.parametrize("name", list(FORMATS))
def test_every_seat_cut_says_length_in_the_formats_words(url: str, name: str) -> None:
    whole, streamed, bench = _ask(url, name, "bench/cut")
    assert whole == streamed == LENGTH[name]
    assert {s["alias"]: (s["status"], s.get("finish")) for s in bench["seats"]} == {
        alias: ("ok", "length") for alias in CUT
    }


@pytest.mark.parametrize("name", list(FORMATS))
def test_seats_that_ended_differently_say_stop(url: str, name: str) -> None:
    whole, streamed, bench = _ask(url, name, "bench/mixed")
    assert whole == streamed == STOP[name]
    assert {s["alias"]: s.get("finish") for s in bench["seats"]} == {"cut-anthropic": "length", "whole": None}


@pytest.mark.parametrize("name", ["chat", "responses", "anthropic", "gemini", "ollama_chat"])
def test_a_merged_reply_says_how_the_merged_answer_ended(url: str, name: str) -> None:
    """Every seat was cut, but the merger's answer was not: the reply (the
    merged answer) stopped; a merger cut too says length."""
    whole, streamed, bench = _ask(url, name, "bench/held:merged")
    assert whole == streamed == STOP[name]
    assert bench["merged"]["alias"] == "whole" and "finish" not in bench["merged"]
    assert all(s["finish"] == "length" for s in bench["seats"])
    whole, streamed, bench = _ask(url, name, "bench/cut:merged")
    assert whole == streamed == LENGTH[name]
    assert bench["merged"]["finish"] == "length"


def test_the_official_clients_read_the_cut(url: str) -> None:
    """What each SDK's own helpers make of a cut panel: the chat stream's
    finish, the Anthropic stream helper's final message, google-genai's last
    streamed chunk, the ollama client's last line."""
    hi = [{"role": "user", "content": USER}]
    chat = openai.OpenAI(base_url=f"{url}/v1", api_key="any", max_retries=0).chat.completions
    chunks = list(chat.create(model="bench/cut", messages=hi, stream=True))  # type: ignore[arg-type]
    assert [c.choices[0].finish_reason for c in chunks if c.choices][-1] == "length"
    client = anthropic.Anthropic(base_url=url, api_key="any", max_retries=0)
    with client.messages.stream(model="bench/cut", max_tokens=100, messages=hi) as stream:  # type: ignore[arg-type]
        assert stream.get_final_message().stop_reason == "max_tokens"
    gemini = genai.Client(
        api_key="any", http_options=genai_types.HttpOptions(base_url=url, api_version="v1beta")
    )
    last = list(gemini.models.generate_content_stream(model="bench/cut", contents=USER))[-1]
    assert last.candidates and last.candidates[0].finish_reason == genai_types.FinishReason.MAX_TOKENS
    assert ollama.Client(host=url).chat(model="bench/mixed", messages=hi).done_reason == "stop"
    assert (
        list(ollama.Client(host=url).generate(model="bench/cut", prompt=USER, stream=True))[-1].done_reason
        == "length"
    )


def test_the_panel_finish_is_decided_once() -> None:
    """`PanelReply.finish`: "length" only when every seat that answered (ok)
    was cut; seats that did not answer do not count, nor a panel none
    answered; a merged answer decides for itself, unless no merger's did."""

    def seat(status: str, finish: str = "stop") -> Seat:
        return Seat("c", "Seat", "a", status, 0.1, content="x", finish=finish)  # type: ignore[arg-type]

    def panel(*seats: Seat) -> PanelReply:
        return PanelReply("c", "short", seats)

    cut, whole, failed = seat("ok", "length"), seat("ok"), seat("error")
    assert panel(cut, cut).finish == "length"
    assert panel(cut, failed, seat("timeout")).finish == "length"
    assert panel(cut, seat("empty", "length"), seat("empty")).finish == "length"
    assert panel(cut, whole).finish == "stop"
    assert panel(cut, seat("ok", "content_filter")).finish == "stop"
    assert panel(failed).finish == panel().finish == "stop"
    merged = Merged("c_m", "m", "ok", 0.1, "x")
    assert replace(panel(cut, cut), merged=merged).finish == "stop"
    assert replace(panel(whole), merged=replace(merged, finish="length")).finish == "length"
    no_merger = replace(merged, status="error", content="")  # the panel's answers stand in
    assert replace(panel(cut, cut), merged=no_merger).finish == "length"
    assert replace(panel(cut, whole), merged=no_merger).finish == "stop"
