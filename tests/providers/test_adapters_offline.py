"""Each adapter on `httpx.MockTransport`, no server: the transport answers
with the same wire bodies the fake provider writes (`testing.wire`), so the
unit tier checks every API's translation both ways in milliseconds. The
loopback versions (test_adapters.py, test_faults.py) check the bytes on a
real connection."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Callable

import httpx
import pytest

from benchwarmers.errors import ProviderRateLimited
from benchwarmers.providers.base import Target, adapter_for, gather
from benchwarmers.testing.script import FakeRequest
from benchwarmers.testing.wire import FakeReply, error_body, read_request, reply_body, stream_frames
from benchwarmers.types import (
    API_KINDS,
    ApiKind,
    Chunk,
    Finish,
    Request,
    ResponseHeaders,
    TextDelta,
    Tool,
    Usage,
    user,
)

pytestmark = pytest.mark.unit

APIS = pytest.mark.parametrize("api", API_KINDS)
BOTH = pytest.mark.parametrize("stream", [False, True], ids=["whole", "stream"])
MEDIA = {"ollama": "application/x-ndjson"}
WEATHER = Tool(
    "get_weather", "Weather for a city", {"type": "object", "properties": {"city": {"type": "string"}}}
)


def served_and_stream(api: ApiKind, request: httpx.Request, body: dict[str, object]) -> tuple[str, bool]:
    """What the adapter asked for, read from its request as a provider would."""
    if api == "gemini":
        served, _, method = request.url.path.rsplit("/", 1)[-1].partition(":")
        return served, method == "streamGenerateContent"
    return str(body["model"]), bool(body.get("stream", api == "ollama"))


def transport(
    api: ApiKind, answer: Callable[[FakeRequest], FakeReply], asked: list[FakeRequest]
) -> httpx.MockTransport:
    def handle(request: httpx.Request) -> httpx.Response:
        body = json.loads(request.content)
        served, stream = served_and_stream(api, request, body)
        fake_request = read_request(api, served, stream, body, dict(request.headers))
        asked.append(fake_request)
        reply = answer(fake_request)
        if not stream:
            return httpx.Response(200, json=reply_body(api, served, reply))
        frames = stream_frames(api, served, reply)
        content = b"".join(frame.data for frame in frames)
        return httpx.Response(
            200, content=content, headers={"content-type": MEDIA.get(api, "text/event-stream")}
        )

    return httpx.MockTransport(handle)


async def replay(chunks: list[Chunk]) -> AsyncIterator[Chunk]:
    for chunk in chunks:
        yield chunk


def target(api: ApiKind) -> Target:
    base = "http://provider.invalid/v1" if api == "openai" else "http://provider.invalid"
    return Target("mock", api, base, "m1", "secret")


@APIS
@BOTH
async def test_text_reply_both_ways(api: ApiKind, stream: bool) -> None:
    asked: list[FakeRequest] = []
    answer = FakeReply("the sky is blue", input_tokens=7, output_tokens=4)
    async with httpx.AsyncClient(transport=transport(api, lambda _: answer, asked)) as http:
        request = Request((user("what colour is the sky"),), system="be brief")
        chunks = [c async for c in adapter_for(api, http).execute(target(api), request, stream=stream)]

    assert isinstance(chunks[0], ResponseHeaders) and chunks[0].status == 200
    assert isinstance(chunks[-1], Finish) and chunks[-1].reason == "stop"
    if stream:
        assert sum(isinstance(c, TextDelta) for c in chunks) == 4
    reply = await gather(replay(chunks))
    assert (reply.text, reply.usage) == ("the sky is blue", Usage(7, 4))
    (sent,) = asked
    assert (sent.stream, sent.system, sent.prompt) == (stream, "be brief", "what colour is the sky")


@APIS
@BOTH
async def test_a_tool_call_both_ways(api: ApiKind, stream: bool) -> None:
    asked: list[FakeRequest] = []
    answer = FakeReply("", [("call_1", "get_weather", '{"city": "Oslo"}')], "tool_calls", 3, 5)
    async with httpx.AsyncClient(transport=transport(api, lambda _: answer, asked)) as http:
        request = Request((user("weather in Oslo?"),), tools=(WEATHER,))
        chunks = [c async for c in adapter_for(api, http).execute(target(api), request, stream=stream)]
    reply = await gather(replay(chunks))
    assert [(call.name, json.loads(call.arguments)) for call in reply.tool_calls] == [
        ("get_weather", {"city": "Oslo"})
    ]
    assert reply.finish == "tool_calls"
    assert asked[0].tools == ["get_weather"]


@APIS
async def test_a_429_is_the_one_rate_limited_error(api: ApiKind) -> None:
    def handle(request: httpx.Request) -> httpx.Response:
        return httpx.Response(
            429, json=error_body(api, 429, "slow down", retry=7.0), headers={"retry-after": "7"}
        )

    async with httpx.AsyncClient(transport=httpx.MockTransport(handle)) as http:
        with pytest.raises(ProviderRateLimited) as caught:
            chunks = adapter_for(api, http).execute(target(api), Request((user("hi"),)), stream=False)
            _ = [c async for c in chunks]
    assert caught.value.status == 429 and caught.value.retry_after == pytest.approx(7.0)
