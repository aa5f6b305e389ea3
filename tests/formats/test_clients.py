"""Every format through its official client, against the real server over a
fake provider: `openai` (Responses), `anthropic`, `google-genai` and
`ollama`, streamed and not. Each test checks that every seat's answer and
call id arrive, and that the call ids are real: the server's own
`/bench/pending` knows them as answered seats awaiting a verdict."""

from __future__ import annotations

import base64
import json
import re

import anthropic
import httpx
import ollama
import openai
import pytest
from google import genai
from google.genai import types as genai_types

from .formats_support import MEMBERS, PNG_DATA, Gateway

CALL = re.compile(r"· call (c_[A-Za-z0-9_-]+)")


def assert_every_seat(
    gateway: Gateway, text: str, prompt: str, *, images: int = 0, bench: dict | None = None
) -> None:
    """Each member answered the prompt, under a heading with its call id, and
    the ids are answered seats the server knows (and `bench` agrees)."""
    for alias in MEMBERS:
        assert f"{alias} heard {prompt!r}" in text, f"{alias}'s answer is missing from:\n{text}"
        assert f"images={images}" in text
    calls = CALL.findall(text)
    assert len(set(calls)) == len(MEMBERS), text
    pending = httpx.post(f"{gateway.url}/bench/pending", json={"calls": calls}).json()["pending"]
    assert sorted(pending) == sorted(calls)
    if bench is not None:
        assert sorted(s["call"] for s in bench["seats"]) == sorted(calls)
        assert {s["alias"] for s in bench["seats"]} == set(MEMBERS)
        assert all(s["status"] == "ok" for s in bench["seats"])


# ------------------------------------------------------------------- openai


@pytest.fixture
def openai_client(gateway: Gateway) -> openai.OpenAI:
    return openai.OpenAI(base_url=f"{gateway.url}/v1", api_key="any", max_retries=0)


def test_openai_responses_whole(gateway: Gateway, openai_client: openai.OpenAI) -> None:
    response = openai_client.responses.create(
        model="bench/trio",
        instructions="Be brief.",
        input=[
            {
                "role": "user",
                "content": [
                    {"type": "input_text", "text": "What is this?"},
                    {"type": "input_image", "image_url": f"data:image/png;base64,{PNG_DATA}"},
                ],
            },
        ],
        temperature=0.3,
    )
    assert response.status == "completed" and response.model == "bench/trio"
    assert "system='Be brief.'" in response.output_text
    assert_every_seat(
        gateway, response.output_text, "What is this?", images=1, bench=response.model_extra["bench"]
    )


@pytest.mark.parametrize("choice", ["live", "sections"])
def test_openai_responses_stream_events(gateway: Gateway, openai_client: openai.OpenAI, choice: str) -> None:
    kinds, deltas, final = [], [], None
    stream = openai_client.responses.create(
        model="bench/trio", input="Stream it", stream=True, extra_headers={"x-bench-stream": choice}
    )
    for event in stream:
        kinds.append(event.type)
        if event.type == "response.output_text.delta":
            deltas.append(event.delta)
        if event.type == "response.completed":
            final = event.response
    assert kinds[0] == "response.created" and kinds[-1] == "response.completed"
    if choice == "sections":
        assert len(deltas) == len(MEMBERS)  # one piece per seat, as each finished
    else:
        assert len(deltas) > len(MEMBERS)  # each seat's words as they were written
    assert final is not None and final.output_text == "".join(deltas)
    assert_every_seat(gateway, final.output_text, "Stream it", bench=final.model_extra["bench"])


def test_an_unknown_stream_choice_is_refused(openai_client: openai.OpenAI) -> None:
    with pytest.raises(openai.BadRequestError) as refused:
        openai_client.responses.create(
            model="bench/trio", input="hi", stream=True, extra_headers={"x-bench-stream": "sometimes"}
        )
    assert "x-bench-stream must be one of live, sections" in refused.value.message


def test_openai_responses_stream_helper(gateway: Gateway, openai_client: openai.OpenAI) -> None:
    with openai_client.responses.stream(model="bench/trio", input="Helper") as stream:
        final = stream.get_final_response()
    assert_every_seat(gateway, final.output_text, "Helper", bench=final.model_extra["bench"])


def test_openai_responses_tools_refused_in_openai_shape(openai_client: openai.OpenAI) -> None:
    with pytest.raises(openai.BadRequestError) as refused:
        openai_client.responses.create(
            model="bench/trio", input="hi", tools=[{"type": "function", "name": "f", "parameters": {}}]
        )
    assert "route mode" in refused.value.message


@pytest.mark.parametrize("model", ["bench/trio", "bench/trio:route"])
def test_openai_chat_stream_options_without_a_stream_is_refused_as_openai_does(
    gateway: Gateway, openai_client: openai.OpenAI, model: str
) -> None:
    """OpenAI answers a 400 naming the parameter; so do we, panel and route
    mode alike, before anything is asked (no member hears of it). With a
    stream, or null, it passes."""
    hi = [{"role": "user", "content": "hi"}]
    asked = sum(gateway.fake.calls.values())
    for stream in (False, None):
        with pytest.raises(openai.BadRequestError) as refused:
            openai_client.chat.completions.create(
                model=model,
                messages=hi,  # type: ignore[arg-type]
                stream=stream,  # type: ignore[arg-type]
                stream_options={"include_usage": True},
            )
        error = refused.value
        said = error.body["message"]  # type: ignore[index]
        assert said == "The 'stream_options' parameter is only allowed when 'stream' is enabled."
        assert (error.status_code, error.param, error.type) == (
            400,
            "stream_options",
            "invalid_request_error",
        )
    assert sum(gateway.fake.calls.values()) == asked
    streamed = openai_client.chat.completions.create(
        model=model,
        messages=hi,  # type: ignore[arg-type]
        stream=True,
        stream_options={"include_usage": True},
    )
    assert [c for c in streamed if c.usage is not None]
    whole = httpx.post(
        f"{gateway.url}/v1/chat/completions", json={"model": model, "messages": hi, "stream_options": None}
    )
    assert whole.status_code == 200, whole.text


@pytest.mark.parametrize("model", ["bench/trio", "bench/trio:route"])
def test_openai_chat_prediction_is_accepted_and_not_passed_on(
    gateway: Gateway, openai_client: openai.OpenAI, model: str
) -> None:
    """Predicted outputs change how fast a model writes, never what: a
    panel (and a route-mode turn) answers as without it, and no member is
    sent it (docs/formats.md says why)."""
    before = len(gateway.fake.requests)
    reply = openai_client.chat.completions.create(
        model=model,
        messages=[{"role": "user", "content": "Rewrite this"}],
        prediction={"type": "content", "content": "Rewrite this"},
    )
    assert "heard 'Rewrite this'" in (reply.choices[0].message.content or "")
    sent = [asked.body for asked in gateway.fake.requests[before:]]
    assert sent and not any("prediction" in body for body in sent)


# ---------------------------------------------------------------- anthropic


@pytest.fixture
def anthropic_client(gateway: Gateway) -> anthropic.Anthropic:
    return anthropic.Anthropic(base_url=gateway.url, api_key="any", max_retries=0)


IMAGE_MESSAGE = {
    "role": "user",
    "content": [
        {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": PNG_DATA}},
        {"type": "text", "text": "Describe it"},
    ],
}


def test_anthropic_create_with_an_image(gateway: Gateway, anthropic_client: anthropic.Anthropic) -> None:
    raw = anthropic_client.messages.with_raw_response.create(
        model="bench/trio", max_tokens=200, system="Terse.", messages=[IMAGE_MESSAGE]
    )
    message = raw.parse()
    assert message.stop_reason == "end_turn" and message.role == "assistant"
    text = message.content[0].text
    assert "system='Terse.'" in text
    bench = message.model_extra["bench"]
    assert_every_seat(gateway, text, "Describe it", images=1, bench=bench)
    assert json.loads(raw.headers["x-bench"]) == bench


def test_anthropic_stream_with_an_image(gateway: Gateway, anthropic_client: anthropic.Anthropic) -> None:
    bench = None
    with anthropic_client.messages.stream(
        model="bench/trio", max_tokens=200, messages=[IMAGE_MESSAGE]
    ) as stream:
        for event in stream:
            if event.type == "message_delta":
                bench = event.model_extra["bench"]
        final = stream.get_final_message()
    assert final.stop_reason == "end_turn"
    assert_every_seat(gateway, final.content[0].text, "Describe it", images=1, bench=bench)


def test_anthropic_stream_merged(gateway: Gateway, anthropic_client: anthropic.Anthropic) -> None:
    """Merged: the seats are held back, the merger's answer is the text, and
    `bench` still names every seat and the merge."""
    bench = None
    messages = [{"role": "user", "content": "Merge this"}]
    with anthropic_client.messages.stream(
        model="bench/trio:merged", max_tokens=500, messages=messages
    ) as stream:
        for event in stream:
            if event.type == "message_delta":
                bench = event.model_extra["bench"]
        text = stream.get_final_message().content[0].text
    assert bench is not None and text == bench["merged"]["content"]
    assert "The panel's answers (3 seats)" in text  # the fake merger echoes what it was asked
    calls = [s["call"] for s in bench["seats"]] + [bench["merged"]["call"]]
    assert len(set(calls)) == 4 and {s["alias"] for s in bench["seats"]} == set(MEMBERS)


def test_anthropic_multi_turn_and_count_tokens(
    gateway: Gateway, anthropic_client: anthropic.Anthropic
) -> None:
    history = [
        {"role": "user", "content": "First question"},
        {"role": "assistant", "content": "First answer"},
        {"role": "user", "content": "Second question"},
    ]
    message = anthropic_client.messages.create(model="bench/trio", max_tokens=50, messages=history)
    assert_every_seat(gateway, message.content[0].text, "Second question", bench=message.model_extra["bench"])
    counted = anthropic_client.messages.count_tokens(model="bench/trio", messages=history)
    assert 5 <= counted.input_tokens <= 40


def test_a_long_answer_fits_the_header_and_stays_whole_in_the_body(
    gateway: Gateway, anthropic_client: anthropic.Anthropic
) -> None:
    raw = anthropic_client.messages.with_raw_response.create(
        model="bench/verbose",
        max_tokens=30_000,
        timeout=60,
        messages=[{"role": "user", "content": "Say a lot"}],
    )
    message = raw.parse()
    assert message.content[0].text.count("lorem ipsum") == 12_000
    assert message.model_extra["bench"]["seats"][0]["content"].count("lorem ipsum") == 12_000
    header = json.loads(raw.headers["x-bench"])
    assert header["seats"][0]["call"] == message.model_extra["bench"]["seats"][0]["call"]
    assert len(raw.headers["x-bench"]) <= 8192


def test_anthropic_errors_in_anthropic_shape(anthropic_client: anthropic.Anthropic) -> None:
    with pytest.raises(anthropic.NotFoundError) as missing:
        anthropic_client.messages.create(
            model="bench/nope", max_tokens=5, messages=[{"role": "user", "content": "x"}]
        )
    assert missing.value.body["type"] == "error" and "bench/trio" in missing.value.body["error"]["message"]
    with pytest.raises(anthropic.BadRequestError) as tools:
        anthropic_client.messages.create(
            model="bench/trio",
            max_tokens=5,
            messages=[{"role": "user", "content": "x"}],
            tools=[{"name": "f", "input_schema": {"type": "object"}}],
        )
    assert tools.value.body["error"]["type"] == "invalid_request_error"


# ------------------------------------------------------------------- gemini


@pytest.fixture
def gemini_client(gateway: Gateway) -> genai.Client:
    options = genai_types.HttpOptions(base_url=gateway.url, api_version="v1beta")
    return genai.Client(api_key="any", http_options=options)


def test_gemini_generate_content(gateway: Gateway, gemini_client: genai.Client) -> None:
    image = genai_types.Part.from_bytes(data=base64.b64decode(PNG_DATA), mime_type="image/png")
    response = gemini_client.models.generate_content(
        model="bench/trio",
        contents=[image, "Gemini asks"],
        config=genai_types.GenerateContentConfig(
            system_instruction="Short.", temperature=0.2, max_output_tokens=64
        ),
    )
    assert "system='Short.'" in response.text
    bench = json.loads(response.sdk_http_response.headers["x-bench"])
    assert_every_seat(gateway, response.text, "Gemini asks", images=1, bench=bench)


def test_gemini_generate_content_stream(gateway: Gateway, gemini_client: genai.Client) -> None:
    chunks = list(gemini_client.models.generate_content_stream(model="bench/trio", contents="Gemini streams"))
    text = "".join(chunk.text or "" for chunk in chunks)
    assert chunks[-1].candidates[0].finish_reason == genai_types.FinishReason.STOP
    assert_every_seat(gateway, text, "Gemini streams")


def test_gemini_client_default_api_version(gateway: Gateway) -> None:
    """Given only a base URL, google-genai speaks `v1`: generation works there too."""
    client = genai.Client(api_key="any", http_options=genai_types.HttpOptions(base_url=gateway.url))
    response = client.models.generate_content(model="bench/trio", contents="Gemini on v1")
    assert_every_seat(gateway, response.text, "Gemini on v1")


def test_gemini_without_a_version_as_litellm_posts_it(gateway: Gateway) -> None:
    """LiteLLM's `gemini/` provider, given an api_base, posts to
    `{api_base}/models/{model}:generateContent` (key in `?key=`)."""
    body = {"contents": [{"role": "user", "parts": [{"text": "LiteLLM asks"}]}]}
    url = f"{gateway.url}/models/bench/trio:generateContent"
    reply = httpx.post(url, params={"key": "any"}, json=body)
    assert reply.status_code == 200, reply.text
    text = "".join(p["text"] for p in reply.json()["candidates"][0]["content"]["parts"])
    assert_every_seat(gateway, text, "LiteLLM asks")
    stream = httpx.post(
        url.replace(":generate", ":streamGenerate"), params={"alt": "sse", "key": "any"}, json=body
    )
    assert stream.status_code == 200 and "LiteLLM asks" in stream.text
    missing = httpx.post(f"{gateway.url}/models/bench/nope:generateContent", json=body)
    assert missing.status_code == 404 and missing.json()["error"]["status"] == "NOT_FOUND"


def test_gemini_raw_stream_carries_bench_last(gateway: Gateway) -> None:
    body = {"contents": [{"role": "user", "parts": [{"text": "Raw"}]}]}
    url = f"{gateway.url}/v1beta/models/bench/trio:streamGenerateContent"
    with httpx.stream("POST", url, params={"alt": "sse"}, json=body) as reply:
        chunks = [json.loads(line[6:]) for line in reply.iter_lines() if line.startswith("data: ")]
    text = "".join(p["text"] for c in chunks for p in c["candidates"][0]["content"]["parts"])
    assert_every_seat(gateway, text, "Raw", bench=chunks[-1]["bench"])


def test_gemini_models_list_and_get(gemini_client: genai.Client) -> None:
    names = [m.name for m in gemini_client.models.list()]
    assert "models/bench/trio" in names and "models/bench/trio:merged" in names
    model = gemini_client.models.get(model="bench/trio")
    assert model.name == "models/bench/trio" and model.description == "three seats for tests"
    with pytest.raises(genai.errors.ClientError) as missing:
        gemini_client.models.get(model="bench/nope")
    assert missing.value.code == 404 and missing.value.status == "NOT_FOUND"


# ------------------------------------------------------------------- ollama


@pytest.fixture
def ollama_client(gateway: Gateway) -> ollama.Client:
    return ollama.Client(host=gateway.url)


def test_ollama_chat_whole_and_streamed(gateway: Gateway, ollama_client: ollama.Client) -> None:
    messages = [
        {"role": "system", "content": "Be kind."},
        {"role": "user", "content": "Ollama asks", "images": [PNG_DATA]},
    ]
    whole = ollama_client.chat(
        model="bench/trio", messages=messages, stream=False, options={"temperature": 0.1}
    )
    assert whole.done and whole.message.role == "assistant"
    assert "system='Be kind.'" in whole.message.content
    assert_every_seat(gateway, whole.message.content, "Ollama asks", images=1)
    parts = list(ollama_client.chat(model="bench/trio", messages=messages, stream=True))
    assert parts[-1].done and not any(p.done for p in parts[:-1])
    assert_every_seat(gateway, "".join(p.message.content for p in parts), "Ollama asks", images=1)


def test_ollama_generate_whole_and_streamed(gateway: Gateway, ollama_client: ollama.Client) -> None:
    whole = ollama_client.generate(model="bench/trio", prompt="Generate this", stream=False)
    assert whole.done and whole.done_reason == "stop"
    assert_every_seat(gateway, whole.response, "Generate this")
    parts = list(ollama_client.generate(model="bench/trio", prompt="Generate more", stream=True))
    assert_every_seat(gateway, "".join(p.response for p in parts), "Generate more")


def test_ollama_list_show_version_and_load(ollama_client: ollama.Client, gateway: Gateway) -> None:
    names = [m.model for m in ollama_client.list().models]
    assert {"bench/trio", "bench/trio:merged", "bench/other"} <= set(names)
    shown = ollama_client.show("bench/trio")
    assert (
        "vision" in shown.capabilities and shown.modelinfo["general.description"] == "three seats for tests"
    )
    assert httpx.get(f"{gateway.url}/api/version").json()["version"]
    loaded = ollama_client.generate(model="bench/trio", prompt="")
    assert loaded.done_reason == "load"
    with pytest.raises(ollama.ResponseError) as missing:
        ollama_client.show("bench/nope")
    assert missing.value.status_code == 404 and "bench/trio" in missing.value.error
