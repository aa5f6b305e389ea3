"""What the format tests share (fixtures over it live in conftest.py).

- `events`, `reply`: a two-seat panel's events (and reply) as an engine
  yields them, built from the real value types (no engine, no server), for
  the pure translators.
- `gateway`: one live server per test module over a fake provider, with the
  collection `trio` of three fake models, each on an endpoint of a
  different API kind, so a client test exercises the whole path: its format
  in, the panel, three provider adapters out, its format back.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from benchwarmers.identity.keys import create_key
from benchwarmers.runtime import Runtime
from benchwarmers.store.collections import add_collection
from benchwarmers.store.endpoints import add_endpoint
from benchwarmers.store.models import add_model
from benchwarmers.testing import FakeModel, FakeProvider, FakeRequest
from benchwarmers.types import (
    LeftOff,
    PanelDone,
    PanelEvent,
    PanelReply,
    PanelStarted,
    Seat,
    SeatDone,
    Usage,
)

if TYPE_CHECKING:
    # The live server (the whole app) is imported where one starts: the formats' conftest
    # imports this file under `-m unit` too, whose tests start none.
    from benchwarmers.testing.live_server import LiveServer

SEATS = (
    Seat("c_first", "Seat 1", "alpha", "ok", 0.2, content="Alpha says four.", usage=Usage(10, 3)),
    Seat("c_second", "Seat 2", "beta", "error", 0.1, error="HTTP 500: upstream broke"),
)
LEFT_OFF = (LeftOff("gamma", "vision model, no image"),)
REPLY = PanelReply(collection="trio", shape="short", seats=SEATS, left_off=LEFT_OFF)


def _panel_events() -> list[PanelEvent]:
    started = PanelStarted(
        "trio",
        "short",
        seats=(("Seat 1", "alpha", "c_first"), ("Seat 2", "beta", "c_second")),
        left_off=LEFT_OFF,
    )
    # The second seat finishes first: streams deliver seats in finish order.
    return [started, SeatDone(SEATS[1]), SeatDone(SEATS[0]), PanelDone(REPLY)]


async def event_stream() -> AsyncIterator[PanelEvent]:
    for event in _panel_events():
        yield event


# ------------------------------------------------------------ live gateway

# alias -> the API kind of the endpoint it sits on.
MEMBERS = {"alpha": "openai", "beta": "anthropic", "gamma": "ollama"}


def echo(alias: str) -> Callable[[FakeRequest], str]:
    """An answer that shows what the seat was asked, so a test can check the
    prompt, the system prompt and the images reached every member."""

    def answer(request: FakeRequest) -> str:
        return f"{alias} heard {request.prompt!r} system={request.system!r} images={request.images}"

    return answer


@dataclass
class Gateway:
    server: LiveServer
    fake: FakeProvider
    # A gateway key limited to `trio`, for servers that require keys.
    trio_key: str

    @property
    def url(self) -> str:
        return self.server.url


async def _register(home: Path, fake: FakeProvider) -> str:
    async with Runtime.open(home) as runtime:
        for alias, api in MEMBERS.items():
            endpoint = f"fake-{api}"
            await add_endpoint(runtime.store, endpoint, fake.base_for(api), api, needs_key=False)
            fake.add(FakeModel(alias, answer=echo(alias)))
            await add_model(runtime.store, alias, endpoint, alias, vision=True, context_window=100_000)
        await add_collection(runtime.store, "trio", list(MEMBERS), purpose="three seats for tests")
        await add_collection(runtime.store, "other", ["alpha"])
        # A long answer: more than an HTTP client takes in headers (httpx: 100 KB).
        fake.add(FakeModel("verbose", answer="lorem ipsum " * 12_000))
        await add_model(runtime.store, "verbose", "fake-openai", "verbose", context_window=100_000)
        await add_collection(runtime.store, "verbose", ["verbose"])
        _info, secret = await create_key(runtime.store, "trio-only", collections=("trio",))
    return secret


def start_gateway(home: Path, *, acting_as: str = "127.0.0.1") -> Iterator[Gateway]:
    with FakeProvider() as fake:
        # Its own loop in its own thread: an async test's loop may be running.
        with ThreadPoolExecutor(1) as pool:
            secret = pool.submit(asyncio.run, _register(home, fake)).result()
        from benchwarmers.testing.live_server import live_server

        with live_server(home, acting_as=acting_as) as server:
            yield Gateway(server, fake, secret)


# A 1x1 PNG, as base64.
PNG_DATA = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg=="
