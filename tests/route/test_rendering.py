"""The pure pieces of route mode: conversation keys, and one member's chunks
rendered as Anthropic events and OpenAI chunks (block order, tool-call
deltas, finish reasons an agent loops on)."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Sequence
from typing import Any

import pytest

from benchwarmers.errors import ProviderBadReply
from benchwarmers.formats import anthropic, anthropic_route, openai_route
from benchwarmers.formats.responses_route import ResponsesRoute
from benchwarmers.route.conversation import conversation_key
from benchwarmers.testing.sdk_types import check, check_all, sse_events
from benchwarmers.types import (
    Ask,
    Chunk,
    Finish,
    Message,
    Reply,
    Request,
    TextDelta,
    ToolCallDelta,
    Usage,
    UsageReport,
    user,
)

pytestmark = pytest.mark.unit

ASK = Ask("agents", "route", Request((user("hi"),)), stream=True)
BENCH = {"call": "c_test", "alias": "alpha"}
REPLY: list[Chunk] = [
    TextDelta("Let me look."),
    ToolCallDelta(0, "call_1", "Bash", ""),
    ToolCallDelta(0, arguments='{"command": '),
    ToolCallDelta(0, arguments='"ls"}'),
    ToolCallDelta(1, "call_2", "Read", '{"file_path": "a"}'),
    UsageReport(Usage(12, 7)),
    Finish("stop"),  # Gemini and Ollama say "stop" even when they called tools
]


async def _chunks(chunks: Sequence[Chunk | Exception]) -> AsyncIterator[Chunk]:
    for chunk in chunks:
        if isinstance(chunk, Exception):
            raise chunk
        yield chunk


async def anthropic_events(chunks: Sequence[Chunk | Exception]) -> list[dict[str, Any]]:
    out = []
    async for raw in anthropic_route.render_route_stream(_chunks(chunks), ASK, BENCH):
        event, data = raw.decode().strip().split("\n")
        assert event == "event: " + json.loads(data[len("data: ") :])["type"]
        out.append(json.loads(data[len("data: ") :]))
    return out


async def openai_chunks(chunks: Sequence[Chunk | Exception]) -> list[Any]:
    out: list[Any] = []
    async for raw in openai_route.render_route_stream(_chunks(chunks), ASK, BENCH):
        data = raw.decode().strip()[len("data: ") :]
        out.append(data if data == "[DONE]" else json.loads(data))
    return out


async def test_anthropic_blocks_follow_the_members_pieces() -> None:
    events = await anthropic_events(REPLY)
    assert [e["type"] for e in events] == [
        "message_start",
        "content_block_start",
        "content_block_delta",
        "content_block_stop",
        "content_block_start",
        "content_block_delta",
        "content_block_delta",
        "content_block_stop",
        "content_block_start",
        "content_block_delta",
        "content_block_stop",
        "message_delta",
        "message_stop",
    ]
    assert events[0]["message"]["bench"] == BENCH
    starts = [e for e in events if e["type"] == "content_block_start"]
    assert [s["index"] for s in starts] == [0, 1, 2]
    assert starts[1]["content_block"] == {"type": "tool_use", "id": "call_1", "name": "Bash", "input": {}}
    pieces = [e["delta"]["partial_json"] for e in events if e.get("index") == 1 and "delta" in e]
    assert json.loads("".join(pieces)) == {"command": "ls"}
    assert events[-2]["delta"]["stop_reason"] == "tool_use"
    assert events[-2]["usage"] == {"input_tokens": 12, "output_tokens": 7}


async def test_interleaved_tool_calls_and_late_failures_end_with_an_error_event() -> None:
    interleaved = [
        ToolCallDelta(0, "a", "Bash", "{"),
        ToolCallDelta(1, "b", "Read", "{}"),
        ToolCallDelta(0, "", "", "}"),
    ]
    events = await anthropic_events(interleaved)
    assert events[-1]["type"] == "error" and "interleaved" in events[-1]["error"]["message"]
    cut = [TextDelta("partial"), ProviderBadReply("the stream was cut", after_first_byte=True)]
    events = await anthropic_events(cut)
    assert events[-1] == {
        "type": "error",
        "error": {
            "type": "api_error",
            "message": "the model's provider failed mid-reply: the stream was cut",
        },
    }


async def test_openai_tool_call_deltas_and_finish() -> None:
    chunks = await openai_chunks(REPLY)
    assert chunks[-1] == "[DONE]"
    deltas = [c["choices"][0]["delta"] for c in chunks[:-1]]
    assert deltas[0] == {"role": "assistant", "content": ""}
    assert deltas[1] == {"content": "Let me look."}
    calls = [d["tool_calls"][0] for d in deltas if "tool_calls" in d]
    assert calls[0] == {
        "index": 0,
        "id": "call_1",
        "type": "function",
        "function": {"name": "Bash", "arguments": ""},
    }
    assert calls[1] == {"index": 0, "function": {"arguments": '{"command": '}}
    assert calls[3]["id"] == "call_2" and calls[3]["index"] == 1
    last = chunks[-2]
    assert last["choices"][0]["finish_reason"] == "tool_calls"
    assert last["usage"]["total_tokens"] == 19 and last["bench"] == BENCH
    failed = await openai_chunks([TextDelta("x"), ProviderBadReply("cut", after_first_byte=True)])
    assert "error" in failed[-1] and "cut" in failed[-1]["error"]["message"]


def test_conversation_keys_prefer_the_header_then_the_client_then_the_opening() -> None:
    request = Request((user("fix the bug"), Message("assistant", ()), user("and now?")), system="agent")
    same_opening = Request((user("fix the bug"),), system="agent")
    by_header = conversation_key("agents", request, header="ticket-7", client="user_1_session_2")
    by_client = conversation_key("agents", request, client="user_1_session_2")
    by_opening = conversation_key("agents", request)
    assert (
        by_header.startswith("header:")
        and by_client.startswith("client:")
        and by_opening.startswith("prompt:")
    )
    assert by_opening == conversation_key("agents", same_opening)
    assert by_opening != conversation_key("agents", Request((user("another bug"),), system="agent"))
    assert by_client != conversation_key("other", request, client="user_1_session_2")
    assert all(len(k) <= 80 and "session" not in k and "ticket" not in k for k in (by_header, by_client))


def test_an_image_in_a_tool_result_becomes_a_note_not_a_refusal() -> None:
    body = {
        "model": "bench/agents:route",
        "max_tokens": 100,
        "messages": [
            {"role": "user", "content": "look at the screenshot"},
            {"role": "assistant", "content": [{"type": "tool_use", "id": "t1", "name": "Read", "input": {}}]},
            {
                "role": "user",
                "content": [
                    {
                        "type": "tool_result",
                        "tool_use_id": "t1",
                        "content": [
                            {"type": "text", "text": "screenshot.png"},
                            {
                                "type": "image",
                                "source": {"type": "base64", "media_type": "image/png", "data": "AA"},
                            },
                        ],
                    }
                ],
            },
        ],
    }
    (result,) = anthropic.parse_ask(body).request.messages[-1].tool_results
    assert result.call_id == "t1"
    assert result.content.startswith("screenshot.png\n[the tool returned an image")


async def test_a_responses_reply_cut_at_its_limit_ends_its_message_incomplete() -> None:
    """A member cut at its output limit: the response is `incomplete` for
    `max_output_tokens` and so is its message item, whole and streamed
    (the item's status followed the response's nowhere before), under the
    openai SDK's own types."""
    route = ResponsesRoute({})
    ask = Ask("agents", "route", Request((user("count"),)), stream=False)
    whole = check("responses", route.render_route_reply(Reply("one two", finish="length"), ask, BENCH))
    assert (whole.status, whole.incomplete_details.reason) == ("incomplete", "max_output_tokens")
    assert [item.status for item in whole.output] == ["incomplete"]
    raw = b"".join(
        [
            piece
            async for piece in route.render_route_stream(
                _chunks([TextDelta("one two"), Finish("length")]), ASK, BENCH
            )
        ]
    )
    events = check_all("responses_event", sse_events(raw))
    done = [e.item.status for e in events if e.type == "response.output_item.done"]
    assert done == ["incomplete"] and events[-1].type == "response.incomplete"
    assert events[-1].response.output[0].status == "incomplete"
    kept = check("responses", route.render_route_reply(Reply("one two"), ask, BENCH))
    assert (kept.status, kept.output[0].status) == ("completed", "completed")
