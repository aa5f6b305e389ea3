"""Every dialect providers speak about limits folds into the same values."""

from __future__ import annotations

from datetime import UTC, datetime
from email.utils import format_datetime

import pytest

from benchwarmers.durations import parse_duration
from benchwarmers.limits import headers as headers_module
from benchwarmers.limits.headers import learn

pytestmark = pytest.mark.unit

NOW = 1_800_000_000.0  # a whole second, so HTTP dates (second resolution) compare exactly


def iso(seconds_from_now: float) -> str:
    return datetime.fromtimestamp(NOW + seconds_from_now, UTC).isoformat().replace("+00:00", "Z")


@pytest.mark.parametrize(
    ("text", "seconds"),
    [
        ("6m0s", 360.0),
        ("1m30.5s", 90.5),
        ("20ms", 0.02),
        ("1h2m3s", 3723.0),
        ("2.5s", 2.5),
        ("17", 17.0),
        ("0.25", 0.25),
    ],
)
def test_go_style_durations(text: str, seconds: float) -> None:
    assert parse_duration(text) == pytest.approx(seconds)


@pytest.mark.parametrize("text", ["", "soon", "5 parsecs", "m5"])
def test_what_is_not_a_duration(text: str) -> None:
    assert parse_duration(text) is None


def _key(limit):  # what a limit means, whatever dialect said it
    return (limit.unit, limit.limit, limit.remaining, round(limit.resets_at, 3))


def test_openai_and_anthropic_headers_give_the_same_limits() -> None:
    openai = learn(
        200,
        {
            "x-ratelimit-limit-requests": "60",
            "x-ratelimit-remaining-requests": "59",
            "x-ratelimit-reset-requests": "1m0s",
            "x-ratelimit-limit-tokens": "150000",
            "x-ratelimit-remaining-tokens": "149000",
            "x-ratelimit-reset-tokens": "400ms",
        },
        "",
        NOW,
    )
    anthropic = learn(
        200,
        {
            "anthropic-ratelimit-requests-limit": "60",
            "anthropic-ratelimit-requests-remaining": "59",
            "anthropic-ratelimit-requests-reset": iso(60),
            "anthropic-ratelimit-tokens-limit": "150000",
            "anthropic-ratelimit-tokens-remaining": "149000",
            "anthropic-ratelimit-tokens-reset": iso(0.4),
        },
        "",
        NOW,
    )
    assert sorted(map(_key, openai.limits)) == sorted(map(_key, anthropic.limits))
    assert sorted(map(_key, openai.limits)) == [
        ("requests", 60, 59, NOW + 60),
        ("tokens", 150000, 149000, round(NOW + 0.4, 3)),
    ]
    assert {limit.source for limit in openai.limits} == {"x-ratelimit"}
    assert {limit.source for limit in anthropic.limits} == {"anthropic-ratelimit"}


def test_header_names_in_any_case_and_named_windows() -> None:
    learned = learn(
        200,
        {
            "X-RateLimit-Limit-Requests-Day": "14400",
            "X-RateLimit-Remaining-Requests-Day": "14000",
            "X-RateLimit-Reset-Requests-Day": "2h0m0s",
        },
        "",
        NOW,
    )
    (limit,) = learned.limits
    assert (limit.unit, limit.window, limit.limit, limit.remaining) == ("requests", "day", 14400, 14000)
    assert limit.resets_at == NOW + 7200


@pytest.mark.parametrize(
    ("headers", "body"),
    [
        ({"retry-after": "20"}, ""),
        ({"retry-after-ms": "20000"}, ""),
        ({"retry-after": format_datetime(datetime.fromtimestamp(NOW + 20, UTC), usegmt=True)}, ""),
        ({}, "Rate limit reached for requests. Please try again in 20s."),
        ({}, "Resource has been exhausted. Please retry in 20.0s."),
        ({}, "Too many requests, try again in 20 seconds"),
        ({}, '{"error": {"details": [{"@type": "RetryInfo", "retryDelay": "20s"}]}}'),
    ],
)
def test_every_way_of_saying_come_back_in_20_seconds(headers: dict[str, str], body: str) -> None:
    assert learn(429, headers, body, NOW).retry_at == pytest.approx(NOW + 20)


def test_retry_after_ms_wins_over_retry_after() -> None:
    assert learn(429, {"retry-after": "3", "retry-after-ms": "1500"}, "", NOW).retry_at == NOW + 1.5


def test_the_transports_wait_counts_when_no_header_says_one() -> None:
    """The caller passes `ProviderError.retry_after`, read from a body the
    limiter never sees whole (Gemini's RetryInfo)."""
    assert learn(429, {}, "You exceeded your current quota.", NOW, retry_after=20).retry_at == NOW + 20
    assert learn(429, {"retry-after": "3"}, "", NOW, retry_after=20).retry_at == NOW + 3


def test_a_reply_that_says_nothing_of_limits_learns_nothing() -> None:
    plain = {"Content-Type": "application/json", "Date": "Mon, 30 Nov 2026 01:02:03 GMT"}
    assert learn(200, plain, "", NOW).empty
    assert learn(500, plain, "internal error", NOW).empty  # a body is read only on a 429
    assert learn(200, plain, "", NOW, retry_after=2).retry_at == NOW + 2
    limited = learn(429, plain, "Rate limit reached for requests per day (RPD): Limit 200, Used 200", NOW)
    assert [(x.unit, x.window, x.limit) for x in limited.limits] == [("requests", "day", 200)]


def test_openai_per_day_body() -> None:
    body = (
        "Rate limit reached for gpt-4o-mini in organization org-x on requests per day (RPD): "
        "Limit 200, Used 200, Requested 1. Please try again in 7m12s."
    )
    learned = learn(429, {}, body, NOW)
    (limit,) = learned.limits
    assert (limit.unit, limit.window, limit.limit, limit.remaining) == ("requests", "day", 200, 0)
    assert limit.resets_at == learned.retry_at == NOW + 432


def test_per_minute_tokens_body() -> None:
    body = "Rate limit reached on tokens per min (TPM): Limit 6000, Used 5800, Requested 400. Try again in 2s"
    (limit,) = learn(429, {}, body, NOW).limits
    assert (limit.unit, limit.window, limit.limit, limit.remaining) == ("tokens", "minute", 6000, 0)


def test_per_day_wording_without_a_wait_resets_at_utc_midnight() -> None:
    body = "You exceeded your current quota: GenerateRequestsPerDayPerProjectPerModel-FreeTier"
    learned = learn(429, {}, body, NOW)
    (limit,) = learned.limits
    midnight = datetime.fromtimestamp(NOW, UTC).replace(hour=0, minute=0, second=0).timestamp() + 86400
    assert (limit.unit, limit.window, limit.remaining) == ("requests", "day", 0)
    assert limit.resets_at == learned.retry_at == midnight


def test_bodies_are_read_only_on_429() -> None:
    assert learn(200, {}, "Please try again in 20s", NOW).empty
    assert learn(429, {}, "slow down", NOW).empty


def test_a_providers_header_names_are_read_once_and_their_values_on_every_reply(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Every reply repeats the same header names with new values: the names
    are read (which speak of limits, in which dialect) once per set of
    names, the values on every reply; a name in two cases, the later wins."""
    read: list[str] = []
    original = headers_module._limit_header
    monkeypatch.setattr(headers_module, "_limit_header", lambda name: read.append(name) or original(name))

    def reply(remaining: int) -> dict[str, str]:
        return {
            "x-request-id-once-per-set": "abc",  # a set of names no other test sends
            "X-RateLimit-Limit-Requests": "30",
            "x-ratelimit-remaining-requests": "1",
            "X-RATELIMIT-REMAINING-REQUESTS": str(remaining),
            "x-ratelimit-reset-requests": "2s",
        }

    first = learn(200, reply(29), "", NOW)
    names_read = len(read)
    second = learn(200, reply(28), "", NOW + 1)
    assert names_read == 5 and len(read) == names_read  # not one name read again
    assert [(x.limit, x.remaining, x.resets_at) for x in first.limits] == [(30, 29, NOW + 2)]
    assert [(x.limit, x.remaining, x.resets_at) for x in second.limits] == [(30, 28, NOW + 3)]
