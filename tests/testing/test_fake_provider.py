"""The fake provider itself: the official client of each API reads its
replies (so the fake's wire shapes are the real ones, not our adapters'
idea of them), its counters and usage reports add up, and the JSON model
scripts the CLI runs load as documented."""

from __future__ import annotations

import asyncio
import json
import time
from pathlib import Path
from typing import Literal

import anthropic
import httpx
import jsonschema
import ollama
import openai
import pytest
from google import genai
from google.genai import types as genai_types
from pydantic import BaseModel, Field
from typer.testing import CliRunner

from benchwarmers.cli.main import app
from benchwarmers.testing import FakeModel, FakeProvider, FakeToolCall
from benchwarmers.testing.script import (
    SCHEMA_EXAMPLE,
    RateLimit,
    go_duration,
    models_from_json,
    schema_example,
)
from benchwarmers.types import API_KINDS

ANSWER = "hello from the fake"
WEATHER = {
    "name": "get_weather",
    "description": "Weather",
    "parameters": {"type": "object", "properties": {"city": {"type": "string"}}},
}


def scripted(fake: FakeProvider) -> None:
    fake.add(FakeModel("m1", answer=ANSWER))
    fake.add(FakeModel("tools", tool_calls=[FakeToolCall("get_weather", {"city": "Oslo"})]))


def test_openai_client_reads_the_fake(fake_provider: FakeProvider) -> None:
    scripted(fake_provider)
    client = openai.OpenAI(base_url=fake_provider.openai_base, api_key="k", max_retries=0)
    messages = [{"role": "user", "content": "say hi"}]
    reply = client.chat.completions.create(model="m1", messages=messages)  # type: ignore[arg-type]
    assert reply.choices[0].message.content == ANSWER and reply.usage and reply.usage.completion_tokens == 4
    stream = client.chat.completions.create(
        model="m1",
        messages=messages,  # type: ignore[arg-type]
        stream=True,
        stream_options={"include_usage": True},
    )
    assert "".join(c.choices[0].delta.content or "" for c in stream if c.choices) == ANSWER
    tools = [{"type": "function", "function": WEATHER}]
    called = client.chat.completions.create(model="tools", messages=messages, tools=tools)  # type: ignore[arg-type]
    [tool_call] = called.choices[0].message.tool_calls or []
    assert json.loads(tool_call.function.arguments) == {"city": "Oslo"}  # type: ignore[union-attr]
    assert [m.id for m in client.models.list()] == ["m1", "tools"]


def test_anthropic_client_reads_the_fake(fake_provider: FakeProvider) -> None:
    scripted(fake_provider)
    client = anthropic.Anthropic(base_url=fake_provider.url, api_key="k", max_retries=0)
    messages = [{"role": "user", "content": "say hi"}]
    reply = client.messages.create(model="m1", max_tokens=100, messages=messages)  # type: ignore[arg-type]
    assert reply.content[0].text == ANSWER  # type: ignore[union-attr]
    with client.messages.stream(model="m1", max_tokens=100, messages=messages) as stream:  # type: ignore[arg-type]
        assert "".join(stream.text_stream) == ANSWER
    tool = {"name": WEATHER["name"], "description": "Weather", "input_schema": WEATHER["parameters"]}
    with client.messages.stream(model="tools", max_tokens=100, messages=messages, tools=[tool]) as stream:  # type: ignore[arg-type, list-item]
        final = stream.get_final_message()
    assert final.stop_reason == "tool_use" and final.content[0].input == {"city": "Oslo"}  # type: ignore[union-attr]
    assert [m.id for m in client.models.list()] == ["m1", "tools"]


def test_google_genai_client_reads_the_fake(fake_provider: FakeProvider) -> None:
    scripted(fake_provider)
    client = genai.Client(api_key="k", http_options=genai_types.HttpOptions(base_url=fake_provider.url))
    assert client.models.generate_content(model="m1", contents="say hi").text == ANSWER
    streamed = client.models.generate_content_stream(model="m1", contents="say hi")
    assert "".join(chunk.text or "" for chunk in streamed) == ANSWER
    config = genai_types.GenerateContentConfig(
        tools=[genai_types.Tool(function_declarations=[genai_types.FunctionDeclaration(**WEATHER)])],
        automatic_function_calling=genai_types.AutomaticFunctionCallingConfig(disable=True),
    )
    called = client.models.generate_content(model="tools", contents="weather?", config=config)
    assert called.function_calls and called.function_calls[0].args == {"city": "Oslo"}


def test_ollama_client_reads_the_fake(fake_provider: FakeProvider) -> None:
    scripted(fake_provider)
    client = ollama.Client(host=fake_provider.url)
    messages = [{"role": "user", "content": "say hi"}]
    assert client.chat(model="m1", messages=messages).message.content == ANSWER
    assert (
        "".join(
            part.message.content or "" for part in client.chat(model="m1", messages=messages, stream=True)
        )
        == ANSWER
    )
    called = client.chat(model="tools", messages=messages, tools=[{"type": "function", "function": WEATHER}])
    assert called.message.tool_calls and called.message.tool_calls[0].function.arguments == {"city": "Oslo"}
    assert [m.model for m in client.list().models] == ["m1", "tools"]


def test_an_answer_past_an_output_limit_ends_for_length_on_every_api() -> None:
    """`max_output` (from a models file, as the CLI loads it) cuts a model's
    answer at its own limit and ends it for length, in each official
    client's words, whole and streamed; the request's limit cuts the same
    way, the smaller of the two winning; a model with none answers whole."""
    document = {"models": [{"served": "terse", "answer": "one two three four five six", "max_output": 4}]}
    models, _key = models_from_json(json.dumps(document))
    assert models[0].max_output == 4
    with FakeProvider([*models, FakeModel("free", answer="one two three four five six")]) as fake:
        chat = openai.OpenAI(base_url=fake.openai_base, api_key="k", max_retries=0)
        hi = [{"role": "user", "content": "count"}]
        whole = chat.chat.completions.create(model="terse", messages=hi)  # type: ignore[arg-type]
        assert whole.choices[0].message.content == "one two three four"
        assert whole.choices[0].finish_reason == "length"
        streamed = list(chat.chat.completions.create(model="terse", messages=hi, stream=True))  # type: ignore[arg-type]
        assert [c.choices[0].finish_reason for c in streamed if c.choices][-1] == "length"
        fewer = chat.chat.completions.create(model="terse", messages=hi, max_tokens=2)  # type: ignore[arg-type]
        assert (fewer.choices[0].message.content, fewer.choices[0].finish_reason) == ("one two", "length")
        roomy = chat.chat.completions.create(model="free", messages=hi, max_tokens=100)  # type: ignore[arg-type]
        assert roomy.choices[0].finish_reason == "stop"
        messages = anthropic.Anthropic(base_url=fake.url, api_key="k", max_retries=0).messages
        assert messages.create(model="terse", max_tokens=100, messages=hi).stop_reason == "max_tokens"  # type: ignore[arg-type]
        gemini = genai.Client(api_key="k", http_options=genai_types.HttpOptions(base_url=fake.url))
        candidate = (gemini.models.generate_content(model="terse", contents="count").candidates or [])[0]
        assert candidate.finish_reason == genai_types.FinishReason.MAX_TOKENS
        last = list(ollama.Client(host=fake.url).chat(model="terse", messages=hi, stream=True))[-1]
        assert last.done_reason == "length" and fake.reported["terse"][1] == 4 + 4 + 2 + 4 + 4 + 4


def test_thinking_reaches_each_official_client_as_its_reasoning_not_its_answer() -> None:
    """`thinking` (from a models file) is sent in each API's own shape for
    reasoning, whole and streamed, and each official client reads it there."""
    document = [{"served": "deep", "answer": "Paris.", "thinking": "The capital is asked."}]
    models, _key = models_from_json(json.dumps(document))
    hi = [{"role": "user", "content": "capital?"}]
    with FakeProvider(models) as fake:
        chat = openai.OpenAI(base_url=fake.openai_base, api_key="k", max_retries=0).chat.completions
        message = chat.create(model="deep", messages=hi).choices[0].message  # type: ignore[arg-type]
        assert (message.content, (message.model_extra or {})["reasoning_content"]) == (
            "Paris.",
            "The capital is asked.",
        )
        streamed = [
            c.choices[0].delta for c in chat.create(model="deep", messages=hi, stream=True) if c.choices
        ]  # type: ignore[arg-type]
        assert (
            "".join((d.model_extra or {}).get("reasoning_content") or "" for d in streamed)
            == "The capital is asked."
        )
        assert "".join(d.content or "" for d in streamed) == "Paris."
        messages = anthropic.Anthropic(base_url=fake.url, api_key="k", max_retries=0).messages
        blocks = messages.create(model="deep", max_tokens=100, messages=hi).content  # type: ignore[arg-type]
        assert [b.type for b in blocks] == ["thinking", "text"]
        with messages.stream(model="deep", max_tokens=100, messages=hi) as stream:  # type: ignore[arg-type]
            final = stream.get_final_message()
        assert final.content[0].thinking == "The capital is asked." and final.content[1].text == "Paris."  # type: ignore[union-attr]
        google = genai.Client(api_key="k", http_options=genai_types.HttpOptions(base_url=fake.url))
        gemini = google.models  # the client kept: its HTTP client closes with it
        parts = (
            (gemini.generate_content(model="deep", contents="capital?").candidates or [])[0].content
        ).parts  # type: ignore[union-attr]
        assert [(p.text, bool(p.thought)) for p in parts or []] == [
            ("The capital is asked.", True),
            ("Paris.", False),
        ]
        chunks = list(gemini.generate_content_stream(model="deep", contents="capital?"))
        assert "".join(c.text or "" for c in chunks) == "Paris."
        local = ollama.Client(host=fake.url)
        whole = local.chat(model="deep", messages=hi).message
        assert (whole.content, whole.thinking) == ("Paris.", "The capital is asked.")
        lines = list(local.chat(model="deep", messages=hi, stream=True))
        assert "".join(part.message.thinking or "" for part in lines) == "The capital is asked."


def test_counts_requests_and_reports_usage_per_model(fake_provider: FakeProvider) -> None:
    scripted(fake_provider)
    client = openai.OpenAI(base_url=fake_provider.openai_base, api_key="k", max_retries=0)
    for _ in range(3):
        client.chat.completions.create(model="m1", messages=[{"role": "user", "content": "two words"}])
    ollama.Client(host=fake_provider.url).chat(model="m1", messages=[{"role": "user", "content": "x"}])
    assert fake_provider.calls["m1"] == 4
    assert (
        fake_provider.calls_by_api[("openai", "m1")] == 3
        and fake_provider.calls_by_api[("ollama", "m1")] == 1
    )
    assert fake_provider.reported["m1"] == [3 * 2 + 1, 4 * 4]
    assert fake_provider.last("m1").api == "ollama"


def test_rate_limit_headers_in_each_style() -> None:
    assert RateLimit("openai", retry=360).headers()["x-ratelimit-reset-requests"] == "6m0s"
    anthropic_headers = RateLimit("anthropic", retry=30).headers()
    assert anthropic_headers["anthropic-ratelimit-requests-reset"].endswith("Z")
    assert anthropic_headers["retry-after"] == "30"
    assert RateLimit("retry-after-ms", retry=1.5).headers() == {"retry-after-ms": "1500"}
    assert [go_duration(s) for s in (0.02, 1.5, 360, 3723)] == ["20ms", "1.5s", "6m0s", "1h2m3s"]


def test_models_from_json_with_templates_and_faults() -> None:
    text = json.dumps(
        {
            "key": "sk-fake",
            "models": [
                {"served": "echo", "answer": "You said: {prompt}", "listed": ["openai"]},
                {
                    "served": "flaky",
                    "error": {"status": 503, "message": "busy"},
                    "fail_first": 2,
                    "rate_limit": {"style": "body", "retry": 5},
                    "tool_calls": [{"name": "t", "arguments": {"a": 1}}],
                },
            ],
        }
    )
    models, key = models_from_json(text)
    assert key == "sk-fake"
    echo, flaky = models
    assert echo.listed == {"openai"} and callable(echo.answer)
    assert flaky.error and flaky.error.status == 503 and flaky.faulty(2) and not flaky.faulty(3)
    assert flaky.rate_limit == RateLimit("body", retry=5)
    assert flaky.tool_calls == [FakeToolCall("t", {"a": 1})]
    with FakeProvider(models) as fake:
        client = openai.OpenAI(base_url=fake.openai_base, api_key="sk-fake", max_retries=0)
        reply = client.chat.completions.create(model="echo", messages=[{"role": "user", "content": "hi"}])
        assert reply.choices[0].message.content == "You said: hi"


def test_a_script_writes_reasoning_into_the_text_and_streams_unasked() -> None:
    """`think_tag` puts `thinking` in the answer's text (each style as the
    models write it); `stream_always` answers `stream: false` with SSE."""
    text = json.dumps(
        {
            "models": [
                {"served": tag or "field", "answer": "4", "thinking": "2+2", "think_tag": tag}
                for tag in ("", "think", "thinking", "/think")
            ]
            + [{"served": "streamer", "answer": "a b", "stream_always": True}]
        }
    )
    with FakeProvider(models_from_json(text)[0]) as fake, httpx.Client(base_url=fake.openai_base) as client:

        def asked(served: str) -> httpx.Response:
            body = {"model": served, "messages": [{"role": "user", "content": "sum?"}]}
            return client.post("/chat/completions", json=body)

        message = asked("field").json()["choices"][0]["message"]
        assert (message["content"], message["reasoning_content"]) == ("4", "2+2")
        assert asked("think").json()["choices"][0]["message"]["content"] == "<think>\n2+2\n</think>\n\n4"
        assert (
            asked("thinking")
            .json()["choices"][0]["message"]["content"]
            .startswith("<thinking>\n2+2\n</thinking>")
        )
        assert asked("/think").json()["choices"][0]["message"]["content"] == "2+2\n</think>\n\n4"
        streamed = asked("streamer")
        assert streamed.headers["content-type"].startswith("text/event-stream")
        assert streamed.text.rstrip().endswith("data: [DONE]") and '"usage"' in streamed.text
    with pytest.raises(ValueError, match="think_tag must be one of"):
        models_from_json(json.dumps([{"served": "x", "think_tag": "reason"}]))


def test_json_answers_when_asked_for_structured_output() -> None:
    """A JSON script's answer may be JSON itself (braces that are no
    placeholder stay); `json_answer` answers asks for structured output,
    `schema-example` with a value valid against the schema asked."""
    schema = {
        "type": "object",
        "properties": {"n": {"type": "integer", "minimum": 3}, "tags": {"type": "array", "minItems": 1}},
        "required": ["n", "tags"],
    }
    text = json.dumps(
        {
            "models": [
                {"served": "plain", "answer": '{"as": "{model}"}'},
                {"served": "example", "answer": "prose", "json_answer": "schema-example"},
                {"served": "broken", "json_answer": "not json"},
            ]
        }
    )
    with FakeProvider(models_from_json(text)[0]) as fake:
        client = openai.OpenAI(base_url=fake.openai_base, api_key="x", max_retries=0)

        def ask(model: str, **extra: object) -> str:
            reply = client.chat.completions.create(
                model=model,
                messages=[{"role": "user", "content": "hi"}],
                **extra,  # type: ignore[call-overload]
            )
            return reply.choices[0].message.content or ""

        as_schema = {"type": "json_schema", "json_schema": {"name": "s", "schema": schema}}
        assert ask("plain") == '{"as": "plain"}'
        assert ask("example") == "prose"
        assert json.loads(ask("example", response_format=as_schema)) == {"n": 3, "tags": [{}]}
        assert json.loads(ask("example", response_format={"type": "json_object"})) == {}
        assert ask("broken", response_format=as_schema) == "not json"
        assert fake.last("broken").output == {"kind": "json_schema", "schema": schema}


def test_json_asked_in_the_system_prompt_is_answered_as_json() -> None:
    """Anthropic has no plain JSON mode, and a model without structured
    output is asked in its system prompt: the fake reads those words as a
    model would, so `json_answer` answers them too (it answered `answer`)."""
    schema = {"type": "object", "required": ["n"], "properties": {"n": {"type": "integer"}}}
    with FakeProvider([FakeModel("m", answer="prose", json_answer=SCHEMA_EXAMPLE)]) as fake:
        client = anthropic.Anthropic(base_url=fake.url, api_key="x", max_retries=0)

        def ask(system: str) -> str:
            reply = client.messages.create(
                model="m", max_tokens=64, system=system, messages=[{"role": "user", "content": "hi"}]
            )
            return "".join(block.text for block in reply.content if block.type == "text")

        plain = "Answer with one JSON object only: no prose, no code fence, nothing before or after it."
        assert json.loads(ask(plain)) == {}
        assert fake.last("m").prompted == {"kind": "json_object", "schema": None}
        shaped = (
            'Answer with one JSON value only, valid against this JSON Schema named "s": no prose, no code '
            f"fence, nothing before or after it.\n\n{json.dumps(schema)}"
        )
        assert json.loads(ask(shaped)) == {"n": 0}
        assert fake.last("m").prompted == {"kind": "json_schema", "schema": schema}
        assert ask("Be brief.") == "prose"


class _Inner(BaseModel):
    name: str = Field(min_length=2)
    score: float = Field(gt=0, le=1)


class _Nested(BaseModel):
    """What an SDK's parse helper sends for a nested model: `$defs` and `$ref`, bounds."""

    answer: int = Field(le=-3)
    kind: Literal["a", "b"]
    inner: _Inner
    maybe: _Inner | None
    items: list[_Inner] = Field(min_length=2)
    price: float = Field(gt=5, multiple_of=0.25)


@pytest.mark.parametrize(
    "schema",
    [
        _Nested.model_json_schema(),
        {"type": "object", "required": ["n"], "properties": {"n": {"type": "number", "exclusiveMinimum": 5}}},
        {
            "type": "integer",
            "minimum": 3,
            "exclusiveMinimum": True,
            "$schema": "http://json-schema.org/draft-04/schema#",
        },
        {
            "allOf": [{"$ref": "#/$defs/a"}, {"required": ["b"], "properties": {"b": {"type": "boolean"}}}],
            "$defs": {"a": {"type": "object", "required": ["a"], "properties": {"a": {"type": "string"}}}},
        },
        {"type": "array", "prefixItems": [{"type": "integer"}, {"type": "string"}], "minItems": 3},
        {
            "type": "object",
            "required": ["name", "children"],
            "properties": {"name": {"type": "string"}, "children": {"type": "array", "items": {"$ref": "#"}}},
        },
    ],
    ids=[
        "pydantic nested",
        "exclusive minimum",
        "draft 4 exclusive",
        "allOf and $ref",
        "prefixItems",
        "self $ref",
    ],
)
def test_a_schema_example_is_valid_against_the_schema(schema: dict[str, object]) -> None:
    """`schema-example` answered `{}` for a `$ref` (every nested pydantic
    model) and the bound itself for an exclusive one: answers the gateway
    rightly marked invalid, failing a test that meant them to be valid."""
    example = schema_example(schema)
    jsonschema.validators.validator_for(schema).check_schema(schema)
    jsonschema.validate(example, schema, cls=jsonschema.validators.validator_for(schema))


@pytest.mark.parametrize(
    ("document", "problem"),
    [
        ({"models": [{"answer": "x"}]}, "needs a 'served' id"),
        ({"models": [{"served": "a", "colour": "red"}]}, "unknown fields"),
        ({"models": [{"served": "a", "rate_limit": {"style": "smoke"}}]}, "style must be one of"),
        ({"models": 3}, "expected"),
    ],
)
def test_models_from_json_says_what_is_wrong(document: object, problem: str) -> None:
    with pytest.raises(ValueError, match=problem):
        models_from_json(json.dumps(document))


def test_cli_refuses_an_unreadable_models_file_in_one_line(tmp_path: Path) -> None:
    bad = tmp_path / "models.json"
    bad.write_text("{not json")
    for path in (bad, tmp_path / "missing.json"):
        result = CliRunner().invoke(app, ["fake-provider", "--port", "1", "--models", str(path)])
        assert result.exit_code != 0
        assert "Traceback" not in result.output
        assert str(path) in result.output


LATENCY = 0.3
OPENAI_TOOLS = [{"type": "function", "function": WEATHER}]


def _asking(api: str, served: str, stream: bool) -> tuple[str, dict[str, object], dict[str, str]]:
    """A raw request of one API (path, body, headers), offering the weather tool."""
    messages = [{"role": "user", "content": "weather?"}]
    if api == "openai":
        return (
            "/v1/chat/completions",
            {"model": served, "messages": messages, "stream": stream, "tools": OPENAI_TOOLS},
            {},
        )
    if api == "anthropic":
        tool = {"name": WEATHER["name"], "input_schema": WEATHER["parameters"]}
        body = {"model": served, "max_tokens": 100, "messages": messages, "stream": stream, "tools": [tool]}
        return "/v1/messages", body, {"anthropic-version": "2023-06-01"}
    if api == "gemini":
        method = "streamGenerateContent?alt=sse" if stream else "generateContent"
        body = {
            "contents": [{"role": "user", "parts": [{"text": "weather?"}]}],
            "tools": [{"functionDeclarations": [WEATHER]}],
        }
        return f"/v1beta/models/{served}:{method}", body, {}
    return "/api/chat", {"model": served, "messages": messages, "stream": stream, "tools": OPENAI_TOOLS}, {}


async def test_latency_holds_for_every_reply_shape(fake_provider: FakeProvider) -> None:
    """One piece of text, a single tool call, streamed or whole, on every
    API: the reply takes the scripted `latency`, and its first byte `ttfb`."""
    fake_provider.add(FakeModel("one-word", answer="hello", latency=LATENCY, ttfb=0.1))
    fake_provider.add(
        FakeModel("one-call", tool_calls=[FakeToolCall("get_weather", {"city": "Oslo"})], latency=LATENCY)
    )

    async def timed(
        client: httpx.AsyncClient, api: str, served: str, stream: bool
    ) -> tuple[str, float, float]:
        path, body, headers = _asking(api, served, stream)
        started = time.monotonic()
        async with client.stream("POST", fake_provider.url + path, json=body, headers=headers) as reply:
            first_byte = time.monotonic() - started
            content = await reply.aread()
            assert reply.status_code == 200, content
        return f"{api} {served} {'stream' if stream else 'whole'}", first_byte, time.monotonic() - started

    async with httpx.AsyncClient(timeout=60) as client:
        timings = await asyncio.gather(
            *(
                timed(client, api, served, stream)
                for api in API_KINDS
                for served in ("one-word", "one-call")
                for stream in (False, True)
            )
        )
    too_quick = [(shape, round(took, 3)) for shape, _first, took in timings if took < LATENCY * 0.95]
    assert too_quick == []
    early = [shape for shape, first, _took in timings if "one-word" in shape and first < 0.1 * 0.95]
    assert early == []
    assert fake_provider.calls["one-call"] == 8 and fake_provider.last("one-call").tools == ["get_weather"]
