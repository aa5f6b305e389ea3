"""The one HTTP seam every adapter goes through, and the one place upstream
failures become our errors.

Adapters build URLs, headers and bodies; this module sends them on the
shared pooled client (`outbound.OutboundClient`, `wire.py`, or in tests its
in-memory twin `memory.MemoryClient`) and maps every way a call can fail, once:

    what happened                                   raised
    ──────────────────────────────────────────────  ─────────────────────────────────────
    no answer / no next byte before the deadline    ProviderTimeout
    no free outbound connection before it           ProviderBusy (the call never went out)
    connection refused, DNS, TLS, bad URL           ProviderConnectError
    HTTP 429 (or a RESOURCE_EXHAUSTED /             ProviderRateLimited, retry_after from
      rate_limit error code on another status)        retry-after-ms, retry-after (seconds
                                                      or HTTP date), Gemini RetryInfo, or
                                                      "try again in 20s" in the body
    HTTP 401 / 403                                  ProviderAuthError
    any other HTTP >= 400                           ProviderError (message read from the
                                                      OpenAI, Anthropic, Gemini or Ollama
                                                      error body)
    HTTP 3xx (we never follow a redirect)           ProviderError naming where it points
    a 200 whose body is not JSON (nor, asked for    ProviderBadReply
      JSON, a stream's events: read as the stream)
    a reply larger than MAX_REPLY_BYTES (counted    ProviderBadReply
      inflated), a head over wire.MAX_HEAD_BYTES
      or wire.MAX_HEADERS fields
    a stream that breaks, or ends before its end    ProviderBadReply
      marker, or carries a line that is not JSON

Every error carries the status (when there was one) and the response headers,
lower-cased, so the limits layer can learn from a refusal as well as from a
success. `after_first_byte` is set for a stream by its reader here, which
decodes it with the adapter's decoder and so knows whether any content
reached its caller (the adapter's `failed` then scrubs its key from it).

`timeout` is one deadline for the whole call, streaming or not: a seat's
time is what the caller has, however the provider spends it. It is reckoned
once, on the loop's clock, as a `deadline.Deadline`: one timer for the
call, and each wait on the provider (a connection, the status line, each
piece of the body) bounded by it with no task and no timer of its own. No
wait is ever open across a `yield`, which would cancel the consumer's work
instead of the call. The response is released (its connection and gates
given back) in a `finally` of the call itself, not through context managers
stacked around it.
"""

from __future__ import annotations

import email.utils
import re
import time
from collections.abc import AsyncGenerator, Callable
from typing import Any, NamedTuple, Protocol, TypeVar

from benchwarmers import jsontext
from benchwarmers.durations import UNIT_PATTERN, parse_duration
from benchwarmers.errors import (
    ProviderAuthError,
    ProviderBadReply,
    ProviderBusy,
    ProviderConnectError,
    ProviderError,
    ProviderRateLimited,
    ProviderTimeout,
)
from benchwarmers.providers.deadline import Deadline
from benchwarmers.providers.outbound import OutboundClient, Response
from benchwarmers.providers.sse import Frames, Framing
from benchwarmers.providers.wire import ReplyRefused
from benchwarmers.types import CONTENT_CHUNKS, Chunk, ResponseHeaders

T = TypeVar("T")

# OpenAI-style streams end with this data line instead of a JSON document.
DONE = "[DONE]"
# No sane reply is larger (a long answer is well under 1 MB; images come as URLs or base64 in).
MAX_REPLY_BYTES = 32 * 1024 * 1024


class StreamEvent(NamedTuple):
    """One event of a stream: the SSE event name ("" for NDJSON or unnamed
    events) and its parsed JSON (None for the `[DONE]` sentinel). A named
    tuple, as `sse.SseEvent` is: one is made for every event."""

    name: str
    data: Any


class Decoding(Protocol):
    """What reads a stream's events (an adapter's `StreamDecoder`)."""

    def is_end(self, event: StreamEvent) -> bool: ...
    def feed(self, event: StreamEvent) -> list[Chunk]: ...
    def close(self) -> list[Chunk]: ...


class Transport:
    def __init__(self, outbound: OutboundClient) -> None:
        self.outbound = outbound

    async def get_json(self, url: str, *, headers: dict[str, str], timeout: float | None) -> Any:
        found, raw = await self._call("GET", url, None, headers, timeout)
        return _json(raw, found)

    async def post_json(
        self, url: str, body: dict[str, Any], *, headers: dict[str, str], timeout: float | None
    ) -> tuple[ResponseHeaders, Any]:
        found, raw = await self._call("POST", url, body, headers, timeout)
        return found, _json(raw, found)

    async def post_reply(
        self,
        url: str,
        body: dict[str, Any],
        *,
        read: Callable[[Any], list[Chunk]],
        headers: dict[str, str],
        timeout: float | None,
        framing: Framing,
        decoder: Callable[[], Decoding],
    ) -> tuple[ResponseHeaders, list[Chunk]]:
        """A whole (non-streamed) reply's chunks: its JSON read by `read`
        (the adapter's reply reader). A server that answers a request that
        did not ask to stream with a stream anyway (`text/event-stream` to
        `stream: false`: some compatible servers and proxies do) has its
        events read by a `decoder()` into the same chunks a JSON answer gives;
        a body that is neither JSON nor events is `ProviderBadReply`, "the
        reply is not JSON", as it always was. The mirror of `stream`'s
        `whole`."""
        found, raw = await self._call("POST", url, body, headers, timeout)
        try:
            parsed = jsontext.loads(raw)
        except ValueError:
            return found, _events_read(raw, framing, decoder, found)
        return found, reading(read, found.status, parsed)

    async def stream(
        self,
        url: str,
        body: dict[str, Any],
        *,
        headers: dict[str, str],
        timeout: float | None,
        framing: Framing,
        decoder: Decoding,
        failed: Callable[[ProviderError], ProviderError] = lambda error: error,
        whole: Callable[[Any], list[Chunk]] | None = None,
    ) -> AsyncGenerator[Chunk, None]:
        """`ResponseHeaders`, then the reply's chunks as `decoder` reads its
        events (text and tool-call pieces, usage, the finish). Reads to the
        end of the body (Gemini sends its usage after the finish) and raises
        `ProviderBadReply` if no event satisfied `decoder.is_end`; an event
        that is not JSON raises after the events before it. A `ProviderError`
        leaves through `failed` (the adapter's: its key scrubbed), marked
        `after_first_byte` once any content went out. The adapter's stream
        itself, not a layer under another generator: each was a generator's
        step per chunk and the loop's first-iteration hook per call.

        A server that ignores `stream` and answers one JSON document
        (`content-type: application/json`: some compatible servers and
        proxies do, and Gemini's stream call without `alt=sse` answers a
        JSON array) is read whole by `whole` (the adapter's reply reader);
        a body so labelled that is not JSON is framed as the stream it is."""
        deadline = Deadline.after(timeout)
        content_sent = False
        try:
            response = await _opened(self.outbound, "POST", url, body, headers, deadline)
            try:
                found = response.headers
                status = response.status
                if status >= 300:
                    raise status_error(status, found, await _read_capped(response, deadline))
                yield ResponseHeaders(status, tuple(found.items()))
                # One wait on the socket per piece of the body; the events a piece
                # completes are read from it at once (`sse.Frames`).
                frames = Frames(framing)
                pieces = response.body
                size = 0
                ended = False
                done = False
                last: list[Chunk] | None = None
                if whole is not None and _labelled_json(found):
                    raw = await _read_capped(response, deadline)
                    answered = _loads(raw)
                    if answered is None:
                        pieces = _once(raw)
                    else:
                        last = reading(whole, status, answered)
                        ended = done = True
                while not done:
                    try:
                        with deadline:
                            piece = await anext(pieces)
                    except StopAsyncIteration:
                        done = True
                        items = frames.end()
                    except (TimeoutError, OSError) as error:
                        raise _broke(error, response) from None
                    else:
                        size += len(piece)
                        if size > MAX_REPLY_BYTES:
                            raise _too_big(response)
                        items = frames.feed(piece)
                    for item in items:
                        event = _parse_event(item.name, item.data, status, found)
                        ended = ended or decoder.is_end(event)
                        for chunk in reading(decoder.feed, status, event):
                            content_sent = content_sent or isinstance(chunk, CONTENT_CHUNKS)
                            yield chunk
                if not ended:
                    raise ProviderBadReply(
                        "the stream ended before its end marker", status=status, headers=found
                    )
                if last is None:
                    last = reading(decoder.close, status)
            finally:
                response.release()
            deadline.close()
            for chunk in last:  # after the connection went back, as the reply's end is read
                yield chunk
        except ProviderError as error:
            error.after_first_byte = content_sent
            raise failed(error) from None
        finally:
            deadline.close()

    async def _call(
        self,
        method: str,
        url: str,
        body: dict[str, Any] | None,
        headers: dict[str, str],
        timeout: float | None,
    ) -> tuple[ResponseHeaders, bytes]:
        """The whole body of a reply whose status is not an error's."""
        deadline = Deadline.after(timeout)
        try:
            response = await _opened(self.outbound, method, url, body, headers, deadline)
            try:
                raw = await _read_capped(response, deadline)
            finally:
                response.release()
        finally:
            deadline.close()
        status = response.status
        found = response.headers
        if status >= 300:
            raise status_error(status, found, raw)
        return ResponseHeaders(status, tuple(found.items())), raw


def _events_read(
    raw: bytes, framing: Framing, decoder_made: Callable[[], Decoding], found: ResponseHeaders
) -> list[Chunk]:
    """A whole body that is a stream's events, read as the stream would be:
    the chunks of each event, then what the decoder held back (usage, the
    finish). The body is whole, so an event its last line leaves pending is
    ended (an SSE event waits for a blank line a closing server may not
    send). No event, or one that is not JSON: the body is no stream
    either, and "not JSON" says what was asked for."""
    frames = Frames(framing)
    items = [*frames.feed(raw + b"\n\n"), *frames.end()]
    status, headers = found.status, dict(found.headers)
    events: list[StreamEvent] = []
    for item in items:
        done = item.data.strip() == DONE
        data = None if done else _loads(item.data)
        if data is None and not done:
            raise _not_json(raw, found)
        events.append(StreamEvent(item.name, data))
    if not events:
        raise _not_json(raw, found)
    decoder = decoder_made()
    chunks: list[Chunk] = []
    ended = False
    for event in events:
        ended = ended or decoder.is_end(event)
        chunks += reading(decoder.feed, status, event)
    if not ended:
        raise ProviderBadReply(
            "the reply, a stream where JSON was asked for, ended before its end marker",
            status=status,
            headers=headers,
        )
    return chunks + reading(decoder.close, status)


def _json(raw: bytes, found: ResponseHeaders) -> Any:
    try:
        return jsontext.loads(raw)
    except ValueError:
        raise _not_json(raw, found) from None


def _not_json(raw: bytes, found: ResponseHeaders) -> ProviderBadReply:
    return ProviderBadReply(
        f"the reply is not JSON: {_snippet(raw)}", status=found.status, headers=dict(found.headers)
    )


# ------------------------------------------------------------ error mapping


def status_error(status: int, headers: dict[str, str], raw: bytes | str | Any) -> ProviderError:
    """The error for an HTTP error status, or for an error object an API sent
    inside a 200 stream (`raw` may then be the already parsed JSON)."""
    if 300 <= status < 400:
        where = headers.get("location", "somewhere it did not say")
        return ProviderError(
            f"the endpoint redirected (HTTP {status}) to {where}: set its base URL to where it points",
            status=status,
            headers=headers,
        )
    body = _loads(raw) if isinstance(raw, bytes | str) else raw
    text = raw.decode("utf-8", "replace") if isinstance(raw, bytes) else raw if isinstance(raw, str) else ""
    message = error_message(body) or _snippet(text) or f"HTTP {status}"
    retry = retry_after_seconds(headers, message, body)
    kwargs: dict[str, Any] = {"status": status, "retry_after": retry, "headers": headers}
    if status == 429 or _is_rate_limit_code(body):
        return ProviderRateLimited(message, **kwargs)
    if status in (401, 403):
        return ProviderAuthError(message, **kwargs)
    return ProviderError(message, **kwargs)


def error_message(body: Any) -> str:
    """The human message from any of the four APIs' error bodies:
    OpenAI `{"error": {"message"}}`, Anthropic `{"type": "error", "error":
    {"message"}}`, Gemini `{"error": {"message", "status"}}` (sometimes in a
    list), Ollama `{"error": "..."}`."""
    if isinstance(body, list) and body:
        return error_message(body[0])
    if not isinstance(body, dict):
        return ""
    error = body.get("error")
    if isinstance(error, str):
        return error
    if isinstance(error, dict):
        return str(error.get("message") or error.get("status") or error.get("type") or "")
    return str(body.get("message") or body.get("detail") or "")


def _is_rate_limit_code(body: Any) -> bool:
    if isinstance(body, list) and body:
        body = body[0]
    error = body.get("error") if isinstance(body, dict) else None
    if not isinstance(error, dict):
        return False
    codes = {str(error.get(key, "")).lower() for key in ("type", "code", "status")}
    return bool(codes & {"rate_limit_error", "rate_limit_exceeded", "resource_exhausted"})


# -------------------------------------------------------------- retry-after

_PHRASE = re.compile(
    rf"(?:try again|retry)\s+(?:in|after)\s+((?:\d+(?:\.\d+)?\s*{UNIT_PATTERN}\s*)+)",
    re.I,
)


def retry_after_seconds(headers: dict[str, str], message: str = "", body: Any = None) -> float | None:
    """How long the provider asked us to wait, from the first source that
    says: `retry-after-ms`, `retry-after` (seconds or an HTTP date), Gemini's
    `RetryInfo.retryDelay`, or a "try again in 20s" phrase in the message."""
    if "retry-after-ms" in headers:
        try:
            return float(headers["retry-after-ms"]) / 1000
        except ValueError:
            pass
    if "retry-after" in headers:
        value = headers["retry-after"].strip()
        try:
            return max(0.0, float(value))
        except ValueError:
            try:
                when = email.utils.parsedate_to_datetime(value)
            except (TypeError, ValueError):
                when = None
            if when is not None:
                return max(0.0, when.timestamp() - time.time())
    delay = _gemini_retry_delay(body)
    if delay is not None:
        return delay
    match = _PHRASE.search(message)
    return parse_duration(match.group(1)) if match else None


def _gemini_retry_delay(body: Any) -> float | None:
    if isinstance(body, list) and body:
        body = body[0]
    error = body.get("error") if isinstance(body, dict) else None
    details = error.get("details") if isinstance(error, dict) else None
    for detail in details if isinstance(details, list) else []:
        if isinstance(detail, dict) and isinstance(detail.get("retryDelay"), str):
            return parse_duration(detail["retryDelay"])
    return None


# ---------------------------------------------------------------- plumbing


def reading(read: Callable[..., T], status: int, *args: Any) -> T:
    """Run a reply reader on `args`; a reply that lacks what its API
    promises (a KeyError deep in a dict) is a bad reply, not a crash."""
    try:
        return read(*args)
    except ProviderError:
        raise
    except (KeyError, IndexError, TypeError, ValueError, AttributeError) as error:
        raise ProviderBadReply(
            f"unexpected reply shape ({type(error).__name__}: {error})", status=status
        ) from None


def _parse_event(name: str, data: str, status: int, headers: dict[str, str]) -> StreamEvent:
    if data.strip() == DONE:
        return StreamEvent(name, None)
    try:
        return StreamEvent(name, jsontext.loads(data))
    except ValueError:
        raise ProviderBadReply(
            f"a stream event is not JSON: {_snippet(data)}", status=status, headers=headers
        ) from None


async def _opened(
    outbound: OutboundClient,
    method: str,
    url: str,
    body: dict[str, Any] | None,
    headers: dict[str, str],
    deadline: Deadline,
) -> Response:
    """Send and wait for the status line: failures here mean no reply at all."""
    try:
        return await outbound.open(method, url, body, headers, deadline)
    except ProviderBusy:
        raise
    except TimeoutError:
        raise ProviderTimeout("no reply before the deadline") from None
    except ValueError as error:
        raise ProviderConnectError(f"bad URL: {error}") from None
    except ReplyRefused as error:
        raise ProviderBadReply(f"{error}: refused") from None
    except OSError as error:
        raise ProviderConnectError(f"could not connect: {error or type(error).__name__}") from None


def _broke(error: BaseException, response: Response) -> ProviderError:
    """What a failed read of a body means: a reply began, then stalled or broke."""
    status, headers = response.status, response.headers
    if isinstance(error, ReplyRefused):  # the body broke one of the client's limits (a bomb)
        return ProviderBadReply(f"{error}: refused", status=status, headers=headers)
    if isinstance(error, TimeoutError):
        return ProviderTimeout("the reply stalled before the deadline", status=status, headers=headers)
    return ProviderBadReply(
        f"the reply broke off: {error or type(error).__name__}", status=status, headers=headers
    )


async def _read_capped(response: Response, deadline: Deadline) -> bytes:
    """The whole body within the deadline, refused past `MAX_REPLY_BYTES`
    (no sane reply is that big)."""
    chunks: list[bytes] = []
    size = 0
    pieces = response.body
    while True:
        try:
            with deadline:
                chunk = await anext(pieces)
        except StopAsyncIteration:
            return b"".join(chunks)
        except (TimeoutError, OSError) as error:
            raise _broke(error, response) from None
        size += len(chunk)
        if size > MAX_REPLY_BYTES:
            raise _too_big(response)
        chunks.append(chunk)


def _labelled_json(headers: dict[str, str]) -> bool:
    return headers.get("content-type", "").lstrip().lower().startswith("application/json")


async def _once(raw: bytes) -> AsyncGenerator[bytes, None]:
    yield raw


def _too_big(response: Response) -> ProviderBadReply:
    return ProviderBadReply(
        f"the reply is larger than {MAX_REPLY_BYTES // (1024 * 1024)} MB: no sane reply is; refused",
        status=response.status,
        headers=response.headers,
    )


def _loads(raw: bytes | str) -> Any:
    try:
        return jsontext.loads(raw)
    except ValueError:
        return None


def _snippet(raw: bytes | str, limit: int = 300) -> str:
    text = raw.decode("utf-8", "replace") if isinstance(raw, bytes) else raw
    text = " ".join(text.split())
    return text if len(text) <= limit else text[:limit] + "..."
