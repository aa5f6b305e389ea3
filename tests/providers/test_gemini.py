"""The Gemini adapter on the in-memory wire: the generateContent body and
URL it posts, the replies and SSE streams it reads (literal Gemini wire
JSON, written here), synthesised call ids, and each failure as our error.
The fake-provider versions (test_adapters.py, test_faults.py) check the
same over loopback HTTP."""

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


def response(*parts: dict[str, Any], finish: str | None = "STOP", **usage: int) -> dict[str, Any]:
    candidate: dict[str, Any] = {"content": {"role": "model", "parts": list(parts)}, "index": 0}
    if finish:
        candidate["finishReason"] = finish
    body: dict[str, Any] = {"candidates": [candidate], "modelVersion": "m1"}
    if usage:
        body["usageMetadata"] = usage
    return body


def gemini_error(code: int, status: str, message: str, *details: dict[str, Any]) -> dict[str, Any]:
    error: dict[str, Any] = {"code": code, "message": message, "status": status}
    if details:
        error["details"] = list(details)
    return {"error": error}


@pytest.mark.parametrize("stream", [False, True], ids=["whole", "stream"])
async def test_the_body_and_url_in_geminis_shape(stream: bool) -> None:
    reply = (
        WireResponse.sse(response({"text": "ok"})) if stream else WireResponse.json(response({"text": "ok"}))
    )
    sent = (await run("gemini", answering(reply), CONVERSATION, stream=stream)).request
    method = "streamGenerateContent?alt=sse" if stream else "generateContent"
    assert str(sent.url) == f"https://api.example/v1beta/models/m1:{method}"
    assert sent.headers["x-goog-api-key"] == "sk-test-key" and "authorization" not in sent.headers
    assert sent.json == {
        "contents": [
            {"role": "user", "parts": [{"text": "weather in Oslo?"}]},
            {
                "role": "model",
                "parts": [
                    {"text": "let me look"},
                    {"functionCall": {"name": "get_weather", "args": {"city": "Oslo"}}},
                ],
            },
            {
                "role": "user",
                "parts": [
                    # the tool's name found from the call it answers
                    {"functionResponse": {"name": "get_weather", "response": {"temp": 3}}},
                    {"text": "and tomorrow?"},
                ],
            },
        ],
        "systemInstruction": {"parts": [{"text": "be brief"}]},
        "tools": [
            {
                "functionDeclarations": [
                    {
                        "name": "get_weather",
                        "description": "Weather for a city",
                        "parameters": WEATHER.parameters,
                    }
                ]
            }
        ],
        "toolConfig": {"functionCallingConfig": {"mode": "ANY", "allowedFunctionNames": ["get_weather"]}},
        "generationConfig": {
            "temperature": 0.2,
            "topP": 0.9,
            "topK": 40,
            "maxOutputTokens": 100,
            "seed": 7,
            "stopSequences": ["END"],
        },
    }


@pytest.mark.parametrize(("choice", "mode"), [("auto", "AUTO"), ("none", "NONE"), ("required", "ANY")])
async def test_a_tool_choice_mode_in_geminis_words(choice: str, mode: str) -> None:
    request = Request((user("hi"),), tools=(WEATHER,), tool_choice=choice)
    sent = (
        await run("gemini", answering(WireResponse.json(response({"text": "ok"}))), request, stream=False)
    ).request
    assert sent.json["toolConfig"] == {"functionCallingConfig": {"mode": mode}}


async def test_a_served_id_with_models_prefix_images_and_tool_results_that_are_no_object() -> None:
    request = Request(
        (
            Message("user", (Text("what is this?"), Image("image/png", PIXEL))),
            Message("assistant", (ToolCall("c1", "get_weather", "not json"),)),
            Message(
                "user",
                (
                    ToolResult("c1", "sunny"),
                    ToolResult("c2", "no such city", name="get_weather", is_error=True),
                ),
            ),
        )
    )
    ok = WireResponse.json(response({"text": "ok"}))
    sent = (await run("gemini", answering(ok), request, stream=False, served="models/m1", key=None)).request
    assert sent.path == "/v1beta/models/m1:generateContent" and "x-goog-api-key" not in sent.headers
    assert sent.json["contents"] == [
        {
            "role": "user",
            "parts": [{"text": "what is this?"}, {"inlineData": {"mimeType": "image/png", "data": PIXEL}}],
        },
        {"role": "model", "parts": [{"functionCall": {"name": "get_weather", "args": {"_raw": "not json"}}}]},
        {
            "role": "user",
            "parts": [
                {"functionResponse": {"name": "get_weather", "response": {"result": "sunny"}}},
                {"functionResponse": {"name": "get_weather", "response": {"error": "no such city"}}},
            ],
        },
    ]


async def test_what_gemini_cannot_carry_is_refused_before_anything_is_sent() -> None:
    remote = Request((Message("user", (Image("", url="https://x/y.png"),)),))
    error, _ = await failure("gemini", answering(WireResponse.json({})), remote, stream=False)
    assert "inline only" in error.message and error.status is None
    orphan = Request((Message("user", (ToolResult("c404", "sunny"),)),))
    error, _ = await failure("gemini", answering(WireResponse.json({})), orphan, stream=False)
    assert "needs the tool's name" in error.message


async def test_a_whole_reply_skips_thoughts_synthesises_call_ids_and_counts_thinking() -> None:
    body = response(
        {"text": "thinking...", "thought": True},
        {"text": "let me look"},
        {"functionCall": {"name": "get_weather", "args": {"city": "Oslo"}}},
        {"functionCall": {"id": "given", "name": "get_weather", "args": {}}},
        promptTokenCount=11,
        candidatesTokenCount=5,
        thoughtsTokenCount=20,
    )
    ran = await run("gemini", answering(WireResponse.json(body)), ASK, stream=False)
    arguments = '{"city": "Oslo"}'
    assert ran.chunks[1:] == [
        TextDelta("let me look"),
        ToolCallDelta(0, synthetic_call_id(0, "get_weather", arguments), "get_weather", arguments),
        ToolCallDelta(1, "given", "get_weather", "{}"),
        UsageReport(Usage(11, 25)),
        Finish("tool_calls"),
    ]


@pytest.mark.parametrize(
    ("reason", "finish"),
    [
        ("MAX_TOKENS", "length"),
        ("SAFETY", "content_filter"),
        ("MALFORMED_FUNCTION_CALL", "error"),
        ("STOP", "stop"),
    ],
)
async def test_finish_reasons_map(reason: str, finish: str) -> None:
    body = response({"text": "x"}, finish=reason)
    assert (
        await (await run("gemini", answering(WireResponse.json(body)), ASK, stream=False)).reply()
    ).finish == finish


async def test_a_blocked_prompt_is_a_content_filter_finish() -> None:
    blocked = {"promptFeedback": {"blockReason": "SAFETY"}, "usageMetadata": {"promptTokenCount": 4}}
    for stream, reply in ((False, WireResponse.json(blocked)), (True, WireResponse.sse(blocked))):
        ran = await run("gemini", answering(reply), ASK, stream=stream)
        assert ran.chunks[1:] == [UsageReport(Usage(4, 0)), Finish("content_filter")]


async def test_a_stream_reads_past_the_finish_for_the_usage() -> None:
    events = [
        response({"text": "the sky"}, finish=None),
        response({"text": " is blue"}, finish="STOP"),
        {"usageMetadata": {"promptTokenCount": 11, "candidatesTokenCount": 5}},
    ]
    ran = await run("gemini", answering(WireResponse.sse(*events)), ASK, stream=True)
    assert ran.chunks[1:] == [
        TextDelta("the sky"),
        TextDelta(" is blue"),
        UsageReport(Usage(11, 5)),
        Finish("stop"),
    ]


async def test_a_streamed_function_call_gets_the_same_id_as_a_whole_one() -> None:
    call = {"functionCall": {"name": "get_weather", "args": {"city": "Oslo"}}}
    whole = await (
        await run("gemini", answering(WireResponse.json(response(call))), ASK, stream=False)
    ).reply()
    streamed = await (
        await run("gemini", answering(WireResponse.sse(response(call))), ASK, stream=True)
    ).reply()
    assert whole.tool_calls == streamed.tool_calls and whole.tool_calls[0].id.startswith("call_")
    assert streamed.finish == "tool_calls"


async def test_a_stream_without_a_finish_is_a_bad_reply_and_a_broken_one_too() -> None:
    error, _ = await failure(
        "gemini", answering(WireResponse.sse(response({"text": "half"}, finish=None))), ASK, stream=True
    )
    assert type(error) is ProviderBadReply and "end marker" in error.message and error.after_first_byte
    cut = WireResponse.sse(response({"text": "half"}, finish=None), broken())
    error, _ = await failure("gemini", answering(cut), ASK, stream=True)
    assert type(error) is ProviderBadReply and "broke off" in error.message and error.after_first_byte


async def test_a_429_with_retry_info_is_rate_limited_for_that_long() -> None:
    said = gemini_error(
        429,
        "RESOURCE_EXHAUSTED",
        "You exceeded your current quota. Please retry in 1.5s.",
        {"@type": "type.googleapis.com/google.rpc.QuotaFailure", "violations": []},
        {"@type": "type.googleapis.com/google.rpc.RetryInfo", "retryDelay": "7s"},
    )
    for stream in (False, True):
        error, got = await failure("gemini", answering(WireResponse.json([said], 429)), ASK, stream=stream)
        assert type(error) is ProviderRateLimited and got == []
        assert (error.status, error.retry_after) == (429, 7)  # RetryInfo before the words
        assert error.message.startswith("You exceeded your current quota")


async def test_resource_exhausted_on_another_status_is_rate_limited() -> None:
    said = gemini_error(400, "RESOURCE_EXHAUSTED", "quota")
    error, _ = await failure("gemini", answering(WireResponse.json(said, 400)), ASK, stream=False)
    assert type(error) is ProviderRateLimited and error.status == 400


@pytest.mark.parametrize(
    ("code", "status", "kind"),
    [
        (403, "PERMISSION_DENIED", ProviderAuthError),
        (400, "INVALID_ARGUMENT", ProviderError),
        (503, "UNAVAILABLE", ProviderError),
    ],
)
async def test_an_error_status_is_its_type_with_geminis_message(
    code: int, status: str, kind: type[ProviderError]
) -> None:
    error, _ = await failure(
        "gemini",
        answering(WireResponse.json(gemini_error(code, status, "no can do"), code)),
        ASK,
        stream=True,
    )
    assert (type(error), error.status, error.message, error.after_first_byte) == (
        kind,
        code,
        "no can do",
        False,
    )


async def test_an_error_in_a_200_reply_or_stream_keeps_its_code() -> None:
    said = gemini_error(500, "INTERNAL", "An internal error has occurred")
    error, _ = await failure("gemini", answering(WireResponse.json(said)), ASK, stream=False)
    assert (type(error), error.status) == (ProviderError, 500)
    error, _ = await failure(
        "gemini", answering(WireResponse.sse(response({"text": "par"}, finish=None), said)), ASK, stream=True
    )
    assert (error.status, error.message, error.after_first_byte) == (
        500,
        "An internal error has occurred",
        True,
    )


async def test_the_model_list() -> None:
    body = {"models": [{"name": "models/gemini-x"}, {"name": "models/gemini-y"}], "nextPageToken": ""}
    served, sent = await listed("gemini", answering(WireResponse.json(body)))
    assert served == ["gemini-x", "gemini-y"]
    assert (str(sent.url), sent.headers["x-goog-api-key"]) == (
        "https://api.example/v1beta/models?pageSize=1000",
        "sk-test-key",
    )
    assert (await listed("gemini", answering(WireResponse.json({}))))[0] == []


async def test_cached_content_tokens_are_read_as_part_of_the_prompt() -> None:
    body = response({"text": "ok"}, promptTokenCount=11, candidatesTokenCount=5, cachedContentTokenCount=6)
    ran = await run("gemini", answering(WireResponse.json(body)), ASK, stream=False)
    assert UsageReport(Usage(11, 5, 6)) in ran.chunks
