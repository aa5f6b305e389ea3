"""Every scripted fault, on every API, streaming and not, comes out as the
one normalised error: its type, status, message, retry_after, headers and
whether any content had reached the caller."""

from __future__ import annotations

import time

import pytest

from benchwarmers.errors import (
    ProviderAuthError,
    ProviderBadReply,
    ProviderConnectError,
    ProviderError,
    ProviderRateLimited,
    ProviderTimeout,
)
from benchwarmers.providers.base import Target
from benchwarmers.providers.kinds import adapter_for
from benchwarmers.providers.outbound import OutboundClient
from benchwarmers.testing import FakeError, FakeModel, FakeProvider, RateLimit
from benchwarmers.types import API_KINDS, Request, TextDelta, user
from tests.serving import free_port

from .conftest import Call

BOTH = pytest.mark.parametrize("stream", [False, True], ids=["whole", "stream"])
APIS = pytest.mark.parametrize("api", API_KINDS)
ASK = Request((user("hello"),))
LONG = "one two three four five six seven eight"


@APIS
@BOTH
@pytest.mark.parametrize(
    ("status", "kind"),
    [
        (500, ProviderError),
        (503, ProviderError),
        (400, ProviderError),
        (401, ProviderAuthError),
        (403, ProviderAuthError),
    ],
)
async def test_error_status_maps_to_its_type_with_the_message(
    call: Call, fake_provider: FakeProvider, api: str, stream: bool, status: int, kind: type[ProviderError]
) -> None:
    fake_provider.add(FakeModel("m1", error=FakeError(status, "the model is on fire")))
    with pytest.raises(ProviderError) as caught:
        await call(api, ASK, stream=stream)
    error = caught.value
    assert type(error) is kind
    assert (error.status, error.message, error.after_first_byte) == (status, "the model is on fire", False)
    assert error.headers["content-type"] == "application/json"


@APIS
async def test_unknown_model_is_a_404_with_the_providers_message(
    call: Call, fake_provider: FakeProvider, api: str
) -> None:
    with pytest.raises(ProviderError) as caught:
        await call(api, ASK, stream=False, served="nope")
    assert caught.value.status == 404 and "nope" in caught.value.message


@APIS
async def test_wrong_key_is_an_auth_error(call: Call, fake_provider: FakeProvider, api: str) -> None:
    fake_provider.add(FakeModel("m1"))
    fake_provider.key = "sk-right"
    with pytest.raises(ProviderAuthError) as caught:
        await call(api, ASK, stream=False, key="sk-wrong")
    assert caught.value.status == 401


@APIS
@BOTH
@pytest.mark.parametrize(
    ("style", "retry", "expected"),
    [
        ("openai", 360.0, 360.0),
        ("anthropic", 30.0, 30.0),
        ("gemini", 1.5, 1.5),
        ("retry-after", 20.0, 20.0),
        ("retry-after-date", 120.0, 120.0),
        ("retry-after-ms", 1.5, 1.5),
        ("body", 20.0, 20.0),
        ("day", 86400.0, None),
    ],
)
async def test_rate_limit_styles_give_retry_after(
    call: Call,
    fake_provider: FakeProvider,
    api: str,
    stream: bool,
    style: str,
    retry: float,
    expected: float | None,
) -> None:
    limit = RateLimit(style, retry=retry)  # type: ignore[arg-type]
    fake_provider.add(FakeModel("m1", rate_limit=limit))
    with pytest.raises(ProviderRateLimited) as caught:
        await call(api, ASK, stream=stream)
    error = caught.value
    assert error.status == 429 and not error.after_first_byte
    if style == "gemini" and api != "gemini":
        # Only Gemini's body carries RetryInfo; the others still have the phrase.
        assert error.retry_after == pytest.approx(1.5)
    elif expected is None:
        assert error.retry_after is None
        assert "per day" in error.message
    else:
        # An HTTP date has one-second resolution.
        assert error.retry_after == pytest.approx(expected, abs=1.5)
    for name in limit.headers():
        assert name.lower() in error.headers


@APIS
@BOTH
async def test_malformed_json_is_a_bad_reply(
    call: Call, fake_provider: FakeProvider, api: str, stream: bool
) -> None:
    fake_provider.add(FakeModel("m1", answer=LONG, malformed_json=True))
    with pytest.raises(ProviderBadReply) as caught:
        await call(api, ASK, stream=stream)
    assert "not JSON" in caught.value.message
    assert caught.value.status == 200
    # A stream had given its first piece before the broken line.
    assert caught.value.after_first_byte is stream


@APIS
@pytest.mark.parametrize("mode", ["close", "abort"])
async def test_stream_cut_midway_is_a_bad_reply_after_the_first_byte(
    outbound: OutboundClient, fake_provider: FakeProvider, api: str, mode: str
) -> None:
    fake_provider.add(FakeModel("m1", answer=LONG, cut_after=3, cut_mode=mode))  # type: ignore[arg-type]
    received: list[str] = []
    adapter = adapter_for(api, outbound)
    target = Target("fake", api, fake_provider.base_for(api), "m1")  # type: ignore[arg-type]
    with pytest.raises(ProviderBadReply) as caught:
        async for chunk in adapter.execute(target, ASK, stream=True, timeout=60):
            if isinstance(chunk, TextDelta):
                received.append(chunk.text)
    assert "".join(received) == "one two three "
    assert caught.value.after_first_byte is True
    assert caught.value.status == 200


@APIS
async def test_error_inside_a_stream_is_a_provider_error_after_the_first_byte(
    call: Call, fake_provider: FakeProvider, api: str
) -> None:
    fake_provider.add(FakeModel("m1", answer=LONG, cut_after=2, cut_mode="error"))
    with pytest.raises(ProviderError) as caught:
        await call(api, ASK, stream=True)
    error = caught.value
    assert type(error) is ProviderError
    assert error.message == "the model is overloaded" and error.after_first_byte is True
    assert error.status == (529 if api == "anthropic" else 500)


@APIS
async def test_stream_cut_before_any_content_is_before_the_first_byte(
    call: Call, fake_provider: FakeProvider, api: str
) -> None:
    fake_provider.add(FakeModel("m1", answer=LONG, cut_after=0))
    with pytest.raises(ProviderBadReply) as caught:
        await call(api, ASK, stream=True)
    assert caught.value.after_first_byte is False


@APIS
async def test_never_ending_stream_times_out_after_the_first_byte(
    call: Call, fake_provider: FakeProvider, api: str
) -> None:
    fake_provider.add(FakeModel("m1", answer="endless", never_ending=True))
    started = time.monotonic()
    with pytest.raises(ProviderTimeout) as caught:
        await call(api, ASK, stream=True, timeout=0.3)
    assert caught.value.after_first_byte is True
    assert time.monotonic() - started < 5


@APIS
async def test_reply_that_never_comes_times_out(call: Call, fake_provider: FakeProvider, api: str) -> None:
    fake_provider.add(FakeModel("m1", never_ending=True))
    with pytest.raises(ProviderTimeout) as caught:
        await call(api, ASK, stream=False, timeout=0.2)
    assert caught.value.after_first_byte is False


@APIS
@BOTH
async def test_slow_first_byte_times_out(
    call: Call, fake_provider: FakeProvider, api: str, stream: bool
) -> None:
    fake_provider.add(FakeModel("m1", ttfb=0.4))
    with pytest.raises(ProviderTimeout):
        await call(api, ASK, stream=stream, timeout=0.1)


@APIS
@BOTH
async def test_fail_first_calls_then_answer(
    call: Call, fake_provider: FakeProvider, api: str, stream: bool
) -> None:
    fake_provider.add(FakeModel("m1", answer="finally", error=FakeError(503, "busy"), fail_first=2))
    for _ in range(2):
        with pytest.raises(ProviderError, match="busy"):
            await call(api, ASK, stream=stream)
    chunks = await call(api, ASK, stream=stream)
    assert "".join(c.text for c in chunks if isinstance(c, TextDelta)) == "finally"
    assert fake_provider.calls["m1"] == 3


@APIS
async def test_nothing_listening_is_a_connect_error(outbound: OutboundClient, api: str) -> None:
    target = Target("gone", api, f"http://127.0.0.1:{free_port()}", "m1")  # type: ignore[arg-type]
    with pytest.raises(ProviderConnectError) as caught:
        [c async for c in adapter_for(api, outbound).execute(target, ASK, stream=False, timeout=5)]
    assert caught.value.status is None and not caught.value.after_first_byte
