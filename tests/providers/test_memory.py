"""The in-memory wire (`providers/memory.py`) and, on it, every way the
transport maps a failure (`providers/transport.py`'s table): what the handler
sees is what would go out, replies come back through the real reading code,
and each failure is the one error of our tree, before or after the first
byte. No socket: the unit tier."""

from __future__ import annotations

import asyncio

import pytest

from benchwarmers.errors import (
    ProviderAuthError,
    ProviderBadReply,
    ProviderBusy,
    ProviderConnectError,
    ProviderError,
    ProviderTimeout,
)
from benchwarmers.providers import transport
from benchwarmers.providers.base import REDACTED, Target
from benchwarmers.providers.deadline import Deadline
from benchwarmers.providers.kinds import adapter_for
from benchwarmers.providers.memory import MemoryClient, WireRequest, WireResponse, broken
from benchwarmers.types import API_KINDS, ApiKind, Request, Sampling, user

from .memory_support import STUCK, answering, failure, run, target

pytestmark = pytest.mark.unit

ASK = Request((user("hello"),))
BOTH = pytest.mark.parametrize("stream", [False, True], ids=["whole", "stream"])
APIS = pytest.mark.parametrize("api", API_KINDS)
COMPLETION = {
    "choices": [{"message": {"role": "assistant", "content": "hi"}, "finish_reason": "stop"}],
    "usage": {"prompt_tokens": 1, "completion_tokens": 1},
}


def piece(text: str) -> dict[str, object]:
    return {"choices": [{"index": 0, "delta": {"content": text}}]}


async def test_the_handler_sees_the_request_as_it_would_go_out() -> None:
    request = Request((user("hello"),), sampling=Sampling(stop=("x", "y")))
    ran = await run("openai", answering(WireResponse.json(COMPLETION)), request, stream=False)
    sent = ran.request
    assert (sent.method, str(sent.url), sent.path) == (
        "POST",
        "https://api.example/v1/chat/completions",
        "/v1/chat/completions",
    )
    assert sent.headers == {"authorization": "Bearer sk-test-key", "content-type": "application/json"}
    assert sent.json["stop"] == ["x", "y"]  # through JSON, as aiohttp sends it: a tuple is a list


async def test_an_async_handler_answers_too_and_headers_come_back_lower_cased() -> None:
    async def handle(_: WireRequest) -> WireResponse:
        await asyncio.sleep(0)
        return WireResponse.json(COMPLETION, headers={"X-RateLimit-Remaining-Requests": "41"})

    ran = await run("openai", handle, ASK, stream=False)
    assert ran.headers["x-ratelimit-remaining-requests"] == "41"
    assert ran.headers["content-type"] == "application/json"
    assert (await ran.reply()).text == "hi"


async def test_a_get_has_no_body() -> None:
    async with MemoryClient(answering(WireResponse.json({"data": [{"id": "a"}]}))) as outbound:
        assert await adapter_for("openai", outbound).list_models(target("openai")) == ["a"]
    (sent,) = outbound.requests
    assert (sent.method, sent.json, "content-type" in sent.headers) == ("GET", None, False)


async def test_sse_lines_split_anywhere_between_chunks_read_the_same() -> None:
    whole = b'data: {"choices": [{"delta": {"content": "caf\xc3\xa9"}}]}\r\n\r\ndata: [DONE]\r\n\r\n'
    # Split everywhere, mid-character and between CR and LF included.
    chunks = [whole[i : i + 1] for i in range(len(whole))]
    ran = await run("openai", answering(WireResponse(200, {}, chunks)), ASK, stream=True)
    assert (await ran.reply()).text == "café"


@BOTH
async def test_a_refused_connection_is_a_connect_error(stream: bool) -> None:
    def refuse(_: WireRequest) -> WireResponse:
        raise ConnectionRefusedError(111, "Connection refused")

    error, got = await failure("openai", refuse, ASK, stream=stream)
    assert type(error) is ProviderConnectError and "could not connect" in error.message
    assert (error.status, error.after_first_byte, got) == (None, False, [])


async def test_a_base_url_that_is_no_http_url_is_a_connect_error() -> None:
    async with MemoryClient(answering(WireResponse.json(COMPLETION))) as outbound:
        bad = Target("mem", "openai", "api.example/v1", "m1")
        with pytest.raises(ProviderConnectError, match="bad URL"):
            await adapter_for("openai", outbound).execute(bad, ASK, stream=False).__anext__()
    assert outbound.requests == []


@BOTH
async def test_a_provider_that_never_answers_times_out_before_the_first_byte(stream: bool) -> None:
    async def never(_: WireRequest) -> WireResponse:
        await asyncio.Event().wait()
        raise AssertionError("unreachable")

    error, got = await failure("openai", never, ASK, stream=stream, timeout=0.05)
    assert type(error) is ProviderTimeout and error.message == "no reply before the deadline"
    assert (error.after_first_byte, got) == (False, [])


async def test_a_stream_that_stalls_after_content_times_out_after_the_first_byte() -> None:
    async def stalling() -> object:
        yield b'data: {"choices": [{"delta": {"content": "par"}}]}\n\n'
        await asyncio.Event().wait()

    error, got = await failure(
        "openai", answering(WireResponse(200, {}, stalling())), ASK, stream=True, timeout=0.05
    )
    assert type(error) is ProviderTimeout and "stalled" in error.message
    assert (error.status, error.after_first_byte) == (200, True)
    assert [type(c).__name__ for c in got] == ["ResponseHeaders", "TextDelta"]


@pytest.mark.parametrize(("content", "after"), [(True, True), (False, False)], ids=["mid", "before"])
async def test_a_broken_stream_is_a_bad_reply_knowing_whether_content_came(
    content: bool, after: bool
) -> None:
    events = [piece("par"), broken()] if content else [broken()]
    error, _ = await failure("openai", answering(WireResponse.sse(*events)), ASK, stream=True)
    assert type(error) is ProviderBadReply and "broke off" in error.message
    assert (error.status, error.after_first_byte) == (200, after)


async def test_a_broken_whole_body_is_a_bad_reply() -> None:
    cut = WireResponse(200, {"content-type": "application/json"}, [b'{"choices": [', broken()])
    error, _ = await failure("openai", answering(cut), ASK, stream=False)
    assert type(error) is ProviderBadReply and "broke off" in error.message


async def test_a_stream_that_ends_before_its_end_marker_is_a_bad_reply() -> None:
    error, got = await failure("openai", answering(WireResponse.sse(piece("half"))), ASK, stream=True)
    assert type(error) is ProviderBadReply and "before its end marker" in error.message
    assert error.after_first_byte is True and len(got) == 2


@pytest.mark.parametrize(
    ("stream", "body", "said"),
    [
        (False, b"<html>oops</html>", "the reply is not JSON: <html>oops</html>"),
        (True, b"data: {not json\n\n", "a stream event is not JSON: {not json"),
        (False, b'{"choices": []}', "unexpected reply shape (IndexError"),
        (False, b'{"choices": [{"message": null}]}', "unexpected reply shape (AttributeError"),
        (False, b"data: {not json\n\n", "the reply is not JSON: data: {not json"),
        (False, b'data: {"choices": [{"delta": {"content": "half"}}]}\n\n', "the reply, a stream where"),
    ],
    ids=["not-json", "event-not-json", "no-choice", "null-message", "events-not-json", "events-cut"],
)
async def test_a_malformed_body_is_a_bad_reply(stream: bool, body: bytes, said: str) -> None:
    error, _ = await failure("openai", answering(WireResponse(200, {}, body)), ASK, stream=stream)
    assert type(error) is ProviderBadReply and error.message.startswith(said)
    assert error.status == 200


@BOTH
async def test_a_reply_larger_than_any_sane_one_is_refused(
    stream: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(transport, "MAX_REPLY_BYTES", 4096)
    huge = WireResponse(200, {}, [b"data: " + b"x" * 3000, b"x" * 3000 + b"\n\n"])
    error, _ = await failure("openai", answering(huge), ASK, stream=stream)
    assert type(error) is ProviderBadReply and "larger than" in error.message


@BOTH
async def test_a_redirect_is_not_followed_and_says_where_it_points(stream: bool) -> None:
    moved = WireResponse(307, {"Location": "https://elsewhere.example/v1/chat/completions"})
    async with MemoryClient(answering(moved)) as outbound:
        with pytest.raises(ProviderError) as caught:
            _ = [
                c async for c in adapter_for("openai", outbound).execute(target("openai"), ASK, stream=stream)
            ]
    assert caught.value.status == 307 and "elsewhere.example" in caught.value.message
    assert len(outbound.requests) == 1


async def test_a_call_that_cannot_get_a_connection_is_busy_and_never_goes_out() -> None:
    release = asyncio.Event()

    async def hold(_: WireRequest) -> WireResponse:
        await release.wait()
        return WireResponse.json(COMPLETION)

    async with MemoryClient(hold, per_origin=1, total=8) as outbound:
        adapter = adapter_for("openai", outbound)
        holder = asyncio.ensure_future(
            adapter.execute(target("openai"), ASK, stream=False, timeout=STUCK).__anext__()
        )
        while outbound.in_flight == 0:
            await asyncio.sleep(0)
        with pytest.raises(ProviderBusy, match=r"all 1 outbound connections to api\.example were busy"):
            await adapter.execute(target("openai"), ASK, stream=False, timeout=0.1).__anext__()
        assert len(outbound.requests) == 1  # the busy call never reached the handler
        release.set()
        assert (await holder).status == 200
    assert outbound.in_flight == 0


async def test_a_closed_client_refuses_to_send() -> None:
    client = MemoryClient(answering(WireResponse.json(COMPLETION)))
    with pytest.raises(RuntimeError, match="not open"):
        await client.open("GET", "https://api.example/", None, {}, Deadline(None))


@APIS
async def test_an_error_quoting_the_key_never_shows_it(api: ApiKind) -> None:
    said = {"error": {"message": "Incorrect API key provided: sk-test-key. Check it."}}
    error, _ = await failure(api, answering(WireResponse.json(said, status=401)), ASK, stream=False)
    assert type(error) is ProviderAuthError
    assert "sk-test-key" not in error.message and REDACTED in error.message
