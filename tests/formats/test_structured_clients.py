"""Issue 39's first Must-show: a three-seat panel asked for a JSON schema
through each official SDK (openai chat and Responses, anthropic,
google-genai, ollama), one seat answering invalid JSON. The reply marks
that seat (`bench.seats[i].output.valid` false, its content still shown),
the others valid; the merged answer validates against the schema; each
provider was sent the schema in its own API's form; and the raw replies
hold to each SDK's own types, strictly. Plus each format's bad values: a
4xx in its own error shape."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import anthropic
import httpx
import jsonschema
import ollama
import openai
import pytest
from google import genai
from google.genai import types as genai_types
from pydantic import BaseModel

from benchwarmers.runtime import Runtime
from benchwarmers.store.collections import add_collection
from benchwarmers.store.endpoints import add_endpoint
from benchwarmers.store.models import add_model
from benchwarmers.testing import FakeModel, FakeProvider, FakeRequest
from benchwarmers.testing.live_server import live_server
from benchwarmers.testing.sdk_types import check, check_all, ndjson_lines, sse_events

from .formats_support import Gateway

SCHEMA = {
    "type": "object",
    "properties": {"answer": {"type": "integer"}, "reason": {"type": "string"}},
    "required": ["answer", "reason"],
    "additionalProperties": False,
}
# alias -> (the API kind of its endpoint, whether its seat answers valid JSON)
SEATS = {"alpha": ("openai", True), "beta": ("anthropic", True), "gamma": ("gemini", False)}
MERGER = ("delta", "ollama")
# A merger whose answer is never valid: `fallback` (the seats above) answers with
# the first valid seat's JSON instead, `hopeless` (gamma alone) with the panel.
BAD_MERGER = ("epsilon", "openai")
INVALID = "Four, I think."
QUESTION = "Which is bigger, 3 or 4? Answer in JSON."


def answers(alias: str, valid: bool) -> Callable[[FakeRequest], str]:
    def answer(request: FakeRequest) -> str:
        if not valid:
            return INVALID
        return json.dumps({"answer": 4, "reason": f"{alias} counted"})

    return answer


async def _register(home: Path, fake: FakeProvider) -> None:
    async with Runtime.open(home) as runtime:
        for api in ("openai", "anthropic", "gemini", "ollama"):
            await add_endpoint(runtime.store, f"fake-{api}", fake.base_for(api), api, needs_key=False)
        mergers = [(MERGER[0], (MERGER[1], True)), (BAD_MERGER[0], (BAD_MERGER[1], False))]
        for alias, (api, valid) in [*SEATS.items(), *mergers]:
            fake.add(FakeModel(alias, answer=answers(alias, valid)))
            await add_model(runtime.store, alias, f"fake-{api}", alias, context_window=100_000)
        await add_collection(runtime.store, "json", list(SEATS), merger=MERGER[0])
        await add_collection(runtime.store, "fallback", list(SEATS), merger=BAD_MERGER[0])
        await add_collection(runtime.store, "hopeless", ["gamma"], merger=BAD_MERGER[0])


@pytest.fixture(scope="module")
def gateway(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Gateway]:
    home = tmp_path_factory.mktemp("home")
    with FakeProvider() as fake:
        with ThreadPoolExecutor(1) as pool:
            pool.submit(asyncio.run, _register(home, fake)).result()
        with live_server(home) as server:
            yield Gateway(server, fake, "")


def merge_asked(fake: FakeProvider) -> FakeRequest:
    """What the merger (delta) was last asked to merge: not its report, asked beside it."""
    merges = [r for r in fake.requests if r.model == "delta" and "You merge the answers" in r.system]
    return merges[-1]


def assert_marked(gateway: Gateway, bench: dict[str, Any], merged_text: str | None) -> None:
    """Each seat's check in `bench`, the invalid one still shown; the merged
    answer valid against the schema; every member sent the schema in its
    own API's form."""
    by_alias = {s["alias"]: s for s in bench["seats"]}
    assert set(by_alias) == set(SEATS)
    for alias, (_api, valid) in SEATS.items():
        seat = by_alias[alias]
        assert seat["status"] == "ok"
        assert seat["output"]["kind"] == "json_schema"
        assert seat["output"]["valid"] is valid, seat
        if valid:
            jsonschema.validate(json.loads(seat["content"]), SCHEMA)
            assert seat["output"]["error"] == ""
        else:
            assert seat["content"] == INVALID and seat["output"]["error"].startswith("not JSON")
    fake = gateway.fake
    assert fake.last("alpha").body["response_format"]["json_schema"]["schema"] == SCHEMA
    assert fake.last("beta").body["output_config"]["format"] == {"type": "json_schema", "schema": SCHEMA}
    assert fake.last("gamma").body["generationConfig"]["responseJsonSchema"] == SCHEMA
    if merged_text is not None:
        merged = bench["merged"]
        assert merged["status"] == "ok" and merged["alias"] == MERGER[0]
        assert merged["output"] == {"kind": "json_schema", "valid": True, "error": ""}
        jsonschema.validate(json.loads(merged_text), SCHEMA)
        assert merged_text == merged["content"]
        assert merge_asked(fake).body["format"] == SCHEMA  # the merger, asked in the same format


# ------------------------------------------------------------------- openai


@pytest.fixture
def openai_client(gateway: Gateway) -> openai.OpenAI:
    return openai.OpenAI(base_url=f"{gateway.url}/v1", api_key="any", max_retries=0)


CHAT_FORMAT: Any = {
    "type": "json_schema",
    "json_schema": {"name": "verdict", "schema": SCHEMA, "strict": True},
}


@pytest.mark.parametrize("model", ["bench/json", "bench/json:merged"])
def test_openai_chat(gateway: Gateway, openai_client: openai.OpenAI, model: str) -> None:
    raw = openai_client.chat.completions.with_raw_response.create(
        model=model, messages=[{"role": "user", "content": QUESTION}], response_format=CHAT_FORMAT
    )
    check("chat", raw.http_response.json())
    completion = raw.parse()
    text = completion.choices[0].message.content or ""
    assert_marked(gateway, completion.model_extra["bench"], text if model.endswith(":merged") else None)
    assert gateway.fake.last("alpha").body["response_format"]["json_schema"]["strict"] is True
    if not model.endswith(":merged"):  # the panel's text: each seat's heading says how its JSON did
        assert "gamma (ok, " in text and ", JSON invalid: not JSON: Expecting value" in text
        assert text.count(", JSON valid)") == 2 and INVALID in text


def test_openai_chat_stream_merged(gateway: Gateway, openai_client: openai.OpenAI) -> None:
    stream = httpx.post(
        f"{gateway.url}/v1/chat/completions",
        json={
            "model": "bench/json:merged",
            "messages": [{"role": "user", "content": QUESTION}],
            "response_format": CHAT_FORMAT,
            "stream": True,
        },
        timeout=30,
    )
    events = list(sse_events(stream.content))
    check_all("chat_chunk", events)
    text = "".join(e["choices"][0]["delta"].get("content") or "" for e in events if e["choices"])
    assert_marked(gateway, events[-1]["bench"], text)


def test_openai_chat_json_object(gateway: Gateway, openai_client: openai.OpenAI) -> None:
    completion = openai_client.chat.completions.create(
        model="bench/json:merged",
        messages=[{"role": "user", "content": QUESTION}],
        response_format={"type": "json_object"},
    )
    bench = completion.model_extra["bench"]
    assert [s["output"]["valid"] for s in bench["seats"]] == [valid for _api, valid in SEATS.values()]
    assert isinstance(json.loads(completion.choices[0].message.content or ""), dict)
    assert gateway.fake.last("alpha").body["response_format"] == {"type": "json_object"}


@pytest.mark.parametrize("model", ["bench/json", "bench/json:merged"])
def test_openai_responses(gateway: Gateway, openai_client: openai.OpenAI, model: str) -> None:
    raw = openai_client.responses.with_raw_response.create(
        model=model,
        input=QUESTION,
        text={"format": {"type": "json_schema", "name": "verdict", "schema": SCHEMA, "strict": True}},
    )
    check("responses", raw.http_response.json())
    response = raw.parse()
    merged = response.output_text if model.endswith(":merged") else None
    assert_marked(gateway, response.model_extra["bench"], merged)


# ---------------------------------------------------------------- anthropic


@pytest.fixture
def anthropic_client(gateway: Gateway) -> anthropic.Anthropic:
    return anthropic.Anthropic(base_url=gateway.url, api_key="any", max_retries=0)


@pytest.mark.parametrize("model", ["bench/json", "bench/json:merged"])
def test_anthropic_output_config(gateway: Gateway, anthropic_client: anthropic.Anthropic, model: str) -> None:
    raw = anthropic_client.messages.with_raw_response.create(
        model=model,
        max_tokens=300,
        messages=[{"role": "user", "content": QUESTION}],
        output_config={"format": {"type": "json_schema", "schema": SCHEMA}},
    )
    check("anthropic", raw.http_response.json())
    message = raw.parse()
    text = message.content[0].text  # type: ignore[union-attr]
    assert_marked(gateway, message.model_extra["bench"], text if model.endswith(":merged") else None)


def test_anthropic_beta_output_format(gateway: Gateway, anthropic_client: anthropic.Anthropic) -> None:
    """The structured-outputs beta put the format at the top, `output_format`."""
    message = anthropic_client.messages.create(
        model="bench/json:merged",
        max_tokens=300,
        messages=[{"role": "user", "content": QUESTION}],
        extra_body={"output_format": {"type": "json_schema", "schema": SCHEMA}},
        extra_headers={"anthropic-beta": "structured-outputs-2025-11-13"},
    )
    text = message.content[0].text  # type: ignore[union-attr]
    assert_marked(gateway, message.model_extra["bench"], text)


def test_anthropic_stream_merged(gateway: Gateway) -> None:
    stream = httpx.post(
        f"{gateway.url}/v1/messages",
        json={
            "model": "bench/json:merged",
            "max_tokens": 300,
            "stream": True,
            "messages": [{"role": "user", "content": QUESTION}],
            "output_config": {"format": {"type": "json_schema", "schema": SCHEMA}},
        },
        timeout=30,
    )
    events = list(sse_events(stream.content))
    check_all("anthropic_event", events)
    text = "".join(e["delta"].get("text", "") for e in events if e["type"] == "content_block_delta")
    bench = next(e["bench"] for e in events if e["type"] == "message_delta")
    assert_marked(gateway, bench, text)


# ------------------------------------------------------------------- gemini


@pytest.fixture
def gemini_client(gateway: Gateway) -> genai.Client:
    options = genai_types.HttpOptions(base_url=gateway.url, api_version="v1beta")
    return genai.Client(api_key="any", http_options=options)


@pytest.mark.parametrize("setting", ["response_schema", "response_json_schema"])
def test_gemini(gateway: Gateway, gemini_client: genai.Client, setting: str) -> None:
    config = genai_types.GenerateContentConfig(response_mime_type="application/json", **{setting: SCHEMA})
    response = gemini_client.models.generate_content(
        model="bench/json:merged", contents=QUESTION, config=config
    )
    bench = json.loads(response.sdk_http_response.headers["x-bench"])  # type: ignore[union-attr]
    assert_marked(gateway, bench, response.text)


def test_gemini_strict_types(gateway: Gateway) -> None:
    body = {
        "contents": [{"role": "user", "parts": [{"text": QUESTION}]}],
        "generationConfig": {"responseMimeType": "application/json", "responseJsonSchema": SCHEMA},
    }
    base = f"{gateway.url}/v1beta/models/bench/json:merged"
    reply = httpx.post(f"{base}:generateContent", json=body, timeout=30)
    check("gemini", reply.json())
    text = reply.json()["candidates"][0]["content"]["parts"][0]["text"]
    assert_marked(gateway, json.loads(reply.headers["x-bench"]), text)
    stream = httpx.post(f"{base}:streamGenerateContent", params={"alt": "sse"}, json=body, timeout=30)
    chunks = list(sse_events(stream.content))
    check_all("gemini", chunks)
    streamed = "".join(p.get("text", "") for c in chunks for p in c["candidates"][0]["content"]["parts"])
    assert_marked(gateway, chunks[-1]["bench"], streamed)


# ------------------------------------------------------------------- ollama


@pytest.mark.parametrize("model", ["bench/json", "bench/json:merged"])
def test_ollama_chat(gateway: Gateway, model: str) -> None:
    client = ollama.Client(host=gateway.url)
    response = client.chat(model=model, messages=[{"role": "user", "content": QUESTION}], format=SCHEMA)
    raw = httpx.post(
        f"{gateway.url}/api/chat",
        json={
            "model": model,
            "messages": [{"role": "user", "content": QUESTION}],
            "format": SCHEMA,
            "stream": False,
        },
        timeout=30,
    )
    check("ollama_chat", raw.json())
    merged = response.message.content if model.endswith(":merged") else None
    assert_marked(gateway, raw.json()["bench"], merged)
    if merged is not None:
        jsonschema.validate(json.loads(response.message.content or ""), SCHEMA)


def test_ollama_generate_stream(gateway: Gateway) -> None:
    raw = httpx.post(
        f"{gateway.url}/api/generate",
        json={"model": "bench/json:merged", "prompt": QUESTION, "format": SCHEMA},
        timeout=30,
    )
    lines = list(ndjson_lines(raw.content))
    check_all("ollama_generate", lines)
    assert_marked(gateway, lines[-1]["bench"], "".join(line["response"] for line in lines))


def test_ollama_format_json(gateway: Gateway) -> None:
    response = ollama.Client(host=gateway.url).generate(
        model="bench/json:merged", prompt=QUESTION, format="json"
    )
    assert isinstance(json.loads(response.response), dict)
    assert gateway.fake.last("alpha").body["response_format"] == {"type": "json_object"}
    assert merge_asked(gateway.fake).body["format"] == "json"


# ------------------------------------------------------------ bad values


def _error_message(path: str, body: dict[str, Any]) -> str:
    """The message of an error in the format's own shape (which it must have)."""
    if path == "/v1/messages":
        assert body["type"] == "error" and body["error"]["type"] == "invalid_request_error"
        return str(body["error"]["message"])
    if path.startswith("/api/"):
        assert isinstance(body["error"], str)
        return str(body["error"])
    if path.startswith("/v1beta/"):
        assert body["error"]["code"] == 400 and body["error"]["status"] == "INVALID_ARGUMENT"
        return str(body["error"]["message"])
    assert body["error"]["type"] == "invalid_request_error"
    return str(body["error"]["message"])


CHAT = ("/v1/chat/completions", {"model": "bench/json", "messages": [{"role": "user", "content": "hi"}]})
RESPONSES = ("/v1/responses", {"model": "bench/json", "input": "hi"})
MESSAGES = (
    "/v1/messages",
    {"model": "bench/json", "max_tokens": 10, "messages": [{"role": "user", "content": "hi"}]},
)
GEMINI = ("/v1beta/models/bench/json:generateContent", {"contents": [{"parts": [{"text": "hi"}]}]})
OLLAMA = (
    "/api/chat",
    {"model": "bench/json", "stream": False, "messages": [{"role": "user", "content": "hi"}]},
)
BAD_SCHEMA = {"type": "objekt"}

BAD: list[tuple[tuple[str, dict[str, Any]], dict[str, Any], str]] = [
    (
        CHAT,
        {"response_format": {"type": "xml"}},
        "response_format.type must be text, json_object or json_schema",
    ),
    (CHAT, {"response_format": "json"}, "response_format must be a JSON object"),
    (
        CHAT,
        {"response_format": {"type": "json_schema", "json_schema": {"name": "v", "schema": {"$ref": "#/x"}}}},
        "response_format.json_schema.schema['$ref'] '#/x' does not resolve within the schema",
    ),
    (
        RESPONSES,
        {"text": {"format": {"type": "json_schema", "name": "v", "strict": True, "schema": {"enum": [1]}}}},
        "text.format.schema must be an object schema",
    ),
    (CHAT, {"response_format": {"type": "json_schema"}}, "response_format.json_schema must be a JSON object"),
    (
        CHAT,
        {"response_format": {"type": "json_schema", "json_schema": {"schema": SCHEMA}}},
        "response_format.json_schema.name is required",
    ),
    (
        CHAT,
        {"response_format": {"type": "json_schema", "json_schema": {"name": "v", "schema": BAD_SCHEMA}}},
        "response_format.json_schema.schema['type'] is not a valid JSON Schema",
    ),
    (
        CHAT,
        {
            "response_format": {
                "type": "json_schema",
                "json_schema": {"name": "v", "schema": SCHEMA, "strict": 1},
            }
        },
        "response_format.json_schema.strict must be true or false",
    ),
    (
        RESPONSES,
        {"text": {"format": {"type": "yaml"}}},
        "text.format.type must be text, json_object or json_schema",
    ),
    (
        RESPONSES,
        {"text": {"format": {"type": "json_schema", "name": "v", "schema": BAD_SCHEMA}}},
        "text.format.schema['type'] is not a valid JSON Schema",
    ),
    (
        RESPONSES,
        {"text": {"format": {"type": "json_schema", "name": "v"}}},
        "text.format.schema must be a JSON object",
    ),
    (
        MESSAGES,
        {"output_config": {"format": {"type": "json_object"}}},
        "output_config.format.type must be json_schema",
    ),
    (
        MESSAGES,
        {"output_format": {"type": "json_schema", "schema": "{}"}},
        "output_format.schema must be a JSON object",
    ),
    (
        MESSAGES,
        {"output_config": {"format": {"type": "json_schema", "schema": BAD_SCHEMA}}},
        "output_config.format.schema['type'] is not a valid JSON Schema",
    ),
    (GEMINI, {"generationConfig": {"responseMimeType": "text/x.enum"}}, "responseMimeType 'text/x.enum'"),
    (
        GEMINI,
        {"generationConfig": {"responseSchema": {"type": "OBJECT"}}},
        "responseSchema needs responseMimeType",
    ),
    (
        GEMINI,
        {"generationConfig": {"responseMimeType": "application/json", "responseJsonSchema": BAD_SCHEMA}},
        "generationConfig.responseJsonSchema['type'] is not a valid JSON Schema",
    ),
    (OLLAMA, {"format": "yaml"}, 'format must be "json" or a JSON Schema object'),
    (OLLAMA, {"format": BAD_SCHEMA}, "format['type'] is not a valid JSON Schema"),
]


@pytest.mark.parametrize(("where", "extra", "message"), BAD, ids=[f"{w[0]}:{m[:30]}" for w, _e, m in BAD])
def test_a_bad_value_is_a_400_in_the_callers_shape(
    gateway: Gateway, where: tuple[str, dict[str, Any]], extra: dict[str, Any], message: str
) -> None:
    path, body = where
    before = sum(gateway.fake.calls.values())
    reply = httpx.post(gateway.url + path, json={**body, **extra}, timeout=30)
    assert reply.status_code == 400, reply.text
    assert message in _error_message(path, reply.json())
    assert sum(gateway.fake.calls.values()) == before  # nobody was asked


def test_plain_text_formats_ask_for_nothing(gateway: Gateway) -> None:
    """`text` (OpenAI) and `text/plain` (Gemini) are no structured output: no check in `bench`."""
    for path, body, extra in (
        (*CHAT, {"response_format": {"type": "text"}}),
        (*RESPONSES, {"text": {"format": {"type": "text"}}}),
        (*GEMINI, {"generationConfig": {"responseMimeType": "text/plain"}}),
        (*OLLAMA, {"format": ""}),
    ):
        reply = httpx.post(gateway.url + path, json={**body, **extra}, timeout=30)
        assert reply.status_code == 200, reply.text
        bench = reply.json().get("bench") or json.loads(reply.headers["x-bench"])
        assert all("output" not in seat for seat in bench["seats"])
        assert "response_format" not in gateway.fake.last("alpha").body


# ------------------------------------------------- the SDKs' own parse helpers


class Verdict(BaseModel):
    answer: int
    reason: str


def test_the_sdks_parse_helpers_read_the_merged_answer(
    gateway: Gateway, openai_client: openai.OpenAI, anthropic_client: anthropic.Anthropic
) -> None:
    """`chat.completions.parse`, `responses.parse` and anthropic's
    `messages.parse` send a schema made from a pydantic model and parse the
    merged answer back into it."""
    messages: Any = [{"role": "user", "content": QUESTION}]
    chat = openai_client.chat.completions.parse(
        model="bench/json:merged", messages=messages, response_format=Verdict
    )
    assert chat.choices[0].message.parsed == Verdict(answer=4, reason="delta counted")
    responses = openai_client.responses.parse(model="bench/json:merged", input=QUESTION, text_format=Verdict)
    assert responses.output_parsed == Verdict(answer=4, reason="delta counted")
    message = anthropic_client.messages.parse(
        model="bench/json:merged", max_tokens=300, messages=messages, output_format=Verdict
    )
    assert message.parsed_output == Verdict(answer=4, reason="delta counted")
    assert gateway.fake.last("beta").output is not None  # each seat was asked for the schema


# ------------------------------------- no merger's answer valid: a seat's stands in


def assert_stood_in(bench: dict[str, Any], text: str) -> None:
    """No merger's answer was valid: the reply is alpha's (the first valid
    seat, none having a record), valid against the schema, and `bench.merged`
    says so, naming the seat by label and call id."""
    seat = next(s for s in bench["seats"] if s["alias"] == "alpha")
    merged = bench["merged"]
    assert (merged["status"], merged["alias"], merged["call"]) == ("ok", "alpha", seat["call"])
    assert merged["output"] == {"kind": "json_schema", "valid": True, "error": ""}
    assert merged["content"] == text == seat["content"]
    jsonschema.validate(json.loads(text), SCHEMA)
    assert merged["note"].startswith(
        "No merger's answer was valid (epsilon: not valid against the output asked"
    )
    assert f"this is {seat['seat']}'s answer instead (alpha, call {seat['call']})" in merged["note"]


def test_openai_chat_parse_reads_a_valid_seat_when_no_merger_is_valid(
    gateway: Gateway, openai_client: openai.OpenAI
) -> None:
    messages: Any = [{"role": "user", "content": QUESTION}]
    chat = openai_client.chat.completions.parse(
        model="bench/fallback:merged", messages=messages, response_format=Verdict
    )
    text = chat.choices[0].message.content or ""
    assert chat.choices[0].message.parsed == Verdict(answer=4, reason="alpha counted")
    assert Verdict.model_validate(json.loads(text)) == Verdict(answer=4, reason="alpha counted")
    assert_stood_in(chat.model_extra["bench"], text)  # type: ignore[index]
    raw = openai_client.chat.completions.with_raw_response.create(
        model="bench/fallback:merged", messages=messages, response_format=CHAT_FORMAT
    )
    check("chat", raw.http_response.json())


def test_streams_send_a_valid_seat_in_one_piece_when_no_merger_is_valid(gateway: Gateway) -> None:
    chat = httpx.post(
        f"{gateway.url}/v1/chat/completions",
        json={
            "model": "bench/fallback:merged",
            "messages": [{"role": "user", "content": QUESTION}],
            "response_format": CHAT_FORMAT,
            "stream": True,
        },
        timeout=30,
    )
    events = list(sse_events(chat.content))
    check_all("chat_chunk", events)
    pieces = [
        e["choices"][0]["delta"]["content"]
        for e in events
        if e["choices"] and e["choices"][0]["delta"].get("content")
    ]
    assert len(pieces) == 1, pieces
    assert_stood_in(events[-1]["bench"], pieces[0])
    generate = httpx.post(
        f"{gateway.url}/api/generate",
        json={"model": "bench/fallback:merged", "prompt": QUESTION, "format": SCHEMA},
        timeout=30,
    )
    lines = list(ndjson_lines(generate.content))
    check_all("ollama_generate", lines)
    assert_stood_in(lines[-1]["bench"], "".join(line["response"] for line in lines))


def test_with_no_valid_seat_either_the_reply_is_the_panel_with_the_note(
    gateway: Gateway, openai_client: openai.OpenAI
) -> None:
    completion = openai_client.chat.completions.create(
        model="bench/hopeless:merged",
        messages=[{"role": "user", "content": QUESTION}],
        response_format=CHAT_FORMAT,
    )
    text = completion.choices[0].message.content or ""
    merged = completion.model_extra["bench"]["merged"]  # type: ignore[index]
    assert merged["status"] == "error" and merged["output"]["valid"] is False
    assert merged["note"].startswith("No merger answered (epsilon: not valid against the output asked")
    assert text.startswith(f"_{merged['note']}_") and "### Seat 1 · gamma (ok, " in text and INVALID in text
    stream = httpx.post(
        f"{gateway.url}/api/generate",
        json={"model": "bench/hopeless:merged", "prompt": QUESTION, "format": SCHEMA},
        timeout=30,
    )
    lines = list(ndjson_lines(stream.content))
    streamed = "".join(line["response"] for line in lines)
    assert lines[-1]["bench"]["merged"]["status"] == "error"
    assert streamed.startswith("_No merger answered (") and INVALID in streamed
