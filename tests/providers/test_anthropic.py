"""The Anthropic adapter on the in-memory wire: the Messages body it posts,
the replies and typed SSE streams it reads (literal Anthropic wire JSON,
written here), and each failure, in a reply or inside a stream, as our
error. The fake-provider versions (test_adapters.py, test_faults.py) check
the same over loopback HTTP."""

from __future__ import annotations

from typing import Any

import pytest

from benchwarmers.errors import ProviderAuthError, ProviderBadReply, ProviderError, ProviderRateLimited
from benchwarmers.providers.anthropic import DEFAULT_MAX_TOKENS
from benchwarmers.providers.memory import WireResponse, broken
from benchwarmers.types import (
    Finish,
    Image,
    Message,
    Request,
    Text,
    TextDelta,
    ToolCallDelta,
    ToolResult,
    Usage,
    UsageReport,
    user,
)

from .memory_support import CONVERSATION, PIXEL, WEATHER, answering, failure, listed, run

pytestmark = pytest.mark.unit

ASK = Request((user("hello"),))


def message(content: list[dict[str, Any]], stop: str | None = "end_turn", **usage: int) -> dict[str, Any]:
    return {
        "id": "msg_1",
        "type": "message",
        "role": "assistant",
        "model": "m1",
        "content": content,
        "stop_reason": stop,
        "usage": {"input_tokens": 0, "output_tokens": 0, **usage},
    }


def streamed(*middle: Any, stop: str = "end_turn", output: int = 5) -> WireResponse:
    """A whole typed stream around `middle` (content-block events), as the API sends it."""
    start = {"type": "message_start", "message": message([], None, input_tokens=11, output_tokens=1)}
    end = [
        (
            "message_delta",
            {"type": "message_delta", "delta": {"stop_reason": stop}, "usage": {"output_tokens": output}},
        ),
        ("message_stop", {"type": "message_stop"}),
    ]
    events = [("message_start", start), ("ping", {"type": "ping"}), *middle, *end]
    return WireResponse.sse(*events)


def text_block(index: int, *pieces: str) -> list[Any]:
    return [
        (
            "content_block_start",
            {"type": "content_block_start", "index": index, "content_block": {"type": "text", "text": ""}},
        ),
        *(
            (
                "content_block_delta",
                {"type": "content_block_delta", "index": index, "delta": {"type": "text_delta", "text": p}},
            )
            for p in pieces
        ),
        ("content_block_stop", {"type": "content_block_stop", "index": index}),
    ]


@pytest.mark.parametrize("stream", [False, True], ids=["whole", "stream"])
async def test_the_body_carries_history_tools_and_sampling_in_anthropics_shape(stream: bool) -> None:
    reply = (
        streamed(*text_block(0, "ok"))
        if stream
        else WireResponse.json(message([{"type": "text", "text": "ok"}]))
    )
    sent = (await run("anthropic", answering(reply), CONVERSATION, stream=stream)).request
    assert str(sent.url) == "https://api.example/v1/messages"
    assert (sent.headers["x-api-key"], sent.headers["anthropic-version"]) == ("sk-test-key", "2023-06-01")
    expected: dict[str, Any] = {
        "model": "m1",
        "max_tokens": 100,
        "system": "be brief",
        "messages": [
            {"role": "user", "content": [{"type": "text", "text": "weather in Oslo?"}]},
            {
                "role": "assistant",
                "content": [
                    {"type": "text", "text": "let me look"},
                    {"type": "tool_use", "id": "call_1", "name": "get_weather", "input": {"city": "Oslo"}},
                ],
            },
            {
                "role": "user",
                "content": [
                    {"type": "tool_result", "tool_use_id": "call_1", "content": '{"temp": 3}'},
                    {"type": "text", "text": "and tomorrow?"},
                ],
            },
        ],
        "tools": [
            {"name": "get_weather", "description": "Weather for a city", "input_schema": WEATHER.parameters}
        ],
        "tool_choice": {"type": "tool", "name": "get_weather"},
        "temperature": 0.2,
        "top_p": 0.9,
        "top_k": 40,
        "stop_sequences": ["END"],
    }
    if stream:
        expected["stream"] = True
    assert sent.json == expected  # no seed: the API has none


@pytest.mark.parametrize(
    ("choice", "sent"),
    [("auto", {"type": "auto"}), ("none", {"type": "none"}), ("required", {"type": "any"})],
)
async def test_a_tool_choice_mode_in_anthropics_words(choice: str, sent: dict[str, str]) -> None:
    request = Request((user("hi"),), tools=(WEATHER,), tool_choice=choice)
    ok = WireResponse.json(message([{"type": "text", "text": "ok"}]))
    assert (await run("anthropic", answering(ok), request, stream=False)).request.json["tool_choice"] == sent


async def test_max_tokens_is_always_sent_and_images_and_errors_are_blocks() -> None:
    request = Request(
        (
            Message(
                "user",
                (
                    Text(""),
                    Text("what is this?"),
                    Image("image/png", PIXEL),
                    Image("", url="https://x/y.png"),
                ),
            ),
            Message("assistant", (Text("hm"),)),
            Message("user", (ToolResult("c9", "no such city", is_error=True),)),
        )
    )
    ok = WireResponse.json(message([{"type": "text", "text": "a pixel"}]))
    sent = (await run("anthropic", answering(ok), request, stream=False, key=None)).request
    assert "x-api-key" not in sent.headers
    assert sent.json["max_tokens"] == DEFAULT_MAX_TOKENS
    assert sent.json["messages"] == [
        {
            "role": "user",
            "content": [  # the empty text block is left out: the API refuses one
                {"type": "text", "text": "what is this?"},
                {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": PIXEL}},
                {"type": "image", "source": {"type": "url", "url": "https://x/y.png"}},
            ],
        },
        {"role": "assistant", "content": [{"type": "text", "text": "hm"}]},
        {
            "role": "user",
            "content": [
                {"type": "tool_result", "tool_use_id": "c9", "content": "no such city", "is_error": True}
            ],
        },
    ]


async def test_a_whole_reply_reads_text_tool_calls_and_cached_input() -> None:
    body = message(
        [
            {"type": "text", "text": "let me "},
            {"type": "text", "text": "look"},
            {"type": "tool_use", "id": "toolu_1", "name": "get_weather", "input": {"city": "Oslo"}},
        ],
        "tool_use",
        input_tokens=3,
        cache_creation_input_tokens=5,
        cache_read_input_tokens=7,
        output_tokens=9,
    )
    ran = await run(
        "anthropic",
        answering(WireResponse.json(body, headers={"anthropic-ratelimit-requests-remaining": "49"})),
        ASK,
        stream=False,
    )
    assert ran.headers["anthropic-ratelimit-requests-remaining"] == "49"
    assert ran.chunks[1:] == [
        TextDelta("let me look"),
        ToolCallDelta(0, "toolu_1", "get_weather", '{"city": "Oslo"}'),
        UsageReport(Usage(15, 9, 7)),  # cached input was read, and billed (7 of it at the cached price)
        Finish("tool_calls"),
    ]


@pytest.mark.parametrize(
    ("reason", "finish"),
    [
        ("max_tokens", "length"),
        ("refusal", "content_filter"),
        ("stop_sequence", "stop"),
        ("pause_turn", "stop"),
    ],
)
async def test_stop_reasons_map(reason: str, finish: str) -> None:
    body = message([{"type": "text", "text": "x"}], reason)
    assert (
        await (await run("anthropic", answering(WireResponse.json(body)), ASK, stream=False)).reply()
    ).finish == finish


async def test_a_stream_gives_text_then_usage_from_start_and_delta_then_finish() -> None:
    ran = await run("anthropic", answering(streamed(*text_block(0, "the sky", " is blue"))), ASK, stream=True)
    assert ran.chunks[1:] == [
        TextDelta("the sky"),
        TextDelta(" is blue"),
        UsageReport(Usage(11, 5)),
        Finish("stop"),
    ]


async def test_a_streamed_tool_use_is_assembled_from_its_json_pieces() -> None:
    tool = [
        (
            "content_block_start",
            {
                "type": "content_block_start",
                "index": 1,
                "content_block": {"type": "tool_use", "id": "toolu_1", "name": "get_weather", "input": {}},
            },
        ),
        (
            "content_block_delta",
            {
                "type": "content_block_delta",
                "index": 1,
                "delta": {"type": "input_json_delta", "partial_json": ""},
            },
        ),
        (
            "content_block_delta",
            {
                "type": "content_block_delta",
                "index": 1,
                "delta": {"type": "input_json_delta", "partial_json": '{"city": '},
            },
        ),
        (
            "content_block_delta",
            {
                "type": "content_block_delta",
                "index": 1,
                "delta": {"type": "input_json_delta", "partial_json": '"Oslo"}'},
            },
        ),
        ("content_block_stop", {"type": "content_block_stop", "index": 1}),
    ]
    ran = await run(
        "anthropic", answering(streamed(*text_block(0, "looking"), *tool, stop="tool_use")), ASK, stream=True
    )
    assert ran.content == [
        TextDelta("looking"),
        ToolCallDelta(0, "toolu_1", "get_weather", ""),
        ToolCallDelta(0, "", "", '{"city": '),
        ToolCallDelta(0, "", "", '"Oslo"}'),
    ]
    reply = await ran.reply()
    assert [(c.id, c.name, c.arguments) for c in reply.tool_calls] == [
        ("toolu_1", "get_weather", '{"city": "Oslo"}')
    ]
    assert reply.finish == "tool_calls"


async def test_a_stream_without_message_stop_is_a_bad_reply() -> None:
    cut = WireResponse.sse(*text_block(0, "half"))
    error, _ = await failure("anthropic", answering(cut), ASK, stream=True)
    assert type(error) is ProviderBadReply and "end marker" in error.message and error.after_first_byte


async def test_a_stream_broken_mid_block_is_a_bad_reply_after_the_first_byte() -> None:
    events = [*text_block(0, "par")[:2], broken()]
    error, _ = await failure("anthropic", answering(WireResponse.sse(*events)), ASK, stream=True)
    assert type(error) is ProviderBadReply and error.after_first_byte is True


@pytest.mark.parametrize(
    ("kind", "status", "error_type"),
    [
        ("overloaded_error", 529, ProviderError),
        ("rate_limit_error", 429, ProviderRateLimited),
        ("authentication_error", 401, ProviderAuthError),
        ("api_error", 500, ProviderError),
    ],
)
async def test_an_error_event_in_a_stream_has_the_status_its_type_has_as_a_reply(
    kind: str, status: int, error_type: type[ProviderError]
) -> None:
    said = ("error", {"type": "error", "error": {"type": kind, "message": "the model is busy"}})
    error, got = await failure(
        "anthropic", answering(streamed(*text_block(0, "par")[:2], said)), ASK, stream=True
    )
    assert type(error) is error_type
    assert (error.status, error.message, error.after_first_byte) == (status, "the model is busy", True)
    assert got[1:] == [TextDelta("par")]


async def test_a_429_with_anthropics_rate_limit_headers() -> None:
    headers = {
        "retry-after": "12",
        "anthropic-ratelimit-requests-limit": "50",
        "anthropic-ratelimit-requests-remaining": "0",
        "anthropic-ratelimit-requests-reset": "2026-01-01T00:00:12Z",
    }
    said = {
        "type": "error",
        "error": {"type": "rate_limit_error", "message": "Number of requests has exceeded your rate limit"},
    }
    for stream in (False, True):
        error, _ = await failure(
            "anthropic", answering(WireResponse.json(said, 429, headers)), ASK, stream=stream
        )
        assert type(error) is ProviderRateLimited and (error.status, error.retry_after) == (429, 12)
        assert (
            error.message.startswith("Number of requests")
            and error.headers["anthropic-ratelimit-requests-remaining"] == "0"
        )


@pytest.mark.parametrize(
    ("status", "kind"), [(401, ProviderAuthError), (400, ProviderError), (529, ProviderError)]
)
async def test_an_error_status_is_its_type_with_anthropics_message(
    status: int, kind: type[ProviderError]
) -> None:
    said = {"type": "error", "error": {"type": "invalid_request_error", "message": "max_tokens: too large"}}
    error, _ = await failure("anthropic", answering(WireResponse.json(said, status)), ASK, stream=False)
    assert (type(error), error.status, error.message) == (kind, status, "max_tokens: too large")


async def test_an_error_body_in_a_200_is_an_error() -> None:
    said = {"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}
    error, _ = await failure("anthropic", answering(WireResponse.json(said)), ASK, stream=False)
    assert (type(error), error.status, error.message) == (ProviderError, 529, "Overloaded")


async def test_the_model_list() -> None:
    body = {
        "data": [{"id": "claude-x", "type": "model"}, {"id": "claude-y", "type": "model"}],
        "has_more": False,
    }
    served, sent = await listed("anthropic", answering(WireResponse.json(body)))
    assert served == ["claude-x", "claude-y"]
    assert (str(sent.url), sent.headers["x-api-key"]) == (
        "https://api.example/v1/models?limit=1000",
        "sk-test-key",
    )
