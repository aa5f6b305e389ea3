"""A hostile upstream against our outbound client, written as the attacks
(issue 36, attacks 1 and 2): a 64 MB header, 200k small headers, a gzip
bomb. Each is refused as a provider error naming the cap it broke, the
event loop keeps turning meanwhile (on 3fd40b0 the header bomb stopped it
for seconds: httptools joined the header's pieces by copying), and a gzip
bomb never holds more than the size cap.

The upstream runs in threads of its own (`testing.hostile`), so every stall
measured here is our client's."""

from __future__ import annotations

import asyncio
import json
import random
import time
import tracemalloc
from collections.abc import Awaitable, Callable, Iterable

import pytest

from benchwarmers.errors import ProviderBadReply
from benchwarmers.providers import transport, wire
from benchwarmers.providers.openai import OpenAIAdapter
from benchwarmers.providers.outbound import OutboundClient
from benchwarmers.providers.transport import Transport
from benchwarmers.testing.hostile import HostileUpstream, bomb_head, gzip_bomb, gzipped, many_headers

pytestmark = pytest.mark.integration

# The loop's longest pause allowed while an attack is read: a wide margin (the attack stalled it 5-11 s).
STALL_LIMIT = 1.0


async def _longest_pause_while(work: Callable[[], Awaitable[object]]) -> tuple[object, float]:
    """What `work` ended with (its exception included), and the longest gap
    between two turns of a ticker running beside it on the same loop."""
    longest = 0.0
    running = True

    async def ticker() -> None:
        nonlocal longest
        last = time.monotonic()
        while running:
            await asyncio.sleep(0.005)
            now = time.monotonic()
            longest = max(longest, now - last)
            last = now

    ticking = asyncio.create_task(ticker())
    try:
        outcome: object = await work()
    except Exception as error:
        outcome = error
    finally:
        running = False
        await ticking
    return outcome, longest


async def _post(upstream: HostileUpstream) -> object:
    async with OutboundClient() as outbound:
        return await Transport(outbound).post_json(
            upstream.base + "/chat/completions", {"model": "m"}, headers={}, timeout=60.0
        )


@pytest.mark.parametrize(
    ("attack", "says"),
    [
        (lambda _head: bomb_head(), f"head is larger than {wire.MAX_HEAD_BYTES // 1024} KB"),
        (lambda _head: many_headers(), f"more than {wire.MAX_HEADERS} header fields"),
    ],
    ids=["a-64-MB-header", "200k-headers"],
)
async def test_a_head_bomb_is_refused_naming_the_cap_and_the_loop_keeps_turning(
    attack: Callable[[bytes], Iterable[bytes]], says: str
) -> None:
    with HostileUpstream(attack) as upstream:
        outcome, pause = await _longest_pause_while(lambda: _post(upstream))
    assert isinstance(outcome, ProviderBadReply), outcome
    assert says in str(outcome)
    assert pause < STALL_LIMIT, f"the event loop stopped for {pause:.2f} s"


async def test_a_head_just_under_the_caps_is_read() -> None:
    fields = [b"x-%d: %s\r\n" % (i, b"v" * 100) for i in range(wire.MAX_HEADERS - 2)]
    reply = b"HTTP/1.1 200 OK\r\n" + b"".join(fields) + b"content-length: 2\r\n\r\n{}"
    with HostileUpstream(lambda _head: [reply]) as upstream:
        _, body = await _post(upstream)  # type: ignore[misc]
    assert body == {}


async def _post_traced(reply: bytes) -> tuple[object, float, int]:
    """Post to an upstream that sends `reply`: the outcome, the event loop's
    longest pause meanwhile, and the peak of memory Python allocated."""
    with HostileUpstream(lambda _head: [reply]) as upstream:
        tracemalloc.start()
        try:
            outcome, pause = await _longest_pause_while(lambda: _post(upstream))
            _, peak = tracemalloc.get_traced_memory()
        finally:
            tracemalloc.stop()
    return outcome, pause, peak


async def test_a_gzip_bomb_is_refused_by_its_ratio_after_about_a_megabyte() -> None:
    bomb = gzip_bomb()  # 512 MB of zeros in ~500 KB: ~1000:1
    outcome, pause, peak = await _post_traced(bomb)
    assert isinstance(outcome, ProviderBadReply), outcome
    assert f"inflates more than {wire.MAX_INFLATION_RATIO}:1" in str(outcome)
    # The floor, a piece or two in flight and the compressed body; the size cap alone held 32 MB.
    assert peak < wire.INFLATION_FLOOR + 6 * 2**20, f"peak {peak / 2**20:.0f} MB"
    assert pause < STALL_LIMIT, f"the event loop stopped for {pause:.2f} s"


async def test_a_gzip_body_past_the_size_cap_is_refused_with_memory_bounded_by_the_cap(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(wire, "MAX_INFLATION_RATIO", 10**9)  # only the size cap, counted on inflated bytes
    bomb = gzip_bomb()
    outcome, pause, peak = await _post_traced(bomb)
    assert isinstance(outcome, ProviderBadReply), outcome
    assert f"larger than {transport.MAX_REPLY_BYTES // 2**20} MB" in str(outcome)
    # The cap, plus a piece or two in flight; on 3fd40b0 the whole 512 MB was inflated at once.
    assert peak < transport.MAX_REPLY_BYTES + 16 * 2**20, f"peak {peak / 2**20:.0f} MB"
    assert pause < STALL_LIMIT, f"the event loop stopped for {pause:.2f} s"


async def test_a_gzip_bomb_in_a_stream_is_refused_as_it_inflates() -> None:
    bomb = gzip_bomb(64 * 2**20).replace(b"application/json", b"text/event-stream")
    with HostileUpstream(lambda _head: [bomb]) as upstream:
        async with OutboundClient() as outbound:
            stream = Transport(outbound).stream(
                upstream.base + "/chat/completions",
                {"model": "m"},
                headers={},
                timeout=60.0,
                framing="sse",
                decoder=OpenAIAdapter(outbound).decoder(),
            )
            with pytest.raises(ProviderBadReply, match=f"inflates more than {wire.MAX_INFLATION_RATIO}:1"):
                async for _ in stream:
                    pass


async def test_an_honest_gzip_reply_past_the_ratio_floor_reads_whole() -> None:
    words = random.Random(36)
    text = " ".join(str(words.getrandbits(24)) for _ in range(wire.INFLATION_FLOOR // 4))
    with HostileUpstream(lambda _head: [gzipped(200, json.dumps({"text": text}).encode())]) as upstream:
        _, body = await _post(upstream)  # type: ignore[misc]
    assert body == {"text": text}


async def test_an_honest_gzip_reply_larger_than_one_inflated_piece_reads_whole() -> None:
    text = b'{"text": "' + b"word " * (wire.INFLATED_PIECE // 2) + b'"}'
    with HostileUpstream(lambda _head: [gzipped(200, text)]) as upstream:
        _, body = await _post(upstream)  # type: ignore[misc]
    assert body == {"text": "word " * (wire.INFLATED_PIECE // 2)}
