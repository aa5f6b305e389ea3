"""The Ollama adapter on the in-memory wire: the `/api/chat` body it posts,
the replies and NDJSON streams it reads (literal Ollama wire JSON, written
here), and each failure as our error. The fake-provider versions
(test_adapters.py, test_faults.py) check the same over loopback HTTP."""

from __future__ import annotations

from typing import Any

import pytest

from benchwarmers.errors import ProviderAuthError, ProviderBadReply, ProviderError, ProviderRateLimited
from benchwarmers.providers.base import synthetic_call_id
from benchwarmers.providers.memory import WireResponse, broken
from benchwarmers.types import (
    Finish,
    Image,
    Message,
    Request,
    Text,
    TextDelta,
    Tool,
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
CREATED = "2026-01-01T00:00:00Z"


def line(content: str = "", **fields: Any) -> dict[str, Any]:
    return {
        "model": "m1",
        "created_at": CREATED,
        "message": {"role": "assistant", "content": content},
        "done": False,
        **fields,
    }


def last(content: str = "", reason: str = "stop", **fields: Any) -> dict[str, Any]:
    return line(content, done=True, done_reason=reason, prompt_eval_count=11, eval_count=5, **fields)


@pytest.mark.parametrize("stream", [False, True], ids=["whole", "stream"])
async def test_the_body_in_ollamas_shape(stream: bool) -> None:
    reply = WireResponse.ndjson(last("ok")) if stream else WireResponse.json(last("ok"))
    sent = (await run("ollama", answering(reply), CONVERSATION, stream=stream)).request
    assert str(sent.url) == "http://ollama.example:11434/api/chat"
    assert sent.headers["authorization"] == "Bearer sk-test-key"
    assert sent.json == {
        "model": "m1",
        "messages": [
            {"role": "system", "content": "be brief"},
            {"role": "user", "content": "weather in Oslo?"},
            {
                "role": "assistant",
                "content": "let me look",
                "tool_calls": [{"function": {"name": "get_weather", "arguments": {"city": "Oslo"}}}],
            },
            {"role": "tool", "content": '{"temp": 3}', "tool_name": "get_weather"},
            {"role": "user", "content": "and tomorrow?"},
        ],
        "stream": stream,  # said either way: Ollama streams unless told not to
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
        "options": {
            "temperature": 0.2,
            "top_p": 0.9,
            "top_k": 40,
            "num_predict": 100,
            "seed": 7,
            "stop": ["END"],
        },
    }


async def test_tool_choice_none_leaves_the_tools_out_and_a_name_sends_only_that_tool() -> None:
    other = Tool("get_time", "The time")
    ok = answering(WireResponse.json(last("ok")))
    none = (
        await run(
            "ollama", ok, Request((user("hi"),), tools=(WEATHER, other), tool_choice="none"), stream=False
        )
    ).request
    assert "tools" not in none.json
    named = (
        await run(
            "ollama", ok, Request((user("hi"),), tools=(WEATHER, other), tool_choice="get_time"), stream=False
        )
    ).request
    assert [t["function"]["name"] for t in named.json["tools"]] == ["get_time"]
    auto = (
        await run(
            "ollama", ok, Request((user("hi"),), tools=(WEATHER, other), tool_choice="auto"), stream=False
        )
    ).request
    assert [t["function"]["name"] for t in auto.json["tools"]] == ["get_weather", "get_time"]


async def test_images_are_base64_on_the_message_and_an_error_result_says_so() -> None:
    request = Request(
        (
            Message("user", (Text("what is this?"), Image("image/png", PIXEL))),
            Message("assistant", (ToolCall("c9", "get_weather", "{}"),)),
            Message("user", (ToolResult("c9", "no such city", is_error=True),)),
        )
    )
    sent = (
        await run("ollama", answering(WireResponse.json(last("a pixel"))), request, stream=False, key=None)
    ).request
    assert "authorization" not in sent.headers  # a local Ollama needs no key
    assert sent.json["messages"] == [
        {"role": "user", "content": "what is this?", "images": [PIXEL]},
        {
            "role": "assistant",
            "content": "",
            "tool_calls": [{"function": {"name": "get_weather", "arguments": {}}}],
        },
        {"role": "tool", "content": "Error: no such city", "tool_name": "get_weather"},
    ]


async def test_a_remote_image_is_refused_before_anything_is_sent() -> None:
    remote = Request((Message("user", (Image("", url="https://x/y.png"),)),))
    error, _ = await failure("ollama", answering(WireResponse.json({})), remote, stream=True)
    assert "inline only" in error.message and error.status is None


async def test_a_whole_reply_reads_text_tool_calls_and_counts() -> None:
    calls = [
        {"function": {"name": "get_weather", "arguments": {"city": "Oslo"}}},
        {"id": "given", "function": {"name": "get_weather", "arguments": '{"city": "Rome"}'}},
    ]
    body = last("let me look", message={"role": "assistant", "content": "let me look", "tool_calls": calls})
    ran = await run("ollama", answering(WireResponse.json(body)), ASK, stream=False)
    oslo = '{"city": "Oslo"}'
    assert ran.chunks[1:] == [
        TextDelta("let me look"),
        ToolCallDelta(0, synthetic_call_id(0, "get_weather", oslo), "get_weather", oslo),
        ToolCallDelta(1, "given", "get_weather", '{"city": "Rome"}'),
        UsageReport(Usage(11, 5)),
        Finish("tool_calls"),
    ]


async def test_a_cut_reply_reads_as_length() -> None:
    reply = await (
        await run("ollama", answering(WireResponse.json(last("x", "length"))), ASK, stream=False)
    ).reply()
    assert reply.finish == "length"


async def test_a_stream_is_lines_up_to_the_done_one() -> None:
    lines = [line("the sky"), line(" is blue"), "", last()]  # a blank line between is nothing
    ran = await run("ollama", answering(WireResponse.ndjson(*lines)), ASK, stream=True)
    assert ran.headers["content-type"] == "application/x-ndjson"
    assert ran.chunks[1:] == [
        TextDelta("the sky"),
        TextDelta(" is blue"),
        UsageReport(Usage(11, 5)),
        Finish("stop"),
    ]


async def test_a_stream_without_its_done_line_is_a_bad_reply_and_a_broken_one_too() -> None:
    error, _ = await failure("ollama", answering(WireResponse.ndjson(line("half"))), ASK, stream=True)
    assert type(error) is ProviderBadReply and "end marker" in error.message and error.after_first_byte
    error, _ = await failure(
        "ollama", answering(WireResponse.ndjson(line("half"), broken())), ASK, stream=True
    )
    assert type(error) is ProviderBadReply and "broke off" in error.message and error.after_first_byte
    error, _ = await failure(
        "ollama", answering(WireResponse(200, {}, b'{"model": "m1", "mess\n')), ASK, stream=True
    )
    assert type(error) is ProviderBadReply and "not JSON" in error.message and not error.after_first_byte


async def test_an_error_line_in_a_stream_is_an_error_after_the_first_byte() -> None:
    stream = WireResponse.ndjson(line("par"), {"error": "an error was encountered while running the model"})
    error, got = await failure("ollama", answering(stream), ASK, stream=True)
    assert (type(error), error.status, error.after_first_byte) == (ProviderError, 500, True)
    assert error.message == "an error was encountered while running the model" and got[1:] == [
        TextDelta("par")
    ]


@pytest.mark.parametrize(
    ("status", "kind"),
    [(404, ProviderError), (500, ProviderError), (401, ProviderAuthError), (429, ProviderRateLimited)],
)
@pytest.mark.parametrize("stream", [False, True], ids=["whole", "stream"])
async def test_an_error_status_is_its_type_with_ollamas_message(
    status: int, kind: type[ProviderError], stream: bool
) -> None:
    said = WireResponse.json({"error": "model 'm1' not found"}, status, {"retry-after": "3"})
    error, _ = await failure("ollama", answering(said), ASK, stream=stream)
    assert (type(error), error.status, error.message, error.after_first_byte) == (
        kind,
        status,
        "model 'm1' not found",
        False,
    )
    assert error.retry_after == 3 and error.headers["retry-after"] == "3"


async def test_the_model_list() -> None:
    body = {"models": [{"name": "llama3:8b", "model": "llama3:8b"}, {"model": "qwen:0.5b"}]}
    served, sent = await listed("ollama", answering(WireResponse.json(body)))
    assert served == ["llama3:8b", "qwen:0.5b"]
    assert (sent.method, str(sent.url)) == ("GET", "http://ollama.example:11434/api/tags")
