"""Each adapter, streaming and not, translating a request into its API's
wire shape and the reply back, checked against what the fake provider
received and sent over HTTP."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator

import pytest

from benchwarmers.errors import ProviderError
from benchwarmers.providers.base import gather
from benchwarmers.providers.kinds import adapter_for
from benchwarmers.testing import FakeModel, FakeProvider, FakeToolCall
from benchwarmers.types import (
    API_KINDS,
    Chunk,
    Finish,
    Image,
    Message,
    Request,
    ResponseHeaders,
    Sampling,
    Text,
    TextDelta,
    Tool,
    ToolCall,
    ToolResult,
    Usage,
    UsageReport,
    assistant,
    user,
)

from .conftest import Call, target

BOTH = pytest.mark.parametrize("stream", [False, True], ids=["whole", "stream"])
APIS = pytest.mark.parametrize("api", API_KINDS)
PIXEL = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg=="
WEATHER = Tool(
    "get_weather", "Weather for a city", {"type": "object", "properties": {"city": {"type": "string"}}}
)


async def replay(chunks: list[Chunk]) -> AsyncIterator[Chunk]:
    for chunk in chunks:
        yield chunk


@APIS
@BOTH
async def test_text_reply_with_headers_usage_and_finish(
    call: Call, fake_provider: FakeProvider, api: str, stream: bool
) -> None:
    fake_provider.add(
        FakeModel("m1", answer="the sky is blue", headers={"X-RateLimit-Remaining-Requests": "41"})
    )
    chunks = await call(api, Request((user("what colour is the sky"),), system="be brief"), stream=stream)

    assert isinstance(chunks[0], ResponseHeaders) and chunks[0].status == 200
    assert ("x-ratelimit-remaining-requests", "41") in chunks[0].headers
    assert isinstance(chunks[-1], Finish) and chunks[-1].reason == "stop"
    reply = await gather(replay(chunks))
    assert reply.text == "the sky is blue"
    # The fake counts words: 2 of system, 5 of prompt in; 4 out.
    assert reply.usage == Usage(7, 4)
    assert [c for c in chunks if isinstance(c, UsageReport)] == [UsageReport(Usage(7, 4))]
    if stream:
        assert sum(isinstance(c, TextDelta) for c in chunks) == 4
    asked = fake_provider.last("m1")
    assert (asked.api, asked.stream, asked.system, asked.prompt) == (
        api,
        stream,
        "be brief",
        "what colour is the sky",
    )
    assert fake_provider.calls_by_api[(api, "m1")] == 1
    assert fake_provider.reported["m1"] == [7, 4]


@APIS
@BOTH
async def test_history_and_sampling_in_each_apis_shape(
    call: Call, fake_provider: FakeProvider, api: str, stream: bool
) -> None:
    fake_provider.add(FakeModel("m1", answer="four"))
    sampling = Sampling(temperature=0.2, top_p=0.9, top_k=40, max_tokens=50, stop=("END",), seed=7)
    history = (user("two plus two"), assistant("four"), user("and again"))
    await call(api, Request(history, sampling=sampling), stream=stream)

    asked = fake_provider.last("m1")
    assert [(m.role, m.text) for m in asked.messages] == [
        ("user", "two plus two"),
        ("assistant", "four"),
        ("user", "and again"),
    ]
    body = asked.body
    if api == "openai":
        assert {k: body[k] for k in ("temperature", "top_p", "top_k", "max_tokens", "stop", "seed")} == {
            "temperature": 0.2,
            "top_p": 0.9,
            "top_k": 40,
            "max_tokens": 50,
            "stop": ["END"],
            "seed": 7,
        }
        assert body.get("stream_options") == ({"include_usage": True} if stream else None)
    elif api == "anthropic":
        assert (body["temperature"], body["top_p"], body["top_k"], body["max_tokens"]) == (0.2, 0.9, 40, 50)
        assert body["stop_sequences"] == ["END"] and "seed" not in body
        assert asked.headers["anthropic-version"] == "2023-06-01"
    elif api == "gemini":
        assert body["generationConfig"] == {
            "temperature": 0.2,
            "topP": 0.9,
            "topK": 40,
            "maxOutputTokens": 50,
            "stopSequences": ["END"],
            "seed": 7,
        }
        assert [c["role"] for c in body["contents"]] == ["user", "model", "user"]
    else:
        assert body["options"] == {
            "temperature": 0.2,
            "top_p": 0.9,
            "top_k": 40,
            "num_predict": 50,
            "stop": ["END"],
            "seed": 7,
        }
        assert body["stream"] is stream


async def test_anthropic_gets_a_max_tokens_when_the_request_sets_none(
    call: Call, fake_provider: FakeProvider
) -> None:
    fake_provider.add(FakeModel("m1"))
    await call("anthropic", Request((user("hi"),)), stream=False)
    assert fake_provider.last("m1").body["max_tokens"] == 4096


@APIS
@BOTH
async def test_max_tokens_cut_reads_as_length(
    call: Call, fake_provider: FakeProvider, api: str, stream: bool
) -> None:
    fake_provider.add(FakeModel("m1", answer="one two three four five"))
    chunks = await call(api, Request((user("count"),), sampling=Sampling(max_tokens=2)), stream=stream)
    reply = await gather(replay(chunks))
    assert (reply.text, reply.finish, reply.usage.output_tokens) == ("one two", "length", 2)


@APIS
@BOTH
async def test_inline_image_is_sent(call: Call, fake_provider: FakeProvider, api: str, stream: bool) -> None:
    fake_provider.add(FakeModel("m1", answer="a pixel"))
    message = Message("user", (Text("what is this"), Image("image/png", data=PIXEL)))
    await call(api, Request((message,)), stream=stream)

    asked = fake_provider.last("m1")
    assert asked.images == 1 and asked.prompt == "what is this"
    sent = json.dumps(asked.body)
    assert PIXEL in sent
    if api == "openai":
        assert f"data:image/png;base64,{PIXEL}" in sent


@APIS
async def test_remote_image_url_passes_where_the_api_takes_one(
    call: Call, fake_provider: FakeProvider, api: str
) -> None:
    fake_provider.add(FakeModel("m1"))
    url = "https://example.com/cat.png"
    request = Request((Message("user", (Text("see"), Image("image/png", url=url))),))
    if api in ("gemini", "ollama"):
        with pytest.raises(ProviderError, match="remote image URL"):
            await call(api, request, stream=False)
        assert fake_provider.calls["m1"] == 0
        return
    await call(api, request, stream=False)
    assert url in json.dumps(fake_provider.last("m1").body)


@APIS
@BOTH
async def test_tool_call_and_result_round_trip(
    call: Call, fake_provider: FakeProvider, api: str, stream: bool
) -> None:
    fake_provider.add(
        FakeModel(
            "m1",
            answer=lambda asked: f"it is {json.loads(asked.messages[-1].tool_results[0]['content'])['temp']}",
            tool_calls=[FakeToolCall("get_weather", {"city": "Oslo"})],
        )
    )
    first = Request((user("weather in Oslo?"),), tools=(WEATHER,), tool_choice="auto")
    reply = await gather(replay(await call(api, first, stream=stream)))

    assert reply.finish == "tool_calls" and reply.text == ""
    [made] = reply.tool_calls
    assert (made.name, json.loads(made.arguments)) == ("get_weather", {"city": "Oslo"})
    assert made.id
    assert fake_provider.last("m1").tools == ["get_weather"]

    result = ToolResult(made.id, json.dumps({"temp": "5C"}))
    second = Request(
        (user("weather in Oslo?"), Message("assistant", (made,)), Message("user", (result,))),
        tools=(WEATHER,),
    )
    answer = await gather(replay(await call(api, second, stream=stream)))
    assert (answer.text, answer.finish) == ("it is 5C", "stop")

    asked = fake_provider.last("m1")
    [sent_call] = asked.messages[1].tool_calls
    assert (sent_call["name"], json.loads(sent_call["arguments"])) == ("get_weather", {"city": "Oslo"})
    [sent_result] = asked.messages[-1].tool_results
    if api in ("openai", "anthropic"):
        assert sent_call["id"] == made.id and sent_result["id"] == made.id
    else:
        # Gemini and Ollama match results by the tool's name, found from the call's id.
        assert sent_result["name"] == "get_weather"


@pytest.mark.parametrize("api", ["gemini", "ollama"])
async def test_synthesised_tool_call_ids_are_stable(
    call: Call, fake_provider: FakeProvider, api: str
) -> None:
    fake_provider.add(FakeModel("m1", tool_calls=[FakeToolCall("a", {"x": 1}), FakeToolCall("b")]))
    request = Request((user("go"),), tools=(Tool("a"), Tool("b")))
    whole = await gather(replay(await call(api, request, stream=False)))
    streamed = await gather(replay(await call(api, request, stream=True)))
    assert [c.id for c in whole.tool_calls] == [c.id for c in streamed.tool_calls]
    assert len({c.id for c in whole.tool_calls}) == 2


@APIS
@pytest.mark.parametrize("choice", ["auto", "none", "required", "get_weather"])
async def test_tool_choice_in_each_apis_shape(
    call: Call, fake_provider: FakeProvider, api: str, choice: str
) -> None:
    fake_provider.add(FakeModel("m1"))
    other = Tool("other")
    await call(api, Request((user("hi"),), tools=(WEATHER, other), tool_choice=choice), stream=False)
    body = fake_provider.last("m1").body
    expected = {
        "openai": {
            "auto": "auto",
            "none": "none",
            "required": "required",
            "get_weather": {"type": "function", "function": {"name": "get_weather"}},
        },
        "anthropic": {
            "auto": {"type": "auto"},
            "none": {"type": "none"},
            "required": {"type": "any"},
            "get_weather": {"type": "tool", "name": "get_weather"},
        },
        "gemini": {
            "auto": {"functionCallingConfig": {"mode": "AUTO"}},
            "none": {"functionCallingConfig": {"mode": "NONE"}},
            "required": {"functionCallingConfig": {"mode": "ANY"}},
            "get_weather": {
                "functionCallingConfig": {"mode": "ANY", "allowedFunctionNames": ["get_weather"]}
            },
        },
        "ollama": {"auto": 2, "none": 0, "required": 2, "get_weather": 1},
    }[api][choice]
    if api == "openai":
        assert body.get("tool_choice") == expected
        assert len(body["tools"]) == 2
    elif api == "anthropic":
        assert body["tool_choice"] == expected
    elif api == "gemini":
        assert body["toolConfig"] == expected
    else:
        assert len(body.get("tools", [])) == expected


@APIS
async def test_list_models_follows_the_fakes_list(outbound, fake_provider: FakeProvider, api: str) -> None:
    fake_provider.add(FakeModel("m1"))
    fake_provider.add(FakeModel("m2"))
    adapter = adapter_for(api, outbound)
    assert await adapter.list_models(target(fake_provider, api)) == ["m1", "m2"]
    fake_provider.hide("m2", api)  # type: ignore[arg-type]
    assert await adapter.list_models(target(fake_provider, api)) == ["m1"]


@APIS
async def test_key_goes_in_each_apis_header(call: Call, fake_provider: FakeProvider, api: str) -> None:
    fake_provider.add(FakeModel("m1", answer="in"))
    fake_provider.key = "sk-right"
    reply = await gather(replay(await call(api, Request((user("hi"),)), stream=False, key="sk-right")))
    assert reply.text == "in"


async def test_target_repr_never_shows_the_key(fake_provider: FakeProvider) -> None:
    shown = repr(target(fake_provider, "openai", key="sk-secret-123")) + str(
        target(fake_provider, "openai", key="sk-secret-123")
    )
    assert "sk-secret-123" not in shown and "m1" in shown


async def test_gather_assembles_tool_calls_from_pieces() -> None:
    from benchwarmers.types import ToolCallDelta

    chunks: list[Chunk] = [
        ToolCallDelta(1, "id-b", "b", '{"y"'),
        ToolCallDelta(0, "id-a", "a", ""),
        ToolCallDelta(1, arguments=": 2}"),
        ToolCallDelta(0, arguments='{"x": 1}'),
        TextDelta("hm"),
        UsageReport(Usage(3, 4)),
        Finish("tool_calls"),
    ]
    reply = await gather(replay(chunks))
    assert reply.tool_calls == (ToolCall("id-a", "a", '{"x": 1}'), ToolCall("id-b", "b", '{"y": 2}'))
    assert (reply.text, reply.usage, reply.finish) == ("hm", Usage(3, 4), "tool_calls")


@APIS
async def test_a_stream_sent_where_json_was_asked_for_reads_as_the_json_reply_would(
    call: Call, fake_provider: FakeProvider, api: str
) -> None:
    """Some compatible servers and proxies answer `stream: false` with
    `text/event-stream` anyway: its events make the same reply (text, finish,
    usage) a JSON answer gives, not a bad reply."""
    fake_provider.add(FakeModel("m1", answer="the sky is blue", max_output=3))
    fake_provider.add(FakeModel("m2", answer="the sky is blue", max_output=3, stream_always=True))
    asked = Request((user("what colour is the sky"),), system="be brief")

    as_json = await call(api, asked, stream=False)
    as_events = await call(api, asked, stream=False, served="m2")

    assert not fake_provider.last("m2").stream  # not asked to stream: it streamed all the same
    assert isinstance(as_events[0], ResponseHeaders) and as_events[0].status == 200
    whole, streamed = await gather(replay(as_json)), await gather(replay(as_events))
    assert (streamed.text, streamed.finish, streamed.usage) == ("the sky is", "length", Usage(7, 3))
    assert (streamed.text, streamed.finish, streamed.usage) == (whole.text, whole.finish, whole.usage)


@APIS
async def test_tool_calls_streamed_where_json_was_asked_for_are_read(
    call: Call, fake_provider: FakeProvider, api: str
) -> None:
    fake_provider.add(
        FakeModel("m1", tool_calls=[FakeToolCall("get_weather", {"city": "Oslo"})], stream_always=True)
    )
    reply = await gather(
        replay(await call(api, Request((user("weather?"),), tools=(WEATHER,)), stream=False))
    )
    assert [(c.name, json.loads(c.arguments)) for c in reply.tool_calls] == [
        ("get_weather", {"city": "Oslo"})
    ]
    assert reply.finish == "tool_calls"
