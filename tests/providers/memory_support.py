"""Running an adapter on the in-memory wire (`providers/memory.py`), for the
unit tests of each adapter: `run` sends one request through the real
adapter, transport and gates to a handler and returns every chunk and every
request the handler saw; `failure` does the same for a call that must fail.
`CONVERSATION` is one request that uses everything a request can carry
(system, history with a tool call and its result, tools, a forced tool,
every sampling field), which each adapter's test spells out in its API's
shape."""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import dataclass

import pytest

from benchwarmers.errors import ProviderError
from benchwarmers.providers.base import Target, gather
from benchwarmers.providers.kinds import adapter_for
from benchwarmers.providers.memory import Handler, MemoryClient, WireRequest, WireResponse
from benchwarmers.types import (
    ApiKind,
    Chunk,
    Message,
    Reply,
    Request,
    ResponseHeaders,
    Sampling,
    Text,
    TextDelta,
    Tool,
    ToolCall,
    ToolCallDelta,
    ToolResult,
    user,
)

BASES: dict[ApiKind, str] = {
    "openai": "https://api.example/v1",
    "anthropic": "https://api.example",
    "gemini": "https://api.example",
    "ollama": "http://ollama.example:11434",
}
WEATHER = Tool(
    "get_weather", "Weather for a city", {"type": "object", "properties": {"city": {"type": "string"}}}
)
PIXEL = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg=="
CONVERSATION = Request(
    (
        user("weather in Oslo?"),
        Message("assistant", (Text("let me look"), ToolCall("call_1", "get_weather", '{"city": "Oslo"}'))),
        Message("user", (ToolResult("call_1", '{"temp": 3}'), Text("and tomorrow?"))),
    ),
    system="be brief",
    tools=(WEATHER,),
    tool_choice="get_weather",
    sampling=Sampling(temperature=0.2, top_p=0.9, top_k=40, max_tokens=100, stop=("END",), seed=7),
)
# A deadline for a stuck call, never reached by one that works: not a measure of speed.
STUCK = 60.0


def target(api: ApiKind, served: str = "m1", key: str | None = "sk-test-key") -> Target:
    return Target("mem", api, BASES[api], served, key)


def answering(response: WireResponse) -> Handler:
    """A handler that gives every request the same response."""
    return lambda _: response


@dataclass
class Ran:
    chunks: list[Chunk]
    requests: list[WireRequest]

    @property
    def request(self) -> WireRequest:
        (only,) = self.requests
        return only

    @property
    def headers(self) -> dict[str, str]:
        first = self.chunks[0]
        assert isinstance(first, ResponseHeaders)
        return dict(first.headers)

    @property
    def content(self) -> list[Chunk]:
        return [c for c in self.chunks if isinstance(c, TextDelta | ToolCallDelta)]

    async def reply(self) -> Reply:
        return await gather(_replay(self.chunks))


async def run(
    api: ApiKind,
    handler: Handler,
    request: Request,
    *,
    stream: bool,
    key: str | None = "sk-test-key",
    served: str = "m1",
    timeout: float | None = STUCK,
) -> Ran:
    async with MemoryClient(handler) as outbound:
        chunks = adapter_for(api, outbound).execute(
            target(api, served, key), request, stream=stream, timeout=timeout
        )
        got = [chunk async for chunk in chunks]
        assert outbound.in_flight == 0
        return Ran(got, outbound.requests)


async def failure(
    api: ApiKind,
    handler: Handler,
    request: Request,
    *,
    stream: bool,
    key: str | None = "sk-test-key",
    timeout: float | None = STUCK,
) -> tuple[ProviderError, list[Chunk]]:
    """The error the call raised, and the chunks that came before it."""
    got: list[Chunk] = []
    async with MemoryClient(handler) as outbound:
        with pytest.raises(ProviderError) as caught:
            async for chunk in adapter_for(api, outbound).execute(
                target(api, key=key), request, stream=stream, timeout=timeout
            ):
                got.append(chunk)
        assert outbound.in_flight == 0
    return caught.value, got


async def listed(api: ApiKind, handler: Handler) -> tuple[list[str], WireRequest]:
    async with MemoryClient(handler) as outbound:
        served = await adapter_for(api, outbound).list_models(target(api))
        (request,) = outbound.requests
        return served, request


async def _replay(chunks: list[Chunk]) -> AsyncIterator[Chunk]:
    for chunk in chunks:
        yield chunk
