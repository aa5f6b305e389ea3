"""The adapter contract: one class per API kind turns a `Request` into that
API's call and its reply into `Chunk`s.

An adapter only translates. Sending, framing streams and mapping failures
live in `transport.py`, so the four adapters differ exactly where the APIs
do: the body they post, the URL, the auth header, and how a reply or a
stream event reads. The template `execute` below runs that translation the
same way for all four: a whole reply read by the transport with this
adapter's reply reader (`Transport.post_reply`; a stream sent where JSON
was asked for read with its decoder), a stream read by the transport with
this adapter's decoder (`Transport.stream`), each deciding
`after_first_byte` as the chunks go out: an error counts as after the first
byte once a text or tool-call piece has reached the caller, which is what
route-mode failover needs to know. Either way the endpoint's key is
scrubbed from every error (`scrubbed`).
"""

from __future__ import annotations

import hashlib
import json
import urllib.parse
from abc import ABC, abstractmethod
from collections.abc import AsyncIterable, AsyncIterator
from dataclasses import dataclass, field
from typing import Any, ClassVar

from benchwarmers.errors import ProviderError
from benchwarmers.providers.outbound import OutboundClient
from benchwarmers.providers.sse import Framing
from benchwarmers.providers.transport import StreamEvent, Transport, reading
from benchwarmers.types import (
    CONTENT_CHUNKS,
    ApiKind,
    Chunk,
    Finish,
    FinishReason,
    Message,
    Reply,
    ReplyBuilder,
    Request,
    TextDelta,
    ToolCallDelta,
    Usage,
    UsageReport,
)


@dataclass(frozen=True, slots=True)
class Target:
    """Where one call goes. The key is kept out of `repr`, so a target in a
    log line or a traceback never shows it."""

    endpoint: str
    api: ApiKind
    base_url: str
    served: str
    key: str | None = field(default=None, repr=False)

    @property
    def base(self) -> str:
        return self.base_url.rstrip("/")


@dataclass(frozen=True, slots=True)
class Outbound:
    """One prepared HTTP call: where, with which headers, what body."""

    url: str
    headers: dict[str, str] = field(repr=False)
    body: dict[str, Any]


class StreamDecoder(ABC):
    """Reads one streamed reply event by event; it may keep state (Anthropic's
    content blocks, the next tool-call index)."""

    @abstractmethod
    def is_end(self, event: StreamEvent) -> bool:
        """Whether this event is the API's end-of-reply marker."""

    @abstractmethod
    def feed(self, event: StreamEvent) -> list[Chunk]:
        """The chunks this event carries; raise a `ProviderError` for an
        error the API sent inside the stream."""

    def close(self) -> list[Chunk]:
        """Chunks held back until the stream ended (usage, finish)."""
        return []


class Adapter(ABC):
    api: ClassVar[ApiKind]
    framing: ClassVar[Framing] = "sse"

    def __init__(self, outbound: OutboundClient) -> None:
        self.transport = Transport(outbound)

    def execute(
        self, target: Target, request: Request, *, stream: bool, timeout: float | None = None
    ) -> AsyncIterator[Chunk]:
        """`ResponseHeaders`, then text and tool-call pieces, a `UsageReport`
        and a `Finish`. Raises `ProviderError` subclasses only, with the
        endpoint's key scrubbed from them; one the API cannot carry before
        anything is iterated. A stream is the transport's own generator
        (`Transport.stream`, decoding with this adapter's decoder), not
        one more wrapped around it."""
        try:
            call = self.prepare(target, request, stream=stream)
        except ProviderError as error:
            raise scrubbed(error, target.key) from None
        if not stream:
            return self._whole(call, target, timeout)
        return self.transport.stream(
            call.url,
            call.body,
            headers=call.headers,
            timeout=timeout,
            framing=self.framing,
            decoder=self.decoder(),
            failed=lambda error: scrubbed(error, target.key),
            whole=self.read_reply,
        )

    async def _whole(self, call: Outbound, target: Target, timeout: float | None) -> AsyncIterator[Chunk]:
        content_sent = False
        try:
            headers, chunks = await self.transport.post_reply(
                call.url,
                call.body,
                read=self.read_reply,
                headers=call.headers,
                timeout=timeout,
                framing=self.framing,
                decoder=self.decoder,
            )
            yield headers
            for chunk in chunks:
                content_sent = content_sent or isinstance(chunk, CONTENT_CHUNKS)
                yield chunk
        except ProviderError as error:
            error.after_first_byte = content_sent
            raise scrubbed(error, target.key) from None

    async def list_models(self, target: Target, *, timeout: float | None = 30.0) -> list[str]:
        """The served ids the endpoint lists now (for discovery and for
        retiring a model its endpoint stopped listing)."""
        url, headers = self.models_call(target)
        try:
            body = await self.transport.get_json(url, headers=headers, timeout=timeout)
            served: list[str] = reading(self.read_models, 200, body)
            return served
        except ProviderError as error:
            raise scrubbed(error, target.key) from None

    @abstractmethod
    def prepare(self, target: Target, request: Request, *, stream: bool) -> Outbound:
        """The HTTP call for this request. Raises `ProviderError` before
        anything is sent when the API cannot carry the request."""

    @abstractmethod
    def read_reply(self, body: Any) -> list[Chunk]:
        """Chunks of a whole (non-streamed) reply body, headers excluded."""

    @abstractmethod
    def decoder(self) -> StreamDecoder:
        """A fresh reader for one streamed reply."""

    @abstractmethod
    def models_call(self, target: Target) -> tuple[str, dict[str, str]]:
        """URL and headers of the model-list call."""

    @abstractmethod
    def read_models(self, body: Any) -> list[str]:
        """Served ids from the model-list body."""


REDACTED = "[endpoint key redacted]"
MIN_SCRUBBED = 4


def scrubbed(error: ProviderError, key: str | None) -> ProviderError:
    """The error with the endpoint's key cut out of everything it says: a
    provider's 401 often quotes the key it was sent, and the message goes on
    to the call log, every format's reply and MCP. Plain and URL-encoded
    (Gemini's `?key=`) forms both go."""
    if not key or len(key) < MIN_SCRUBBED:
        return error  # shorter is no secret, and would cut ordinary words
    forms = {key, urllib.parse.quote(key, safe=""), urllib.parse.quote_plus(key)}
    error.message = _replace_all(error.message, forms)
    error.args = (error.message,)
    error.headers = {name: _replace_all(value, forms) for name, value in error.headers.items()}
    return error


def _replace_all(text: str, forms: set[str]) -> str:
    for form in forms:
        text = text.replace(form, REDACTED)
    return text


# ------------------------------------------------------------------- gather


async def gather(chunks: AsyncIterable[Chunk]) -> Reply:
    """A whole reply from an adapter's chunks (`types.ReplyBuilder`)."""
    builder = ReplyBuilder()
    async for chunk in chunks:
        builder.add(chunk)
    return builder.reply()


# ------------------------------------------------- helpers the adapters share


def synthetic_call_id(index: int, name: str, arguments: str) -> str:
    """A tool-call id for APIs that send none (Gemini, Ollama): the same call
    in the same place always gets the same id, so a replayed reply matches."""
    digest = hashlib.sha256(f"{index}\0{name}\0{arguments}".encode()).hexdigest()[:16]
    return f"call_{digest}"


def tool_names_by_call_id(messages: tuple[Message, ...]) -> dict[str, str]:
    """Tool names of the calls in a conversation, by call id, for APIs whose
    tool results must name the tool (Gemini, Ollama)."""
    return {call.id: call.name for message in messages for call in message.tool_calls}


def text_and_tool_calls(
    text: str, calls: list[tuple[str, str, str]], finish: FinishReason, usage: Usage | None
) -> list[Chunk]:
    """The chunks of a whole reply, in the order a stream would give them."""
    chunks: list[Chunk] = []
    if text:
        chunks.append(TextDelta(text))
    chunks.extend(ToolCallDelta(i, call_id, name, args) for i, (call_id, name, args) in enumerate(calls))
    if usage is not None:
        chunks.append(UsageReport(usage))
    chunks.append(Finish(finish))
    return chunks


def parse_arguments(arguments: str) -> Any:
    """A tool call's JSON arguments as an object, for APIs that want one
    (Anthropic, Gemini, Ollama); text that is not a JSON object is kept
    under `_raw` rather than lost. So is text JSON would only half take:
    NaN or Infinity (no JSON value, which the API would refuse) and nesting
    deeper than Python's parser recurses (a caller may send any string)."""
    try:
        parsed = strict_json(arguments or "{}")
    except ValueError:
        return {"_raw": arguments}
    return parsed if isinstance(parsed, dict) else {"_raw": arguments}


def strict_json(text: str) -> Any:
    """JSON text a caller wrote, parsed; ValueError for what is not JSON,
    NaN, Infinity, nesting too deep to parse and a `\\u` escape naming a
    lone surrogate (no character: the request could not be encoded) included."""
    try:
        parsed = json.loads(text, parse_constant=_no_constant)
        if "\\u" in text:
            json.dumps(parsed, ensure_ascii=False).encode()
    except RecursionError:
        raise ValueError("JSON nested too deep") from None
    except UnicodeEncodeError:
        raise ValueError("a \\u escape names a lone surrogate") from None
    return parsed


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a JSON value")
