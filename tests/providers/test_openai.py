"""The OpenAI-compatible adapter on the in-memory wire: the chat-completions
body it posts, the replies and streams it reads (literal OpenAI wire JSON,
written here, not by the adapter or the fake provider), and each failure as
our error. The fake-provider versions (test_adapters.py, test_faults.py)
check the same over loopback HTTP."""

from __future__ import annotations

from typing import Any

import pytest

from benchwarmers.errors import ProviderAuthError, ProviderBadReply, ProviderError, ProviderRateLimited
from benchwarmers.providers.memory import WireResponse, broken
from benchwarmers.types import (
    Finish,
    Image,
    Message,
    Request,
    Text,
    TextDelta,
    ToolCall,
    ToolCallDelta,
    ToolResult,
    Usage,
    UsageReport,
    user,
)

from .memory_support import CONVERSATION, PIXEL, WEATHER, answering, failure, listed, run

pytestmark = pytest.mark.unit

ASK = Request((user("hello"),))


def completion(message: dict[str, Any], finish: str | None = "stop", **extra: Any) -> dict[str, Any]:
    return {
        "id": "chatcmpl-1",
        "object": "chat.completion",
        "model": "m1",
        "choices": [{"index": 0, "message": {"role": "assistant", **message}, "finish_reason": finish}],
        **extra,
    }


def delta(finish: str | None = None, **fields: Any) -> dict[str, Any]:
    return {
        "object": "chat.completion.chunk",
        "choices": [{"index": 0, "delta": fields, "finish_reason": finish}],
    }


USAGE = {"prompt_tokens": 11, "completion_tokens": 5, "total_tokens": 16}


@pytest.mark.parametrize("stream", [False, True], ids=["whole", "stream"])
async def test_the_body_carries_history_tools_and_sampling_in_openais_shape(stream: bool) -> None:
    reply = (
        WireResponse.sse(delta("stop", content="ok"), "[DONE]")
        if stream
        else WireResponse.json(completion({"content": "ok"}))
    )
    sent = (await run("openai", answering(reply), CONVERSATION, stream=stream)).request
    assert str(sent.url) == "https://api.example/v1/chat/completions"
    assert sent.headers["authorization"] == "Bearer sk-test-key"
    expected: dict[str, Any] = {
        "model": "m1",
        "messages": [
            {"role": "system", "content": "be brief"},
            {"role": "user", "content": "weather in Oslo?"},
            {
                "role": "assistant",
                "content": "let me look",
                "tool_calls": [
                    {
                        "id": "call_1",
                        "type": "function",
                        "function": {"name": "get_weather", "arguments": '{"city": "Oslo"}'},
                    }
                ],
            },
            {"role": "tool", "tool_call_id": "call_1", "content": '{"temp": 3}'},
            {"role": "user", "content": "and tomorrow?"},
        ],
        "tools": [
            {
                "type": "function",
                "function": {
                    "name": "get_weather",
                    "description": "Weather for a city",
                    "parameters": WEATHER.parameters,
                },
            }
        ],
        "tool_choice": {"type": "function", "function": {"name": "get_weather"}},
        "temperature": 0.2,
        "top_p": 0.9,
        "top_k": 40,
        "max_tokens": 100,
        "seed": 7,
        "stop": ["END"],
    }
    if stream:
        expected |= {"stream": True, "stream_options": {"include_usage": True}}
    assert sent.json == expected


@pytest.mark.parametrize(("choice", "sent"), [("auto", "auto"), ("none", "none"), ("required", "required")])
async def test_a_tool_choice_mode_goes_as_its_word(choice: str, sent: str) -> None:
    request = Request((user("hi"),), tools=(WEATHER,), tool_choice=choice)
    ran = await run(
        "openai", answering(WireResponse.json(completion({"content": "ok"}))), request, stream=False
    )
    assert ran.request.json["tool_choice"] == sent


async def test_images_make_a_content_list_and_an_error_result_says_so() -> None:
    request = Request(
        (
            Message(
                "user", (Text("what is this?"), Image("image/png", PIXEL), Image("", url="https://x/y.png"))
            ),
            Message("assistant", (ToolCall("c9", "get_weather", "{}"),)),
            Message("user", (ToolResult("c9", "no such city", is_error=True),)),
        )
    )
    sent = (
        await run(
            "openai", answering(WireResponse.json(completion({"content": "a pixel"}))), request, stream=False
        )
    ).request
    assert sent.json["messages"] == [
        {
            "role": "user",
            "content": [
                {"type": "text", "text": "what is this?"},
                {"type": "image_url", "image_url": {"url": f"data:image/png;base64,{PIXEL}"}},
                {"type": "image_url", "image_url": {"url": "https://x/y.png"}},
            ],
        },
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {"id": "c9", "type": "function", "function": {"name": "get_weather", "arguments": "{}"}}
            ],
        },
        {"role": "tool", "tool_call_id": "c9", "content": "Error: no such city"},
    ]


async def test_no_key_sends_no_authorization() -> None:
    ran = await run(
        "openai", answering(WireResponse.json(completion({"content": "ok"}))), ASK, stream=False, key=None
    )
    assert "authorization" not in ran.request.headers
    assert ran.request.json == {"model": "m1", "messages": [{"role": "user", "content": "hello"}]}


async def test_a_whole_reply_reads_text_usage_finish_and_headers() -> None:
    body = completion({"content": "the sky is blue"}, usage=USAGE)
    ran = await run(
        "openai",
        answering(WireResponse.json(body, headers={"x-ratelimit-remaining-requests": "41"})),
        ASK,
        stream=False,
    )
    assert ran.headers["x-ratelimit-remaining-requests"] == "41"
    assert ran.chunks[1:] == [TextDelta("the sky is blue"), UsageReport(Usage(11, 5)), Finish("stop")]


async def test_a_whole_reply_with_tool_calls() -> None:
    calls = [
        {
            "id": "call_a",
            "type": "function",
            "function": {"name": "get_weather", "arguments": '{"city": "Oslo"}'},
        },
        {"id": "call_b", "type": "function", "function": {"name": "get_weather", "arguments": ""}},
    ]
    body = completion({"content": None, "tool_calls": calls}, "tool_calls")
    reply = await (await run("openai", answering(WireResponse.json(body)), ASK, stream=False)).reply()
    assert [(c.id, c.name, c.arguments) for c in reply.tool_calls] == [
        ("call_a", "get_weather", '{"city": "Oslo"}'),
        ("call_b", "get_weather", "{}"),
    ]
    assert (reply.text, reply.finish, reply.usage) == ("", "tool_calls", Usage())


@pytest.mark.parametrize(
    ("reason", "finish"),
    [
        ("length", "length"),
        ("content_filter", "content_filter"),
        ("function_call", "tool_calls"),
        (None, "stop"),
    ],
)
async def test_finish_reasons_map(reason: str | None, finish: str) -> None:
    body = completion({"content": "x"}, reason)
    reply = await (await run("openai", answering(WireResponse.json(body)), ASK, stream=False)).reply()
    assert reply.finish == finish


async def test_a_stream_gives_pieces_then_usage_then_finish() -> None:
    events = [
        delta(role="assistant", content=""),
        delta(content="the sky"),
        delta(content=" is blue"),
        delta("stop"),
        {"object": "chat.completion.chunk", "choices": [], "usage": USAGE},
        "[DONE]",
    ]
    ran = await run("openai", answering(WireResponse.sse(*events)), ASK, stream=True)
    assert ran.headers["content-type"] == "text/event-stream"
    assert ran.chunks[1:] == [
        TextDelta("the sky"),
        TextDelta(" is blue"),
        UsageReport(Usage(11, 5)),
        Finish("stop"),
    ]


async def test_a_streamed_tool_call_arrives_in_pieces_and_is_assembled() -> None:
    first = {
        "index": 0,
        "id": "call_a",
        "type": "function",
        "function": {"name": "get_weather", "arguments": ""},
    }
    events = [
        delta(tool_calls=[first]),
        delta(tool_calls=[{"index": 0, "function": {"arguments": '{"city": '}}]),
        delta(tool_calls=[{"index": 0, "function": {"arguments": '"Oslo"}'}}]),
        "[DONE]",  # no finish_reason at all: the tool call decides it
    ]
    ran = await run("openai", answering(WireResponse.sse(*events)), ASK, stream=True)
    assert ran.content == [
        ToolCallDelta(0, "call_a", "get_weather", ""),
        ToolCallDelta(0, "", "", '{"city": '),
        ToolCallDelta(0, "", "", '"Oslo"}'),
    ]
    reply = await ran.reply()
    assert [(c.id, c.name, c.arguments) for c in reply.tool_calls] == [
        ("call_a", "get_weather", '{"city": "Oslo"}')
    ]
    assert reply.finish == "tool_calls"


async def test_a_429_with_rate_limit_headers_is_rate_limited_and_keeps_them() -> None:
    headers = {
        "retry-after-ms": "1500",
        "retry-after": "2",
        "x-ratelimit-limit-requests": "60",
        "x-ratelimit-remaining-requests": "0",
        "x-ratelimit-reset-requests": "1s",
    }
    said = {"error": {"message": "Rate limit reached", "type": "requests", "code": "rate_limit_exceeded"}}
    error, got = await failure("openai", answering(WireResponse.json(said, 429, headers)), ASK, stream=True)
    assert type(error) is ProviderRateLimited and got == []
    assert (error.status, error.message, error.retry_after) == (429, "Rate limit reached", 1.5)
    assert error.headers["x-ratelimit-remaining-requests"] == "0"


async def test_a_rate_limit_said_only_in_words_still_gives_the_wait() -> None:
    said = {
        "error": {"message": "Rate limit reached. Please try again in 6m0s. Visit our docs", "code": None}
    }
    error, _ = await failure("openai", answering(WireResponse.json(said, 429)), ASK, stream=False)
    assert type(error) is ProviderRateLimited and error.retry_after == 360


async def test_a_rate_limit_code_on_another_status_is_rate_limited() -> None:
    said = {"error": {"message": "quota", "type": "rate_limit_exceeded"}}
    error, _ = await failure("openai", answering(WireResponse.json(said, 400)), ASK, stream=False)
    assert type(error) is ProviderRateLimited and error.status == 400


@pytest.mark.parametrize(
    ("status", "kind"),
    [(401, ProviderAuthError), (403, ProviderAuthError), (404, ProviderError), (500, ProviderError)],
)
@pytest.mark.parametrize("stream", [False, True], ids=["whole", "stream"])
async def test_an_error_status_is_its_type_with_openais_message(
    status: int, kind: type[ProviderError], stream: bool
) -> None:
    said = {"error": {"message": "the model is on fire", "type": "server_error"}}
    error, _ = await failure("openai", answering(WireResponse.json(said, status)), ASK, stream=stream)
    assert type(error) is kind
    assert (error.status, error.message, error.after_first_byte) == (status, "the model is on fire", False)


async def test_an_error_inside_a_200_reply_or_stream_is_a_server_error() -> None:
    said = {"error": {"message": "upstream died", "type": "server_error"}}
    error, _ = await failure("openai", answering(WireResponse.json(said)), ASK, stream=False)
    assert (type(error), error.status, error.message) == (ProviderError, 500, "upstream died")
    stream = WireResponse.sse(delta(content="par"), said, "[DONE]")
    error, got = await failure("openai", answering(stream), ASK, stream=True)
    assert (type(error), error.message, error.after_first_byte) == (ProviderError, "upstream died", True)
    assert got[1:] == [TextDelta("par")]


async def test_a_stream_broken_mid_tool_call_is_a_bad_reply_after_the_first_byte() -> None:
    first = {"index": 0, "id": "call_a", "function": {"name": "get_weather", "arguments": '{"ci'}}
    stream = WireResponse.sse(delta(tool_calls=[first]), broken())
    error, _ = await failure("openai", answering(stream), ASK, stream=True)
    assert type(error) is ProviderBadReply and error.after_first_byte is True


async def test_the_model_list() -> None:
    body = {
        "object": "list",
        "data": [{"id": "gpt-x", "object": "model"}, {"id": "free/y", "object": "model"}],
    }
    served, sent = await listed("openai", answering(WireResponse.json(body)))
    assert served == ["gpt-x", "free/y"]
    assert (sent.method, str(sent.url), sent.headers) == (
        "GET",
        "https://api.example/v1/models",
        {"authorization": "Bearer sk-test-key"},
    )


async def test_cached_prompt_tokens_are_read_as_part_of_the_input() -> None:
    usage = {**USAGE, "prompt_tokens_details": {"cached_tokens": 8}}
    ran = await run(
        "openai", answering(WireResponse.json(completion({"content": "ok"}, usage=usage))), ASK, stream=False
    )
    assert UsageReport(Usage(11, 5, 8)) in ran.chunks
