"""Our outbound client fuzzed against an upstream speaking raw bytes
(hypothesis): broken heads, chunk framing and encodings end as a
`ProviderError` (never another exception, never a hang past the deadline),
and a valid reply, however it is framed, encoded and cut into pieces on
the wire, reads back as the JSON that was sent."""

from __future__ import annotations

import asyncio
import contextlib
import gzip
import itertools
import json
import zlib
from collections.abc import Iterable, Iterator
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from benchwarmers.errors import ProviderError
from benchwarmers.providers.outbound import OutboundClient
from benchwarmers.providers.transport import Transport
from benchwarmers.testing.hostile import HostileUpstream

pytestmark = pytest.mark.integration

DEADLINE = 5.0
FUZZ = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])


class _Scripted:
    """The reply the upstream gives next, set by each example."""

    def __init__(self) -> None:
        self.pieces: list[bytes] = []

    def __call__(self, _request: bytes) -> Iterable[bytes]:
        return list(self.pieces)


@pytest.fixture(scope="module")
def upstream() -> Iterator[tuple[HostileUpstream, _Scripted]]:
    script = _Scripted()
    with HostileUpstream(script) as server:
        yield server, script


def _post(base: str) -> Any:
    async def go() -> Any:
        async with OutboundClient() as outbound:
            _, body = await Transport(outbound).post_json(
                base + "/chat/completions", {"model": "m"}, headers={}, timeout=DEADLINE
            )
            return body

    return asyncio.run(go())


def _split(data: bytes, cuts: list[int]) -> list[bytes]:
    points = sorted({c % (len(data) + 1) for c in cuts} | {0, len(data)})
    return [data[a:b] for a, b in itertools.pairwise(points) if b > a]


STATUS_LINES = [b"HTTP/1.1 200 OK\r\n", b"HTTP/1.1 500 X\r\n", b"HTTP/1.0 200\r\n", b"HTTP/9 2\r\n", b""]
header_names = st.sampled_from(
    ["content-length", "transfer-encoding", "content-encoding", "content-type", "connection", "x-a", ""]
)
header_values = st.one_of(
    st.sampled_from(["chunked", "gzip", "deflate", "br", "identity", "close", "-1", "0", "5", "99999999999"]),
    st.binary(max_size=20).map(lambda b: b.decode("latin-1")),
)
heads = st.builds(
    lambda line, fields: line + b"".join(f"{n}: {v}\r\n".encode("latin-1") for n, v in fields) + b"\r\n",
    st.sampled_from(STATUS_LINES) | st.binary(max_size=30),
    st.lists(st.tuples(header_names, header_values), max_size=6),
)
bodies = st.one_of(
    st.binary(max_size=200),
    st.builds(  # chunk framing, sizes in hex that may lie
        lambda sizes, data: b"".join(b"%x\r\n%s\r\n" % (size, data[:size]) for size in sizes) + b"0\r\n\r\n",
        st.lists(st.integers(0, 40), max_size=5),
        st.binary(max_size=60),
    ),
    st.binary(max_size=200).map(gzip.compress).map(lambda b: b[: len(b) // 2]),  # a gzip body cut short
)


@FUZZ
@given(head=heads, body=bodies, cuts=st.lists(st.integers(0, 400), max_size=4))
def test_a_broken_reply_is_a_provider_error_or_a_reply(
    upstream: tuple[HostileUpstream, _Scripted], head: bytes, body: bytes, cuts: list[int]
) -> None:
    server, script = upstream
    script.pieces = _split(head + body, cuts)
    with contextlib.suppress(ProviderError):  # what a broken reply must end as, if it ends badly
        _post(server.base)


def _framed(payload: bytes, framing: str, encoding: str) -> bytes:
    packers = {"identity": bytes, "gzip": gzip.compress, "deflate": zlib.compress}
    encoded = packers[encoding](payload)
    head = b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\n"
    if encoding != "identity":
        head += b"content-encoding: %s\r\n" % encoding.encode()
    if framing == "length":
        return head + b"content-length: %d\r\n\r\n" % len(encoded) + encoded
    if framing == "close":
        return head + b"connection: close\r\n\r\n" + encoded
    chunks = [encoded[i : i + 7] for i in range(0, len(encoded), 7)]
    framed = b"".join(b"%x\r\n" % len(c) + c + b"\r\n" for c in chunks)
    return head + b"transfer-encoding: chunked\r\n\r\n" + framed + b"0\r\n\r\n"


json_values = st.recursive(
    st.none() | st.booleans() | st.integers(-(10**6), 10**6) | st.text(max_size=30),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4),
    max_leaves=12,
)


@FUZZ
@given(
    value=st.dictionaries(st.text(max_size=8), json_values, max_size=4),
    framing=st.sampled_from(["length", "close", "chunked"]),
    encoding=st.sampled_from(["identity", "gzip", "deflate"]),
    cuts=st.lists(st.integers(0, 2000), max_size=6),
)
def test_a_valid_reply_reads_back_however_framed_encoded_and_cut(
    upstream: tuple[HostileUpstream, _Scripted],
    value: dict[str, Any],
    framing: str,
    encoding: str,
    cuts: list[int],
) -> None:
    server, script = upstream
    script.pieces = _split(_framed(json.dumps(value).encode(), framing, encoding), cuts)
    assert _post(server.base) == value
