"""The four adapters against what real providers send, which the fake
provider's tidy streams do not: each quirk written here as raw bytes, served
over real loopback HTTP by `testing.hostile.HostileUpstream`, and read by
the adapter as a seat reads it (streamed and not).

The quirks were read from the APIs' references and the official SDKs'
stream parsers: SSE framing as the WHATWG spec has it (CR, CRLF, `data:`
without its space, comments, `event:`/`id:`/`retry:`, a BOM), OpenAI-style
servers' chunks (usage with no choices, `refusal` and `reasoning_content`
deltas, OpenRouter's error inside a 200 stream, a server that answers JSON
to a stream request and one that answers a stream where JSON was asked),
Anthropic's `ping`, thinking blocks and mid-stream `error`, Gemini's
thought parts and blocked prompts, Ollama's `thinking` and its error line.
What reaches the caller: the answer's text only (reasoning is dropped,
never shown as the answer), its finish reason, and a `ProviderError`
naming what the upstream said for an error mid-stream."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterable
from typing import Any

import pytest

from benchwarmers.errors import ProviderBadReply, ProviderError
from benchwarmers.providers.base import Target, gather
from benchwarmers.providers.kinds import adapter_for
from benchwarmers.providers.outbound import OutboundClient
from benchwarmers.providers.sse import Frames, SseEvent
from benchwarmers.testing import FakeModel, FakeProvider
from benchwarmers.testing.hostile import HostileUpstream
from benchwarmers.types import Reply, Request, user

pytestmark = pytest.mark.integration

ASK = Request((user("hello"),))
SSE_HEAD = b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\nconnection: close\r\n\r\n"
NDJSON_HEAD = b"HTTP/1.1 200 OK\r\ncontent-type: application/x-ndjson\r\nconnection: close\r\n\r\n"
JSON_HEAD = b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\nconnection: close\r\n\r\n"


def pieces(body: bytes, size: int) -> list[bytes]:
    return [body[i : i + size] for i in range(0, len(body), size)]


async def ask(
    api: str, head: bytes, body: bytes, *, stream: bool, size: int = 0
) -> tuple[Reply, list[bytes]]:
    """The reply the adapter reads from `head` and `body` (sent `size` bytes
    at a time when set), and the requests the upstream read."""
    seen: list[bytes] = []

    def reply(request: bytes) -> Iterable[bytes]:
        seen.append(request)
        return [head, *(pieces(body, size) if size else [body])]

    with HostileUpstream(reply) as upstream:
        base = upstream.base if api == "openai" else f"http://127.0.0.1:{upstream.port}"
        async with OutboundClient() as outbound:
            adapter = adapter_for(api, outbound)  # type: ignore[arg-type]
            chunks = adapter.execute(Target("q", api, base, "m"), ASK, stream=stream, timeout=20.0)  # type: ignore[arg-type]
            return await gather(chunks), seen


async def failure(api: str, head: bytes, body: bytes, *, stream: bool = True) -> ProviderError:
    with pytest.raises(ProviderError) as caught:
        await ask(api, head, body, stream=stream)
    return caught.value


def sse(*events: Any, end: bytes = b"\n") -> bytes:
    """`data:` events, each a JSON value or a literal string."""
    lines = [e if isinstance(e, str) else json.dumps(e) for e in events]
    return b"".join(b"data: " + line.encode() + b"\n" + end for line in lines)


def chunk(finish: str | None = None, **delta: Any) -> dict[str, Any]:
    return {
        "object": "chat.completion.chunk",
        "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
    }


HELLO = sse(chunk(role="assistant", content="Héllo, "), chunk(content="wörld"), chunk("stop"), "[DONE]")


# ------------------------------------------------------------------ SSE framing


@pytest.mark.parametrize(
    "body",
    [
        HELLO.replace(b"\n", b"\r\n"),
        HELLO.replace(b"\n", b"\r"),
        HELLO.replace(b"data: ", b"data:"),
        b"\xef\xbb\xbf" + HELLO,
        b": keep-alive\n\n: OPENROUTER PROCESSING\n\n"
        + HELLO.replace(b"data: [DONE]", b": ping\ndata: [DONE]"),
        b"retry: 3000\n\n" + HELLO.replace(b"data: {", b"event: message\nid: 7\ndata: {"),
        HELLO[: -len(b"\n")],  # the last event without its blank line
        HELLO[: -len(b"\n\n")],  # nor its line's end
    ],
    ids=["crlf", "cr", "data-without-space", "bom", "comments", "event-id-retry", "no-blank-line", "no-eol"],
)
async def test_sse_framing_as_real_servers_write_it_is_read_whole(body: bytes) -> None:
    reply, _ = await ask("openai", SSE_HEAD, body, stream=True)
    assert (reply.text, reply.finish) == ("Héllo, wörld", "stop")


async def test_a_data_value_written_over_several_data_lines_is_one_event() -> None:
    body = b'data: {"object": "chunk",\ndata: "choices": [{"delta": {"content": "a\\nb"}}]}\n\n'
    reply, _ = await ask("openai", SSE_HEAD, body + sse(chunk("stop"), "[DONE]"), stream=True)
    assert reply.text == "a\nb"


async def test_a_stream_read_a_byte_at_a_time_over_the_wire_splits_characters_and_lines_harmlessly() -> None:
    body = b"\xef\xbb\xbf" + HELLO.replace(b"\n", b"\r\n")
    reply, _ = await ask("openai", SSE_HEAD, body, stream=True, size=1)
    assert (reply.text, reply.finish) == ("Héllo, wörld", "stop")


@pytest.mark.parametrize("ending", [b"\n", b"\r\n", b"\r"], ids=["lf", "crlf", "cr"])
def test_every_split_of_a_stream_gives_the_same_events(ending: bytes) -> None:
    """Pure framing, at every byte boundary (mid-character, mid-line, between
    a CR and its LF): the events are those of the unsplit stream."""
    body = (b"\xef\xbb\xbfevent: e\nid: 1\ndata:\xc3\xa9\ndata: \xe2\x82\xac\n\n" + HELLO).replace(
        b"\n", ending
    )
    whole = _events(body, [body])
    assert whole[0] == SseEvent("e", "é\n€") and len(whole) == 5
    for cut in range(1, len(body)):
        assert _events(body, [body[:cut], body[cut:]]) == whole, cut


def _events(body: bytes, split: list[bytes]) -> list[SseEvent]:
    frames = Frames("sse")
    events = [event for piece in split for event in frames.feed(piece)]
    return events + frames.end()


# -------------------------------------------------------------- OpenAI-compatible

OPENAI_QUIRKS = sse(
    chunk(role="assistant"),
    chunk(),  # delta {}
    chunk(content=None, reasoning_content="Let me think. "),  # DeepSeek, vLLM
    chunk(content=None, reasoning="Hmm. "),  # OpenRouter
    chunk(content="Paris"),
    {
        "object": "chat.completion.chunk",
        "choices": [{"index": 0, "delta": {"content": "."}, "finish_reason": "length"}],
    },
    {"object": "chat.completion.chunk", "choices": [], "usage": {"prompt_tokens": 7, "completion_tokens": 3}},
    "[DONE]",
)


async def test_openai_reasoning_and_empty_deltas_are_not_the_answer_and_usage_with_no_choices_counts() -> (
    None
):
    reply, seen = await ask("openai", SSE_HEAD, OPENAI_QUIRKS, stream=True)
    assert (reply.text, reply.finish) == ("Paris.", "length")
    assert (reply.usage.input_tokens, reply.usage.output_tokens) == (7, 3)
    assert b'"include_usage":true' in seen[0].replace(b" ", b"")


async def test_openai_whole_reply_keeps_reasoning_out_of_the_answer() -> None:
    body = {
        "object": "chat.completion",
        "choices": [
            {
                "index": 0,
                "message": {"role": "assistant", "content": "Paris.", "reasoning_content": "Let me think."},
                "finish_reason": "stop",
            }
        ],
    }
    reply, _ = await ask("openai", JSON_HEAD, json.dumps(body).encode(), stream=False)
    assert (reply.text, reply.finish) == ("Paris.", "stop")


async def test_openai_content_as_typed_parts_keeps_only_the_text_parts() -> None:
    """Mistral's reasoning models send `content` as a list of parts, the
    thinking among them."""
    thinking = {"type": "thinking", "thinking": [{"type": "text", "text": "Hmm."}]}
    body = sse(
        chunk(content=[thinking]),
        chunk(content=[{"type": "text", "text": "Paris."}]),
        chunk("stop"),
        "[DONE]",
    )
    reply, _ = await ask("openai", SSE_HEAD, body, stream=True)
    assert (reply.text, reply.finish) == ("Paris.", "stop")
    message = {"role": "assistant", "content": [thinking, {"type": "text", "text": "Paris."}]}
    whole = {"choices": [{"index": 0, "message": message, "finish_reason": "stop"}]}
    reply, _ = await ask("openai", JSON_HEAD, json.dumps(whole).encode(), stream=False)
    assert (reply.text, reply.finish) == ("Paris.", "stop")


async def test_openai_refusal_is_shown_and_ends_as_content_filter() -> None:
    body = sse(
        chunk(role="assistant", content=None, refusal=""),
        chunk(refusal="I can't help "),
        chunk(refusal="with that."),
        chunk("stop"),
        "[DONE]",
    )
    reply, _ = await ask("openai", SSE_HEAD, body, stream=True)
    assert (reply.text, reply.finish) == ("I can't help with that.", "content_filter")
    whole = {
        "choices": [
            {
                "index": 0,
                "message": {"role": "assistant", "content": None, "refusal": "I can't help with that."},
                "finish_reason": "stop",
            }
        ]
    }
    reply, _ = await ask("openai", JSON_HEAD, json.dumps(whole).encode(), stream=False)
    assert (reply.text, reply.finish) == ("I can't help with that.", "content_filter")


MISTRAL_422 = json.dumps(
    {
        "object": "error",
        "message": {
            "detail": [
                {
                    "type": "extra_forbidden",
                    "loc": ["body", "stream_options", "include_usage"],
                    "msg": "Extra inputs are not permitted",
                    "input": True,
                }
            ]
        },
        "type": "invalid_request_error",
        "param": None,
        "code": None,
    }
).encode()


def mistral(request: bytes) -> Iterable[bytes]:
    """Mistral's chat completions: `stream_options` refused with a 422, the
    usage sent unasked in the last chunk."""
    if b"stream_options" in request:
        return [
            b"HTTP/1.1 422 Unprocessable Entity\r\ncontent-type: application/json\r\nconnection: close\r\n"
            b"content-length: %d\r\n\r\n" % len(MISTRAL_422) + MISTRAL_422
        ]
    last = {**chunk("stop"), "usage": {"prompt_tokens": 6, "completion_tokens": 1}}
    return [SSE_HEAD, sse(chunk(role="assistant", content="Bonjour"), last, "[DONE]")]


async def test_a_server_that_refuses_stream_options_is_asked_again_without_it_and_from_then_on() -> None:
    with HostileUpstream(mistral) as upstream:
        async with OutboundClient() as outbound:
            adapter = adapter_for("openai", outbound)
            target = Target("mistral", "openai", upstream.base, "mistral-small-latest")
            for _ in range(2):
                reply = await gather(adapter.execute(target, ASK, stream=True, timeout=20.0))
                assert (reply.text, reply.usage.input_tokens, reply.usage.output_tokens) == ("Bonjour", 6, 1)
            assert upstream.requests == 3  # refused once, then asked without it twice


async def test_a_first_stream_left_half_read_gives_its_connection_back_at_once() -> None:
    """The first stream to a base is read through one generator more; a
    caller that stops reading it (a stopped seat) closes the stream under
    it too, so the upstream sees the connection closed."""
    endless = [SSE_HEAD, *(sse(chunk(content="and ")) for _ in range(20000))]
    with HostileUpstream(lambda _request: endless) as upstream:
        async with OutboundClient() as outbound:
            chunks = adapter_for("openai", outbound).execute(
                Target("q", "openai", upstream.base, "m"), ASK, stream=True, timeout=20.0
            )
            assert [type(await anext(chunks)).__name__ for _ in range(2)] == ["ResponseHeaders", "TextDelta"]
            assert outbound.in_flight == 1
            await chunks.aclose()  # type: ignore[attr-defined]
            assert outbound.in_flight == 0  # given back now, not when the collector finds the stream
            for _ in range(200):
                if upstream.cut:
                    break
                await asyncio.sleep(0.01)
    assert upstream.cut == 1


async def test_a_422_for_anything_else_is_not_asked_again() -> None:
    body = (
        b'{"object": "error", "message": "temperature must be at most 1.5", "type": "invalid_request_error"}'
    )
    head = b"HTTP/1.1 422 Unprocessable Entity\r\ncontent-type: application/json\r\nconnection: close\r\n\r\n"
    found = await failure("openai", head, body)
    assert (found.status, found.message) == (422, "temperature must be at most 1.5")


async def test_openrouter_error_inside_a_200_stream_fails_the_seat_with_its_message() -> None:
    error = {
        "object": "chat.completion.chunk",
        "error": {"code": 502, "message": "Provider disconnected unexpectedly"},
        "choices": [{"index": 0, "delta": {"content": ""}, "finish_reason": "error"}],
    }
    body = b": OPENROUTER PROCESSING\n\n" + sse(chunk(content="Par"), error)
    found = await failure("openai", SSE_HEAD, body)
    assert "Provider disconnected unexpectedly" in found.message
    assert found.status == 502 and found.after_first_byte


async def test_openai_stream_ending_without_done_after_its_finish_is_whole() -> None:
    """Some OpenAI-compatible servers never send `[DONE]`; the finish reason
    came and the body ended: the reply is whole, as the SDK reads it."""
    reply, _ = await ask("openai", SSE_HEAD, sse(chunk(content="hi"), chunk("stop")), stream=True)
    assert (reply.text, reply.finish) == ("hi", "stop")


async def test_openai_stream_cut_before_any_finish_is_still_a_bad_reply() -> None:
    found = await failure("openai", SSE_HEAD, sse(chunk(content="hi")))
    assert isinstance(found, ProviderBadReply) and found.after_first_byte


@pytest.mark.parametrize(
    ("api", "event"),
    [
        ("openai", [1]),
        ("openai", {"choices": ["x"]}),
        ("openai", {"choices": [{"finish_reason": "stop", "delta": "x"}]}),
        ("anthropic", {"type": "message_delta", "delta": "x"}),
        ("gemini", {"candidates": ["x"]}),
        ("gemini", {"promptFeedback": "x"}),
    ],
)
async def test_an_event_of_the_wrong_shape_is_a_bad_reply_not_a_crash(api: str, event: Any) -> None:
    found = await failure(api, SSE_HEAD, sse(event))
    assert isinstance(found, ProviderBadReply) and "unexpected reply shape" in found.message


@pytest.mark.parametrize(
    ("api", "body"),
    [
        ("openai", {"choices": [{"index": 0, "message": {"content": "whole"}, "finish_reason": "length"}]}),
        (
            "anthropic",
            {"type": "message", "content": [{"type": "text", "text": "whole"}], "stop_reason": "max_tokens"},
        ),
        (
            "gemini",
            [
                {"candidates": [{"content": {"parts": [{"text": "who"}]}}]},
                {"candidates": [{"content": {"parts": [{"text": "le"}]}, "finishReason": "MAX_TOKENS"}]},
            ],
        ),
        (
            "ollama",
            {"message": {"role": "assistant", "content": "whole"}, "done": True, "done_reason": "length"},
        ),
    ],
    ids=["openai", "anthropic", "gemini-array", "ollama"],
)
async def test_a_server_that_ignores_stream_and_answers_json_is_read_as_a_whole_reply(
    api: str, body: Any
) -> None:
    text = json.dumps(body, indent=2).encode()  # pretty-printed, as a proxy's JSON often is
    reply, _ = await ask(api, JSON_HEAD, text, stream=True)
    assert (reply.text, reply.finish) == ("whole", "length")


async def test_a_server_that_streams_where_json_was_asked_is_read_as_the_whole_reply() -> None:
    """The other way round: `stream: false` answered with `text/event-stream`
    (some compatible servers and proxies), CRLF lines, a comment, usage on a
    chunk of its own and no blank line after the last event: the reply JSON
    would have made, usage and all."""
    chunk = {"id": "x", "object": "chat.completion.chunk", "model": "m"}
    events = [
        {**chunk, "choices": [{"index": 0, "delta": {"role": "assistant", "content": "Hel"}}]},
        {**chunk, "choices": [{"index": 0, "delta": {"content": "lo."}, "finish_reason": "length"}]},
        {**chunk, "choices": [], "usage": {"prompt_tokens": 3, "completion_tokens": 2}},
    ]
    body = b": keep-alive\r\n\r\n" + b"\r\n\r\n".join(b"data: " + json.dumps(e).encode() for e in events)
    reply, _ = await ask("openai", SSE_HEAD, body, stream=False, size=7)
    assert (reply.text, reply.finish) == ("Hello.", "length")
    assert (reply.usage.input_tokens, reply.usage.output_tokens) == (3, 2)


# --------------------------------------------------------------------- Anthropic


def named(name: str, data: dict[str, Any]) -> bytes:
    return b"event: " + name.encode() + b"\ndata: " + json.dumps({"type": name, **data}).encode() + b"\n\n"


START = named("message_start", {"message": {"usage": {"input_tokens": 9, "output_tokens": 1}}})
THINKING = (
    named("ping", {})
    + named("content_block_start", {"index": 0, "content_block": {"type": "thinking", "thinking": ""}})
    + named("content_block_delta", {"index": 0, "delta": {"type": "thinking_delta", "thinking": "Hmm."}})
    + named("content_block_delta", {"index": 0, "delta": {"type": "signature_delta", "signature": "EqQB"}})
    + named("content_block_stop", {"index": 0})
    + named("content_block_start", {"index": 1, "content_block": {"type": "redacted_thinking", "data": "xx"}})
    + named("content_block_stop", {"index": 1})
    + named("content_block_start", {"index": 2, "content_block": {"type": "text", "text": ""}})
    + named("ping", {})
    + named("content_block_delta", {"index": 2, "delta": {"type": "text_delta", "text": "Paris."}})
    + named("content_block_stop", {"index": 2})
)


@pytest.mark.parametrize(
    ("stop", "finish"),
    [("end_turn", "stop"), ("max_tokens", "length"), ("pause_turn", "stop"), ("refusal", "content_filter")],
)
async def test_anthropic_thinking_and_pings_are_not_the_answer_and_the_stop_reason_is_carried(
    stop: str, finish: str
) -> None:
    end = named("message_delta", {"delta": {"stop_reason": stop}, "usage": {"output_tokens": 12}})
    reply, _ = await ask(
        "anthropic", SSE_HEAD, START + THINKING + end + named("message_stop", {}), stream=True
    )
    assert (reply.text, reply.finish) == ("Paris.", finish)
    assert (reply.usage.input_tokens, reply.usage.output_tokens) == (9, 12)


async def test_anthropic_stream_whose_message_stop_lacks_its_blank_line_is_whole() -> None:
    end = named("message_delta", {"delta": {"stop_reason": "end_turn"}, "usage": {"output_tokens": 2}})
    body = START + THINKING + end + named("message_stop", {})[: -len(b"\n")]
    reply, _ = await ask("anthropic", SSE_HEAD, body, stream=True)
    assert (reply.text, reply.finish) == ("Paris.", "stop")


async def test_anthropic_stream_cut_before_its_stop_reason_is_still_a_bad_reply() -> None:
    found = await failure("anthropic", SSE_HEAD, START + THINKING)
    assert isinstance(found, ProviderBadReply) and found.after_first_byte


async def test_anthropic_whole_reply_skips_thinking_blocks() -> None:
    body = {
        "type": "message",
        "content": [
            {"type": "thinking", "thinking": "Hmm.", "signature": "EqQB"},
            {"type": "redacted_thinking", "data": "xx"},
            {"type": "text", "text": "Paris."},
        ],
        "stop_reason": "max_tokens",
        "usage": {"input_tokens": 9, "output_tokens": 12},
    }
    reply, _ = await ask("anthropic", JSON_HEAD, json.dumps(body).encode(), stream=False)
    assert (reply.text, reply.finish) == ("Paris.", "length")


async def test_anthropic_overloaded_error_mid_stream_fails_the_seat_with_its_message() -> None:
    error = {"error": {"type": "overloaded_error", "message": "Overloaded"}}
    found = await failure("anthropic", SSE_HEAD, START + THINKING + named("error", error))
    assert (found.message, found.status, found.after_first_byte) == ("Overloaded", 529, True)


# ------------------------------------------------------------------------ Gemini


def gemini(*parts: dict[str, Any], finish: str | None = None, **extra: Any) -> dict[str, Any]:
    candidate: dict[str, Any] = {"content": {"role": "model", "parts": list(parts)}, "index": 0}
    if finish:
        candidate["finishReason"] = finish
    return {"candidates": [candidate], **extra}


async def test_gemini_alt_sse_stream_drops_thought_parts_and_reads_usage_from_the_last_chunk() -> None:
    body = sse(
        gemini({"text": "Considering the capital.", "thought": True}),
        gemini({"text": "Par"}),
        gemini({"text": "is."}, finish="STOP"),
        {"usageMetadata": {"promptTokenCount": 4, "candidatesTokenCount": 2, "thoughtsTokenCount": 5}},
    ).replace(b"\n", b"\r\n")
    reply, seen = await ask("gemini", SSE_HEAD, body, stream=True)
    assert b":streamGenerateContent?alt=sse " in seen[0].split(b"\r\n")[0] + b" "
    assert (reply.text, reply.finish) == ("Paris.", "stop")
    assert (reply.usage.input_tokens, reply.usage.output_tokens) == (4, 7)


@pytest.mark.parametrize(
    "last",
    [
        {"candidates": [{"finishReason": "SAFETY", "index": 0, "safetyRatings": []}]},
        {"candidates": [{"content": {"parts": []}, "finishReason": "RECITATION", "index": 0}]},
        {"promptFeedback": {"blockReason": "PROHIBITED_CONTENT"}, "usageMetadata": {"promptTokenCount": 4}},
    ],
    ids=["safety", "recitation", "prompt-blocked"],
)
@pytest.mark.parametrize("stream", [True, False], ids=["stream", "whole"])
async def test_gemini_blocked_answers_end_as_content_filter_not_as_a_bad_reply(
    last: dict[str, Any], stream: bool
) -> None:
    if stream:
        reply, _ = await ask("gemini", SSE_HEAD, sse(last), stream=True)
    else:
        reply, _ = await ask("gemini", JSON_HEAD, json.dumps(last).encode(), stream=False)
    assert (reply.text, reply.finish) == ("", "content_filter")


@pytest.mark.parametrize(
    ("reason", "finish"),
    [
        ("UNEXPECTED_TOOL_CALL", "error"),
        ("MALFORMED_RESPONSE", "error"),
        ("IMAGE_PROHIBITED_CONTENT", "content_filter"),
    ],
)
async def test_gemini_newer_finish_reasons_without_text_do_not_read_as_a_whole_answer(
    reason: str, finish: str
) -> None:
    """An empty answer that ended `stop` looks whole; these did not end well."""
    reply, _ = await ask("gemini", SSE_HEAD, sse(gemini(finish=reason)), stream=True)
    assert (reply.text, reply.finish) == ("", finish)


async def test_gemini_whole_reply_drops_thought_parts() -> None:
    body = gemini({"text": "Hmm.", "thought": True}, {"text": "Paris."}, finish="STOP")
    reply, _ = await ask("gemini", JSON_HEAD, json.dumps(body).encode(), stream=False)
    assert reply.text == "Paris."


async def test_gemini_error_mid_stream_fails_the_seat_with_its_message() -> None:
    error = {"error": {"code": 503, "message": "The model is overloaded.", "status": "UNAVAILABLE"}}
    found = await failure("gemini", SSE_HEAD, sse(gemini({"text": "Par"}), error))
    assert (found.message, found.status, found.after_first_byte) == ("The model is overloaded.", 503, True)


# ------------------------------------------------------------------------ Ollama


def line(content: str = "", done: bool = False, **extra: Any) -> bytes:
    message = {
        "role": "assistant",
        "content": content,
        **({"thinking": extra.pop("thinking")} if "thinking" in extra else {}),
    }
    return json.dumps({"model": "m", "message": message, "done": done, **extra}).encode() + b"\n"


async def test_ollama_ndjson_split_mid_line_with_thinking_and_done_reason() -> None:
    body = (
        line(thinking="Let me see.")
        + line("Par")
        + line("is.")
        + line(done=True, done_reason="length", prompt_eval_count=5, eval_count=2)
    )
    for size in (1, 7, 64):
        reply, _ = await ask("ollama", NDJSON_HEAD, body, stream=True, size=size)
        assert (reply.text, reply.finish) == ("Paris.", "length"), size
        assert (reply.usage.input_tokens, reply.usage.output_tokens) == (5, 2)


async def test_ollama_whole_reply_keeps_thinking_out_of_the_answer() -> None:
    body = line("Paris.", done=True, thinking="Let me see.", done_reason="stop")
    reply, _ = await ask("ollama", JSON_HEAD, body, stream=False)
    assert (reply.text, reply.finish) == ("Paris.", "stop")


async def test_ollama_error_line_mid_stream_fails_the_seat_with_its_message() -> None:
    body = line("Par") + b'{"error":"an error was encountered while running the model: unexpected EOF"}\n'
    found = await failure("ollama", NDJSON_HEAD, body)
    assert "unexpected EOF" in found.message and found.after_first_byte


@pytest.mark.parametrize("stream", [True, False], ids=["stream", "whole"])
@pytest.mark.parametrize("api", ["openai", "anthropic", "gemini", "ollama"])
async def test_the_fake_providers_thinking_is_never_the_answer(api: str, stream: bool) -> None:
    with FakeProvider([FakeModel("deep", answer="Paris.", thinking="The capital is asked.")]) as fake:
        async with OutboundClient() as outbound:
            adapter = adapter_for(api, outbound)  # type: ignore[arg-type]
            target = Target("fake", api, fake.base_for(api), "deep")  # type: ignore[arg-type]
            reply = await gather(adapter.execute(target, ASK, stream=stream, timeout=20.0))
    assert (reply.text, reply.finish) == ("Paris.", "stop")
