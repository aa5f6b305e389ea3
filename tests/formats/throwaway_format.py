"""A throwaway sixth inbound format, Cohere-like (`POST /v2/chat`), for the
tests that show a format is one registration: nothing else in the code or
the tests names it, yet the server mounts its route, the guard asks its
path for a key (and reads the key from its own header), its errors come
back in its own shape and the format-parametrised tests run on it.

Loaded as a pytest plugin (`-p tests.formats.throwaway_format`), it
registers the format for the whole run, before any test module is
collected; `registered(COHERE)` does it for one block.

Its wire shape, much simplified from Cohere's v2 chat: a body of `model`,
`messages` (`role`, `content` text) and `stream`; a reply
`{"id", "message": {"role", "content": [{"type": "text", "text"}]},
"bench"}`; a stream of SSE `content-delta` events and a `message-end`
carrying `bench`; an error `{"message": ...}`; keys in `x-v2-key`.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Mapping
from typing import Any

import pytest

from benchwarmers import jsontext
from benchwarmers.errors import ProviderError
from benchwarmers.formats import registry
from benchwarmers.formats.base import (
    optional_bool,
    parse_model_name,
    require_list,
    require_object,
    require_str,
)
from benchwarmers.formats.bench_json import panel_json
from benchwarmers.formats.panel_text import StreamText, reply_text
from benchwarmers.types import (
    Ask,
    Chunk,
    Message,
    PanelDone,
    PanelEvent,
    PanelReply,
    Reply,
    Request,
    Text,
    TextDelta,
)

NAME = "cohere"
MEDIA_TYPE_STREAM = "text/event-stream"
KEY_HEADER = "x-v2-key"


def parse_ask(body: object, *, model: str | None = None) -> Ask:
    obj = require_object(body)
    collection, mode = parse_model_name(obj.get("model") if model is None else model)
    messages = []
    for i, raw in enumerate(require_list(obj.get("messages"), "messages")):
        message = require_object(raw, f"messages[{i}]")
        role = require_str(message.get("role"), f"messages[{i}].role")
        text = require_str(message.get("content"), f"messages[{i}].content")
        messages.append(Message("assistant" if role == "assistant" else "user", (Text(text),)))
    return Ask(collection, mode, Request(tuple(messages)), stream=optional_bool(obj, "stream"))


def _message(text: str) -> dict[str, Any]:
    return {"role": "assistant", "content": [{"type": "text", "text": text}]}


def render_reply(reply: PanelReply, ask: Ask) -> dict[str, Any]:
    return {"id": "v2-reply", "message": _message(reply_text(reply)), "bench": panel_json(reply)}


def _event(kind: str, **fields: Any) -> bytes:
    return b"data: " + jsontext.dumps({"type": kind, **fields}) + b"\n\n"


async def render_stream(events: AsyncIterator[PanelEvent], ask: Ask) -> AsyncIterator[bytes]:
    text = StreamText(merged=ask.mode == "merged")
    yield _event("message-start")
    async for event in events:
        piece = text.piece(event)
        if piece:
            yield _event("content-delta", text=piece)
        if isinstance(event, PanelDone):
            yield _event("message-end", bench=panel_json(event.reply))


class Route:
    """Route mode: one member's text."""

    MEDIA_TYPE_STREAM = MEDIA_TYPE_STREAM

    def render_route_reply(self, reply: Reply, ask: Ask, bench: dict[str, Any]) -> dict[str, Any]:
        return {"id": "v2-route", "message": _message(reply.text), "bench": bench}

    async def render_route_stream(
        self, chunks: AsyncIterator[Chunk], ask: Ask, bench: dict[str, Any]
    ) -> AsyncIterator[bytes]:
        try:
            async for chunk in chunks:
                if isinstance(chunk, TextDelta) and chunk.text:
                    yield _event("content-delta", text=chunk.text)
        except ProviderError as exc:
            yield _event("error", **error_body(502, str(exc)))
            return
        yield _event("message-end", bench=bench)


def error_body(status: int, message: str, malformed: bool = False) -> dict[str, Any]:
    return {"message": message}


def _route(body: Mapping[str, Any], query: Mapping[str, str]) -> registry.RouteRenderer:
    return Route()


def _codec() -> registry.Codec:
    import sys

    module: registry.Codec = sys.modules[__name__]  # type: ignore[assignment]
    return module


COHERE = registry.InboundFormat(
    NAME,
    ("/v2/",),
    error_body,
    codec=_codec(),
    route=_route,
    ask_path="/v2/chat",
    key_headers=(KEY_HEADER,),
)


def pytest_configure(config: pytest.Config) -> None:
    """As a plugin: the format registered before any test module is collected."""
    registry.register(COHERE)
