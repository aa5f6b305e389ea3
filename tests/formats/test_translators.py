"""The inbound translators without a server: what each reads from its
client's body, what it refuses, and the bytes it writes back."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Callable

import pytest

from benchwarmers.errors import UserError
from benchwarmers.formats import anthropic, gemini, ollama, openai_chat, responses
from benchwarmers.types import Image, PanelEvent, PanelReply, Text

from .formats_support import PNG_DATA

pytestmark = pytest.mark.unit

Events = Callable[[], AsyncIterator[PanelEvent]]


async def collect(chunks: AsyncIterator[bytes]) -> str:
    return b"".join([chunk async for chunk in chunks]).decode()


def sse_events(raw: str) -> list[dict]:
    return [json.loads(line[5:]) for line in raw.splitlines() if line.startswith("data:")]


def assert_both_seats(text: str) -> None:
    assert "Alpha says four." in text and "call c_first" in text
    assert "upstream broke" in text and "call c_second" in text


def assert_bench(bench: dict) -> None:
    assert bench["collection"] == "bench/trio"
    assert [s["call"] for s in bench["seats"]] == ["c_first", "c_second"]
    assert bench["leftOff"] == [{"alias": "gamma", "reason": "vision model, no image"}]


# ---------------------------------------------------------------- openai chat

HI = [{"role": "user", "content": "hi"}]


@pytest.mark.parametrize(
    ("body", "says"),
    [
        ({"n": 3}, '"n" must be 1'),
        ({"functions": [{"name": "f", "parameters": {}}]}, "route mode"),
        ({"function_call": {"name": "f"}}, "route mode"),
        ({"tool_choice": "required"}, "route mode"),
        ({"tool_choice": {"type": "function", "function": {"name": "f"}}}, "route mode"),
        ({"logprobs": True}, "logprobs"),
        ({"top_logprobs": 3}, "logprobs"),
        ({"modalities": ["text", "audio"], "audio": {"voice": "alloy", "format": "wav"}}, "modalities"),
    ],
)
def test_openai_chat_refuses_what_a_panel_cannot_honour(body: dict, says: str) -> None:
    """Not silently dropped: a client asking for a tool call, log
    probabilities or audio would otherwise get text and no word why."""
    with pytest.raises(UserError, match=says):
        openai_chat.parse_ask({"model": "bench/trio", "messages": HI, **body})


@pytest.mark.parametrize("model", ["bench/trio", "bench/trio:route"])
def test_openai_chat_reads_stream_options_only_beside_a_stream(model: str) -> None:
    """As OpenAI: refused without `stream: true` (naming the parameter, for
    OpenAI's `error.param`), in a panel and in route mode alike."""
    options = {"include_usage": True}
    for stream in ({}, {"stream": False}, {"stream": None}):
        with pytest.raises(UserError, match=r"^The 'stream_options' parameter is only allowed") as refused:
            openai_chat.parse_ask({"model": model, "messages": HI, **stream, "stream_options": options})
        assert refused.value.field == "stream_options"
    assert openai_chat.parse_ask(
        {"model": model, "messages": HI, "stream": True, "stream_options": options}
    ).stream
    assert not openai_chat.parse_ask({"model": model, "messages": HI, "stream_options": None}).stream


def test_openai_chat_passes_the_off_values_clients_always_send() -> None:
    body = {"n": 1, "logprobs": False, "modalities": ["text"], "tool_choice": "auto", "function_call": "none"}
    ask = openai_chat.parse_ask({"model": "bench/trio", "messages": HI, **body})
    assert ask.mode == "panel" and not ask.request.tools


# ---------------------------------------------------------------- responses


def test_responses_reads_items_instructions_images_and_sampling() -> None:
    ask = responses.parse_ask(
        {
            "model": "bench/trio:merged",
            "instructions": "Be brief.",
            "input": [
                {"role": "developer", "content": "No lists."},
                {
                    "role": "user",
                    "content": [
                        {"type": "input_text", "text": "What is this?"},
                        {"type": "input_image", "image_url": f"data:image/png;base64,{PNG_DATA}"},
                    ],
                },
                {
                    "type": "message",
                    "role": "assistant",
                    "content": [{"type": "output_text", "text": "A dot."}],
                },
                {"role": "user", "content": "Sure?"},
            ],
            "temperature": 0.2,
            "top_p": 0.9,
            "max_output_tokens": 50,
            "stream": True,
        }
    )
    assert (ask.collection, ask.mode, ask.stream) == ("trio", "merged", True)
    assert ask.request.system == "Be brief.\n\nNo lists."
    assert [m.role for m in ask.request.messages] == ["user", "assistant", "user"]
    assert ask.request.messages[0].parts[1] == Image(media_type="image/png", data=PNG_DATA)
    s = ask.request.sampling
    assert (s.temperature, s.top_p, s.max_tokens) == (0.2, 0.9, 50)


@pytest.mark.parametrize(
    ("body", "says"),
    [
        ({"tools": [{"type": "function", "name": "f"}]}, "route mode"),
        ({"input": [{"type": "function_call_output", "call_id": "x", "output": "1"}]}, "route mode"),
        ({"input": [{"role": "user", "content": [{"type": "input_file", "file_id": "f"}]}]}, "input_file"),
        ({"previous_response_id": "resp_1"}, "previous_response_id"),
        ({"text": {"format": {"type": "json_schema"}}}, "text.format.schema"),
        ({"input": 3}, "input must be an array"),
        ({"top_logprobs": 2}, "top_logprobs"),
        ({"include": ["message.output_text.logprobs"]}, "top_logprobs"),
    ],
)
def test_responses_refuses_what_it_cannot_carry(body: dict, says: str) -> None:
    with pytest.raises(UserError, match=says):
        responses.parse_ask({"model": "bench/trio", "input": "hi", **body})


async def test_responses_stream_has_the_event_sequence_and_bench_last(
    events: Events, reply: PanelReply
) -> None:
    ask = responses.parse_ask({"model": "bench/trio", "input": "hi", "stream": True})
    sent = sse_events(await collect(responses.render_stream(events(), ask)))
    kinds = [e["type"] for e in sent]
    assert kinds[:4] == [
        "response.created",
        "response.in_progress",
        "response.output_item.added",
        "response.content_part.added",
    ]
    assert kinds[-1] == "response.completed" and kinds.count("response.output_text.delta") == 3
    assert [e["sequence_number"] for e in sent] == list(range(len(sent)))
    deltas = "".join(e["delta"] for e in sent if e["type"] == "response.output_text.delta")
    assert deltas.index("c_second") < deltas.index("c_first")  # finish order
    assert_both_seats(deltas)
    assert_bench(sent[-1]["response"]["bench"])
    body = responses.render_reply(reply, ask)
    assert body["output"][0]["content"][0]["text"].startswith("### Seat 1")
    assert_bench(body["bench"])


# ---------------------------------------------------------------- anthropic


def test_anthropic_reads_system_blocks_images_stops_and_tools_for_route() -> None:
    body = {
        "model": "bench/trio",
        "max_tokens": 100,
        "system": [{"type": "text", "text": "One."}, {"type": "text", "text": "Two."}],
        "messages": [
            {
                "role": "user",
                "content": [
                    {
                        "type": "image",
                        "source": {"type": "base64", "media_type": "image/png", "data": PNG_DATA},
                    },
                    {"type": "image", "source": {"type": "url", "url": "https://example.com/a.png"}},
                    {"type": "text", "text": "Compare."},
                ],
            },
            {
                "role": "assistant",
                "content": [
                    {"type": "thinking", "thinking": "hm", "signature": "s"},
                    {"type": "text", "text": "Same."},
                ],
            },
            {"role": "user", "content": "Really?"},
        ],
        "stop_sequences": ["END"],
        "top_k": 5,
    }
    ask = anthropic.parse_ask(body)
    assert ask.request.system == "One.\n\nTwo."
    first = ask.request.messages[0]
    assert first.images == (Image("image/png", PNG_DATA), Image("", url="https://example.com/a.png"))
    assert ask.request.messages[1].parts == (Text("Same."),)
    assert ask.request.sampling.stop == ("END",) and ask.request.sampling.top_k == 5
    tools = {"tools": [{"name": "read", "input_schema": {"type": "object"}}], "metadata": {"user_id": "s1"}}
    with pytest.raises(UserError, match="route mode"):
        anthropic.parse_ask({**body, **tools})
    routed = anthropic.parse_ask({**body, **tools, "model": "bench/trio:route"})
    assert routed.request.tools[0].name == "read" and routed.conversation == "s1"
    # A tool_choice asking for no call is honoured by a panel; one insisting on a call is not.
    assert anthropic.parse_ask({**body, "tool_choice": {"type": "none"}}).mode == "panel"
    assert anthropic.parse_ask({**body, "tool_choice": {"type": "auto"}}).mode == "panel"
    with pytest.raises(UserError, match="route mode"):
        anthropic.parse_ask({**body, "tool_choice": {"type": "any"}})


@pytest.mark.parametrize(
    ("content", "says"),
    [
        ([{"type": "document", "source": {}}], "'document' cannot be carried"),
        (
            [{"type": "image", "source": {"type": "base64", "media_type": "application/pdf", "data": "x"}}],
            "image",
        ),
        ([{"type": "tool_result", "tool_use_id": "t", "content": "1"}], "route mode"),
        ("hi", None),
    ],
)
def test_anthropic_refuses_unknown_blocks(content: object, says: str | None) -> None:
    body = {"model": "bench/trio", "messages": [{"role": "user", "content": content}]}
    if says is None:
        anthropic.parse_ask(body)
        return
    with pytest.raises(UserError, match=says):
        anthropic.parse_ask(body)


async def test_anthropic_stream_event_order_and_bench(events: Events, reply: PanelReply) -> None:
    ask = anthropic.parse_ask({"model": "bench/trio", "messages": [{"role": "user", "content": "hi"}]})
    raw = await collect(anthropic.render_stream(events(), ask))
    sent = sse_events(raw)
    kinds = [e["type"] for e in sent]
    assert kinds == [
        "message_start",
        "content_block_start",
        "ping",
        "content_block_delta",
        "content_block_delta",
        "content_block_delta",
        "content_block_stop",
        "message_delta",
        "message_stop",
    ]
    assert all(f"event: {k}\n" in raw for k in kinds)
    assert_both_seats("".join(e["delta"]["text"] for e in sent if e["type"] == "content_block_delta"))
    assert_bench(sent[-1]["bench"])
    assert_bench(anthropic.render_reply(reply, ask)["bench"])


# ------------------------------------------------------------------- gemini


def test_gemini_model_path_and_camel_or_snake_fields() -> None:
    assert gemini.split_model_path("models/bench/trio:streamGenerateContent") == (
        "bench/trio",
        "streamGenerateContent",
    )
    assert gemini.split_model_path("bench/trio:merged") == ("bench/trio:merged", "")
    assert gemini.split_model_path("bench/trio:merged:generateContent") == (
        "bench/trio:merged",
        "generateContent",
    )
    ask = gemini.parse_ask(
        {
            "system_instruction": {"parts": [{"text": "Terse."}]},
            "contents": [
                {
                    "role": "user",
                    "parts": [
                        {"text": "Look"},
                        {"inline_data": {"mime_type": "image/png", "data": PNG_DATA}},
                    ],
                },
                {"role": "model", "parts": [{"text": "thinking", "thought": True}, {"text": "A dot."}]},
                {"parts": [{"text": "Sure?"}]},
            ],
            "generationConfig": {
                "temperature": 0.5,
                "topK": 3,
                "maxOutputTokens": 20,
                "stopSequences": ["x"],
                "seed": 7,
            },
        },
        model="bench/trio",
    )
    assert ask.request.system == "Terse."
    assert ask.request.messages[0].images == (Image("image/png", PNG_DATA),)
    assert ask.request.messages[1].parts == (Text("A dot."),)
    assert ask.request.messages[2].role == "user"
    s = ask.request.sampling
    assert (s.temperature, s.top_k, s.max_tokens, s.stop, s.seed) == (0.5, 3, 20, ("x",), 7)


@pytest.mark.parametrize(
    ("extra", "says"),
    [
        ({"tools": [{"functionDeclarations": []}]}, "route mode"),
        ({"contents": [{"parts": [{"functionResponse": {"name": "f"}}]}]}, "route mode"),
        ({"contents": [{"parts": [{"inlineData": {"mimeType": "audio/wav", "data": "x"}}]}]}, "only images"),
        ({"contents": [{"parts": [{"executableCode": {}}]}]}, "executableCode"),
        ({"generationConfig": {"responseMimeType": "application/xml"}}, "text/plain or application/json"),
        ({"generationConfig": {"presencePenalty": 1}}, "presencePenalty"),
        ({"cachedContent": "c/1"}, "cachedContent"),
        ({"contents": [{"role": "system", "parts": [{"text": "x"}]}]}, "'user' or 'model'"),
    ],
)
def test_gemini_refuses_what_it_cannot_carry(extra: dict, says: str) -> None:
    with pytest.raises(UserError, match=says):
        gemini.parse_ask({"contents": [{"parts": [{"text": "hi"}]}], **extra}, model="bench/trio")


@pytest.mark.parametrize("sse", [True, False])
async def test_gemini_streams_sse_or_a_json_array(events: Events, sse: bool) -> None:
    ask = gemini.parse_ask({"contents": [{"parts": [{"text": "hi"}]}]}, model="bench/trio")
    raw = await collect(gemini.render_stream(events(), ask, sse=sse))
    chunks = sse_events(raw) if sse else json.loads(raw)
    text = "".join(p["text"] for c in chunks for p in c["candidates"][0]["content"]["parts"])
    assert_both_seats(text)
    assert chunks[-1]["candidates"][0]["finishReason"] == "STOP"
    assert_bench(chunks[-1]["bench"])


# ------------------------------------------------------------------- ollama


def test_ollama_reads_chat_images_options_and_streams_by_default() -> None:
    ask = ollama.parse_ask(
        {
            "model": "bench/trio:latest",
            "messages": [
                {"role": "system", "content": "Short."},
                {"role": "user", "content": "What?", "images": [PNG_DATA]},
                {"role": "assistant", "content": "A dot."},
                {"role": "user", "content": "Sure?"},
            ],
            "options": {"temperature": 0.1, "num_predict": 30, "stop": ["\n\n"], "num_ctx": 8192, "seed": 1},
        }
    )
    assert (ask.collection, ask.mode, ask.stream) == ("trio", "panel", True)
    assert ask.request.system == "Short."
    assert ask.request.messages[0].images == (Image("image/png", PNG_DATA),)
    s = ask.request.sampling
    assert (s.temperature, s.max_tokens, s.stop, s.seed) == (0.1, 30, ("\n\n",), 1)
    generated = ollama.parse_generate({"model": "bench/trio", "prompt": "hi", "system": "S", "stream": False})
    assert generated.request.system == "S" and generated.stream is False
    assert ollama.is_load({"model": "bench/trio"}) and ollama.is_load({"model": "bench/trio"}, generate=True)
    assert not ollama.is_load({"model": "bench/trio", "prompt": "x"}, generate=True)


@pytest.mark.parametrize(
    ("body", "says"),
    [
        ({"tools": [{"type": "function"}]}, "route mode"),
        ({"messages": [{"role": "tool", "content": "1"}]}, "route mode"),
        ({"format": "yaml"}, "format"),
        ({"options": {"mirostat": 2}}, "mirostat"),
        ({"messages": [{"role": "user", "content": "x", "images": ["bm90IGFuIGltYWdl"]}]}, "not a base64"),
        ({"model": "llama3"}, "not a collection"),
        ({"logprobs": True, "top_logprobs": 2}, "logprobs"),
    ],
)
def test_ollama_refuses_what_it_cannot_carry(body: dict, says: str) -> None:
    with pytest.raises(UserError, match=says):
        ollama.parse_ask({"model": "bench/trio", "messages": [{"role": "user", "content": "hi"}], **body})


@pytest.mark.parametrize("generate", [False, True])
async def test_ollama_streams_ndjson_with_bench_on_the_done_line(events: Events, generate: bool) -> None:
    ask = ollama.parse_generate({"model": "bench/trio", "prompt": "hi"})
    lines = [
        json.loads(line)
        for line in (await collect(ollama.render_stream(events(), ask, generate=generate))).splitlines()
    ]
    key = "response" if generate else "message"
    text = "".join(line[key] if generate else line[key]["content"] for line in lines)
    assert_both_seats(text)
    assert [line["done"] for line in lines] == [False] * (len(lines) - 1) + [True]
    assert_bench(lines[-1]["bench"])
