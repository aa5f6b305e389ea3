"""An instant OpenAI-compatible upstream for gateway benchmarks.

A gateway benchmark should measure the gateway, not the model: this server
answers every `POST .../chat/completions` with one fixed completion (or a
fixed three-event stream when the body asks `"stream": true`), after an
optional fixed delay, straight from an asyncio `Protocol` with no framework
in between, so it does on the order of 100k requests/s on one core and is
never the bottleneck of what stands in front of it. `GET .../models` lists
the one model, for gateways that check what an endpoint serves. Under
`/limited/v1` it answers the same with OpenAI's rate-limit headers (limits
far above any load), as a provider does that a gateway learns limits from.

    .venv/bin/python benchmarks/upstream.py [--port 0] [--delay 0.0]
    # prints "listening on http://127.0.0.1:PORT/v1", then serves until killed

Only what a benchmark needs of HTTP/1.1: keep-alive, pipelining and
`Content-Length` bodies (no chunked uploads, which no client here sends).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys

MODEL = "alpha"
ANSWER = "Hello from the instant upstream."
USAGE = {"prompt_tokens": 9, "completion_tokens": 6, "total_tokens": 15}


def _http(body: bytes, content_type: bytes) -> bytes:
    return (
        b"HTTP/1.1 200 OK\r\ncontent-type: "
        + content_type
        + b"\r\ncontent-length: "
        + str(len(body)).encode()
        + b"\r\nconnection: keep-alive\r\n\r\n"
        + body
    )


def _completion() -> bytes:
    body = {
        "id": "chatcmpl-instant",
        "object": "chat.completion",
        "created": 1_700_000_000,
        "model": MODEL,
        "choices": [
            {"index": 0, "message": {"role": "assistant", "content": ANSWER}, "finish_reason": "stop"}
        ],
        "usage": USAGE,
    }
    return _http(json.dumps(body).encode(), b"application/json")


def _stream() -> bytes:
    """The whole stream in one write: role and text, finish, usage, [DONE]."""
    base = {"id": "chatcmpl-instant", "object": "chat.completion.chunk", "created": 1_700_000_000}
    events = [
        {
            **base,
            "model": MODEL,
            "choices": [
                {"index": 0, "delta": {"role": "assistant", "content": ANSWER}, "finish_reason": None}
            ],
        },
        {**base, "model": MODEL, "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]},
        {**base, "model": MODEL, "choices": [], "usage": USAGE},
    ]
    body = b"".join(b"data: " + json.dumps(e).encode() + b"\n\n" for e in events) + b"data: [DONE]\n\n"
    return _http(body, b"text/event-stream")


def _models() -> bytes:
    body = {"object": "list", "data": [{"id": MODEL, "object": "model", "owned_by": "bench"}]}
    return _http(json.dumps(body).encode(), b"application/json")


# What a provider with rate limits says on every reply (OpenAI's headers),
# far above any load here: answered under `LIMITED_PREFIX`, so one upstream
# serves an endpoint whose limits are learned from headers and one without.
LIMITED_PREFIX = b"/limited/"
LIMIT_HEADERS = (
    b"x-ratelimit-limit-requests: 100000000\r\nx-ratelimit-remaining-requests: 99999999\r\n"
    b"x-ratelimit-reset-requests: 1s\r\nx-ratelimit-limit-tokens: 10000000000\r\n"
    b"x-ratelimit-remaining-tokens: 9999999000\r\nx-ratelimit-reset-tokens: 1s\r\n"
)


def _limited(reply: bytes) -> bytes:
    """`reply` with the rate-limit headers after its status line."""
    status_line, _, rest = reply.partition(b"\r\n")
    return status_line + b"\r\n" + LIMIT_HEADERS + rest


COMPLETION, STREAM, MODELS = _completion(), _stream(), _models()
LIMITED_COMPLETION, LIMITED_STREAM = _limited(COMPLETION), _limited(STREAM)
NOT_FOUND = b"HTTP/1.1 404 Not Found\r\ncontent-length: 0\r\nconnection: keep-alive\r\n\r\n"


class InstantUpstream(asyncio.Protocol):
    def __init__(self, delay: float) -> None:
        self.delay = delay
        self.buffer = b""
        self.transport: asyncio.Transport | None = None

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport  # type: ignore[assignment]

    def data_received(self, data: bytes) -> None:
        self.buffer += data
        while True:
            head_end = self.buffer.find(b"\r\n\r\n")
            if head_end < 0:
                return
            head = self.buffer[:head_end]
            length = _content_length(head)
            end = head_end + 4 + length
            if len(self.buffer) < end:
                return
            body = self.buffer[head_end + 4 : end]
            self.buffer = self.buffer[end:]
            self._answer(_reply(head, body))

    def _answer(self, reply: bytes) -> None:
        if self.delay > 0:
            asyncio.get_running_loop().call_later(self.delay, self._write, reply)
        else:
            self._write(reply)

    def _write(self, reply: bytes) -> None:
        if self.transport is not None and not self.transport.is_closing():
            self.transport.write(reply)

    def connection_lost(self, exc: Exception | None) -> None:
        self.transport = None


def _content_length(head: bytes) -> int:
    lowered = head.lower()
    at = lowered.find(b"\r\ncontent-length:")
    if at < 0:
        return 0
    start = at + len(b"\r\ncontent-length:")
    stop = lowered.find(b"\r\n", start)
    return int(lowered[start : stop if stop >= 0 else len(lowered)].strip())


def _reply(head: bytes, body: bytes) -> bytes:
    request_line = head.split(b"\r\n", 1)[0]
    method, _, rest = request_line.partition(b" ")
    path = rest.partition(b" ")[0].split(b"?", 1)[0]
    if method == b"POST" and path.endswith(b"/chat/completions"):
        streamed = b'"stream": true' in body or b'"stream":true' in body
        if path.startswith(LIMITED_PREFIX):
            return LIMITED_STREAM if streamed else LIMITED_COMPLETION
        return STREAM if streamed else COMPLETION
    if method == b"GET" and path.endswith(b"/models"):
        return MODELS
    return NOT_FOUND


async def serve(port: int, delay: float) -> None:
    loop = asyncio.get_running_loop()
    server = await loop.create_server(lambda: InstantUpstream(delay), "127.0.0.1", port, backlog=4096)
    bound = server.sockets[0].getsockname()[1]
    print(f"listening on http://127.0.0.1:{bound}/v1", flush=True)
    async with server:
        await server.serve_forever()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--port", type=int, default=0, help="0 picks a free port (printed on start)")
    parser.add_argument("--delay", type=float, default=0.0, help="seconds before each reply")
    args = parser.parse_args()
    try:
        import uvloop

        runner = asyncio.Runner(loop_factory=uvloop.new_event_loop)
    except ImportError:
        runner = asyncio.Runner()
    try:
        with runner:
            runner.run(serve(args.port, args.delay))
    except KeyboardInterrupt:
        pass
    return 0


if __name__ == "__main__":
    sys.exit(main())
