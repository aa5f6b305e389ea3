"""The pure parts of the error mapping: durations, retry-after sources,
error messages from each API's body, and the SSE / NDJSON reader."""

from __future__ import annotations

import email.utils
import itertools
import random
import time

import pytest

from benchwarmers.durations import parse_duration
from benchwarmers.errors import ProviderAuthError, ProviderError, ProviderRateLimited
from benchwarmers.providers.sse import Frames, Framing, SseEvent
from benchwarmers.providers.transport import error_message, retry_after_seconds, status_error

pytestmark = pytest.mark.unit


@pytest.mark.parametrize(
    ("text", "seconds"),
    [
        ("6m0s", 360),
        ("1.5s", 1.5),
        ("20ms", 0.02),
        ("1h2m3s", 3723),
        ("30 seconds", 30),
        ("12", 12),
        ("2 min", 120),
    ],
)
def test_parse_duration(text: str, seconds: float) -> None:
    assert parse_duration(text) == pytest.approx(seconds)


@pytest.mark.parametrize("text", ["soon", "6 parsecs", ""])
def test_parse_duration_refuses_what_it_cannot_read(text: str) -> None:
    assert parse_duration(text) is None


def test_retry_after_sources_in_order() -> None:
    assert retry_after_seconds({"retry-after-ms": "1500", "retry-after": "9"}) == 1.5
    assert retry_after_seconds({"retry-after": "9"}) == 9
    date = email.utils.formatdate(time.time() + 60, usegmt=True)
    assert retry_after_seconds({"retry-after": date}) == pytest.approx(60, abs=1.5)
    gemini = {"error": {"details": [{"@type": "x.RetryInfo", "retryDelay": "7s"}]}}
    assert retry_after_seconds({}, "Please retry in 1.5s", gemini) == 7
    assert retry_after_seconds({}, "Rate limit reached. Please try again in 6m0s. Visit our docs") == 360
    assert retry_after_seconds({}, "Please retry in 1.5s.") == 1.5
    assert retry_after_seconds({}, "quota of 100 requests per day") is None


@pytest.mark.parametrize(
    "body",
    [
        {"error": {"message": "bad thing", "type": "invalid_request_error"}},
        {"type": "error", "error": {"type": "api_error", "message": "bad thing"}},
        {"error": {"code": 400, "message": "bad thing", "status": "INVALID_ARGUMENT"}},
        [{"error": {"code": 400, "message": "bad thing", "status": "INVALID_ARGUMENT"}}],
        {"error": "bad thing"},
    ],
)
def test_error_message_from_each_apis_body(body: object) -> None:
    assert error_message(body) == "bad thing"


def test_status_error_types_and_text_bodies() -> None:
    assert type(status_error(401, {}, b"{}")) is ProviderAuthError
    limited = status_error(400, {}, b'{"error": {"status": "RESOURCE_EXHAUSTED", "message": "quota"}}')
    assert type(limited) is ProviderRateLimited
    plain = status_error(502, {"x": "1"}, b"<html>Bad Gateway</html>")
    assert (
        type(plain) is ProviderError
        and plain.message == "<html>Bad Gateway</html>"
        and plain.headers == {"x": "1"}
    )
    assert str(plain) == "HTTP 502: <html>Bad Gateway</html>"


def _framed(framing: Framing, raw: bytes) -> list[SseEvent]:
    """`raw` fed to one reader cut at every place in turn (a piece may end
    anywhere: mid-line, mid-CRLF, mid-character), each cut read alike."""
    seen = []
    for cut in range(len(raw) + 1):
        frames = Frames(framing)
        seen.append([*frames.feed(raw[:cut]), *frames.feed(raw[cut:]), *frames.end()])
    assert all(each == seen[0] for each in seen), seen
    return seen[0]


def test_sse_events_dispatch_on_blank_lines_and_drop_a_cut_event() -> None:
    raw = b"event: a\ndata: {\ndata: }\n\n: comment\ndata:x\n\ndata: cut"
    assert _framed("sse", raw) == [SseEvent("a", "{\n}"), SseEvent("", "x")]


def test_sse_lines_end_at_cr_lf_or_crlf_only() -> None:
    raw = "event: a\r\ndata: {\r\ndata: }\r\n\r\n: c\rdata:é\u2028x\r\r".encode()
    assert _framed("sse", raw) == [SseEvent("a", "{\n}"), SseEvent("", "é\u2028x")]


def test_ndjson_skips_blank_lines() -> None:
    assert _framed("ndjson", b'{"a": 1}\n\n  {"b": 2} ') == [
        SseEvent("", '{"a": 1}'),
        SseEvent("", '{"b": 2}'),
    ]


def test_plain_data_events_read_a_block_at_a_time_as_line_by_line(monkeypatch: pytest.MonkeyPatch) -> None:
    """Streams of `data: ` events, most of them one line each (read a block
    at a time) mixed with named, multi-line, comment, CR and blank-line
    ones, cut into random pieces: the same events as the line reader alone."""
    kinds = [
        "data: {}\n\n",
        'data: {"a": 1}\n\n',
        "data: [DONE]\n\n",
        "event: e\ndata: x\n\n",
        "data: one\ndata: two\n\n",
        ": comment\n\n",
        "data:tight\n\n",
        "\n",
        "data: cr\r\n\r\n",
        "data: é\u2028\n\n",
    ]
    rng = random.Random(37)
    streams = ["".join(rng.choice(kinds) for _ in range(rng.randrange(1, 12))).encode() for _ in range(300)]

    def read(raw: bytes, cuts: list[int]) -> list[SseEvent]:
        frames = Frames("sse")
        got: list[SseEvent] = []
        for start, end in itertools.pairwise([0, *cuts, len(raw)]):
            got += frames.feed(raw[start:end])
        return [*got, *frames.end()]

    for raw in streams:
        cuts = sorted(rng.sample(range(len(raw) + 1), min(len(raw) + 1, rng.randrange(0, 4))))
        fast = read(raw, cuts)
        with monkeypatch.context() as patched:
            patched.setattr(Frames, "_plain", lambda self, text, events: text)
            assert fast == read(raw, cuts), raw
