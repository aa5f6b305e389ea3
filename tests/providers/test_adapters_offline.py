"""Each adapter on a bare in-process handler (aiohttp's `RawTestServer`, no
app, no fake provider): it answers with the same wire bodies the fake
provider writes (`testing.wire`), so every API's translation is checked
both ways against the fake's independent reading of the wire, over a real
socket (loopback, so the integration tier). The unit tier checks each
adapter on the in-memory wire against literal wire JSON
(test_openai.py and its siblings); the fake-provider versions
(test_adapters.py, test_faults.py) check the whole provider behaviour."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager

import pytest
from aiohttp import web
from aiohttp.test_utils import RawTestServer

from benchwarmers.errors import ProviderRateLimited
from benchwarmers.providers.base import Target, gather
from benchwarmers.providers.kinds import adapter_for
from benchwarmers.providers.outbound import OutboundClient
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

pytestmark = pytest.mark.integration

APIS = pytest.mark.parametrize("api", API_KINDS)
BOTH = pytest.mark.parametrize("stream", [False, True], ids=["whole", "stream"])
MEDIA = {"ollama": "application/x-ndjson"}
WEATHER = Tool(
    "get_weather", "Weather for a city", {"type": "object", "properties": {"city": {"type": "string"}}}
)


def served_and_stream(api: ApiKind, request: web.BaseRequest, body: dict[str, object]) -> tuple[str, bool]:
    """What the adapter asked for, read from its request as a provider would."""
    if api == "gemini":
        served, _, method = request.path.rsplit("/", 1)[-1].partition(":")
        return served, method == "streamGenerateContent"
    return str(body["model"]), bool(body.get("stream", api == "ollama"))


Handler = Callable[[web.BaseRequest], Awaitable[web.Response]]


def provider(api: ApiKind, answer: Callable[[FakeRequest], FakeReply], asked: list[FakeRequest]) -> Handler:
    async def handle(request: web.BaseRequest) -> web.Response:
        body = json.loads(await request.read())
        served, stream = served_and_stream(api, request, body)
        fake_request = read_request(api, served, stream, body, dict(request.headers))
        asked.append(fake_request)
        reply = answer(fake_request)
        if not stream:
            return web.json_response(reply_body(api, served, reply))
        frames = stream_frames(api, served, reply)
        content = b"".join(frame.data for frame in frames)
        return web.Response(body=content, headers={"content-type": MEDIA.get(api, "text/event-stream")})

    return handle


@asynccontextmanager
async def serving(api: ApiKind, handle: Handler) -> AsyncIterator[tuple[OutboundClient, Target]]:
    """The outbound client and a target on a bare handler on loopback."""
    async with RawTestServer(handle, host="127.0.0.1") as server, OutboundClient() as outbound:
        base = str(server.make_url("/v1" if api == "openai" else "")).rstrip("/")
        yield outbound, Target("mock", api, base, "m1", "secret")


async def replay(chunks: list[Chunk]) -> AsyncIterator[Chunk]:
    for chunk in chunks:
        yield chunk


@APIS
@BOTH
async def test_text_reply_both_ways(api: ApiKind, stream: bool) -> None:
    asked: list[FakeRequest] = []
    answer = FakeReply("the sky is blue", input_tokens=7, output_tokens=4)
    async with serving(api, provider(api, lambda _: answer, asked)) as (outbound, target):
        request = Request((user("what colour is the sky"),), system="be brief")
        chunks = [c async for c in adapter_for(api, outbound).execute(target, request, stream=stream)]

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
    async with serving(api, provider(api, lambda _: answer, asked)) as (outbound, target):
        request = Request((user("weather in Oslo?"),), tools=(WEATHER,))
        chunks = [c async for c in adapter_for(api, outbound).execute(target, request, stream=stream)]
    reply = await gather(replay(chunks))
    assert [(call.name, json.loads(call.arguments)) for call in reply.tool_calls] == [
        ("get_weather", {"city": "Oslo"})
    ]
    assert reply.finish == "tool_calls"
    assert asked[0].tools == ["get_weather"]


@APIS
async def test_a_429_is_the_one_rate_limited_error(api: ApiKind) -> None:
    async def handle(request: web.BaseRequest) -> web.Response:
        return web.json_response(
            error_body(api, 429, "slow down", retry=7.0), status=429, headers={"retry-after": "7"}
        )

    async with serving(api, handle) as (outbound, target):
        with pytest.raises(ProviderRateLimited) as caught:
            chunks = adapter_for(api, outbound).execute(target, Request((user("hi"),)), stream=False)
            _ = [c async for c in chunks]
    assert caught.value.status == 429 and caught.value.retry_after == pytest.approx(7.0)
