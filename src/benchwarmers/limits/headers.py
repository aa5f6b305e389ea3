"""Learning rate limits from what a provider says: headers and 429 bodies.

Providers say the same few things in several dialects. OpenAI (and the many
OpenAI-compatible hosts) send `x-ratelimit-{limit,remaining,reset}-{requests,
tokens}` with resets as Go-style durations (`6m0s`, `1m30.5s`, `20ms`);
Anthropic sends `anthropic-ratelimit-{requests,tokens}-{limit,remaining,reset}`
with resets as RFC 3339 times; anyone may send `retry-after` (seconds or an
HTTP date) or `retry-after-ms`; and 429 bodies say it in prose ("Please try
again in 20s", "Please retry in 1.5s", "requests per day (RPD): Limit 200,
Used 200") or, for Gemini, as a `retryDelay`. Everything here folds into one
value, `Learned`: the limits (unit, window, limit, remaining, when it resets,
as an absolute Unix time) plus when the provider asked us to retry. Absolute
times are what the limiter and the store need, so relative durations are
resolved against the `now` the caller passes in.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Mapping
from datetime import UTC, datetime, timedelta
from email.utils import parsedate_to_datetime
from typing import Literal, NamedTuple, TypeAlias

from benchwarmers.durations import UNIT_PATTERN, parse_duration

Unit: TypeAlias = Literal["requests", "tokens"]
# "" when the provider did not say (OpenAI's headers never name the window).
Window: TypeAlias = Literal["minute", "day", ""]


class LearnedLimit(NamedTuple):
    """One limit a reply spoke of. A named tuple, not a frozen dataclass:
    a provider's every reply makes two to four, and a frozen dataclass sets
    each field through `object.__setattr__`."""

    unit: Unit
    window: Window
    limit: int | None
    remaining: int | None
    resets_at: float | None  # Unix time
    source: str  # "x-ratelimit", "anthropic-ratelimit", "429 body"


class Learned(NamedTuple):
    """All a reply said of limits (a named tuple: made for every reply that says any)."""

    limits: tuple[LearnedLimit, ...] = ()
    # When the provider asked us to come back (retry-after, a 429 body's wait).
    retry_at: float | None = None

    @property
    def empty(self) -> bool:
        return not self.limits and self.retry_at is None


NOTHING = Learned()


def learn(
    status: int, headers: Mapping[str, str], body: str, now: float, *, retry_after: float | None = None
) -> Learned:
    """Everything a reply says about limits. `headers` may use any case.
    `retry_after` is the wait the transport already read off the reply
    (`ProviderError.retry_after`: it also reads Gemini's `RetryInfo`, which
    only the raw error body carries); a `retry-after` header still wins."""
    lowered = _limit_headers(headers)
    if not lowered and retry_after is None and not (status == 429 and body):
        return NOTHING  # most replies of most providers: not a word of limits
    limits = [*_openai_style(lowered, now), *_anthropic_style(lowered, now)]
    retry_at = _retry_after(lowered, now)
    if retry_at is None and retry_after is not None:
        retry_at = now + max(retry_after, 0.0)
    if status == 429 and body:
        from_body = _from_body(body, now)
        limits.extend(from_body.limits)
        if retry_at is None:
            retry_at = from_body.retry_at
    return Learned(tuple(limits), retry_at)


def _limit_headers(headers: Mapping[str, str]) -> dict[str, str]:
    """The headers that can speak of limits (`*ratelimit*`, `retry-after*`),
    by lower-cased name: every reply is read, and most carry none."""
    kept = {}
    for name, value in headers.items():
        lowered = _limit_header(name)
        if lowered:
            kept[lowered] = value
    return kept


@functools.lru_cache(maxsize=512)
def _limit_header(name: str) -> str:
    """`name` lower-cased if it can speak of limits, else "": a provider
    sends the same few names on every reply, so this is asked of each
    header of every reply and answered from the cache."""
    lowered = name.lower()
    return lowered if "ratelimit" in lowered or lowered.startswith("retry-after") else ""


# ------------------------------------------------------------ durations, dates


def parse_time(text: str) -> float | None:
    """A Unix time from an RFC 3339 timestamp (`2026-11-30T01:02:03Z`) or an
    HTTP date (`Mon, 30 Nov 2026 01:02:03 GMT`)."""
    text = text.strip()
    try:
        when = datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        try:
            when = parsedate_to_datetime(text)
        except (TypeError, ValueError, IndexError):
            return None
    if when.tzinfo is None:
        when = when.replace(tzinfo=UTC)
    return when.timestamp()


def _int(text: str | None) -> int | None:
    """A count as a header states it: a whole number (every reply's, read
    as one at once), else a decimal one, cut to a whole one."""
    if text is None:
        return None
    try:
        return int(text)
    except ValueError:
        pass
    try:
        return int(float(text))
    except (ValueError, OverflowError):
        return None


def _reset(text: str | None, now: float) -> float | None:
    """A reset given either as a duration from now or as an absolute time."""
    if text is None:
        return None
    seconds = parse_duration(text)
    if seconds is not None:
        return now + seconds
    return parse_time(text)


# --------------------------------------------------------------------- headers

# OpenAI-compatible hosts that do name the window append it (Cerebras:
# `x-ratelimit-limit-requests-day`, `x-ratelimit-remaining-tokens-minute`).
_OPENAI = re.compile(r"x-ratelimit-(limit|remaining|reset)-(requests|tokens)(?:-(minute|day))?")


@functools.lru_cache(maxsize=256)
def _openai_name(name: str) -> tuple[str, tuple[Unit, Window]] | None:
    """What an `x-ratelimit-*` header names (field, (unit, window)), else
    None; the same few names come on every reply: cached."""
    match = _OPENAI.fullmatch(name)
    if match is None:
        return None
    field, unit, named = match.groups()
    return field, (_unit(unit), "day" if named == "day" else "minute" if named else "")


def _openai_style(headers: Mapping[str, str], now: float) -> list[LearnedLimit]:
    found: dict[tuple[Unit, Window], dict[str, str]] = {}
    for name, value in headers.items():
        named = _openai_name(name)
        if named is not None:
            field, limit = named
            fields = found.get(limit)
            if fields is None:
                fields = found[limit] = {}
            fields[field] = value
    return [
        LearnedLimit(
            unit,
            window,
            _int(fields.get("limit")),
            _int(fields.get("remaining")),
            _reset(fields.get("reset"), now),
            "x-ratelimit",
        )
        for (unit, window), fields in sorted(found.items())
    ]


def _anthropic_style(headers: Mapping[str, str], now: float) -> list[LearnedLimit]:
    """Anthropic's requests and tokens limits (the tokens one is the tighter
    of its input and output limits, so those two are not kept apart)."""
    limits: list[LearnedLimit] = []
    if not any(name.startswith("anthropic-ratelimit-") for name in headers):
        return limits  # every other provider's replies
    for unit in ("requests", "tokens"):
        prefix = f"anthropic-ratelimit-{unit}-"
        fields = {k[len(prefix) :]: v for k, v in headers.items() if k.startswith(prefix)}
        if fields:
            limits.append(
                LearnedLimit(
                    unit=unit,
                    window="minute",
                    limit=_int(fields.get("limit")),
                    remaining=_int(fields.get("remaining")),
                    resets_at=_reset(fields.get("reset"), now),
                    source="anthropic-ratelimit",
                )
            )
    return limits


def _retry_after(headers: Mapping[str, str], now: float) -> float | None:
    millis = headers.get("retry-after-ms")
    if millis is not None:
        seconds = parse_duration(millis)
        if seconds is not None:
            return now + seconds / 1000.0
    value = headers.get("retry-after")
    return _reset(value, now) if value is not None else None


# ------------------------------------------------------------------ 429 bodies

_TRY_AGAIN = re.compile(
    rf"(?:try again|retry)\s+(?:in|after)\s+(?:about\s+)?((?:\d+(?:\.\d+)?\s*{UNIT_PATTERN}\s*)+)",
    re.IGNORECASE,
)
_RETRY_DELAY = re.compile(r'"retryDelay"\s*:\s*"([^"]+)"')
_PER_WINDOW = re.compile(
    r"(requests|tokens)\s+per\s+(min(?:ute)?|day)\b(?:[^:.]*?:\s*limit\s+(\d+))?",
    re.IGNORECASE,
)
# Gemini names the quota instead: "GenerateRequestsPerDayPerProjectPerModel-FreeTier".
_QUOTA_ID = re.compile(r"(Requests|Tokens)PerMinute|(Requests|Tokens)PerDay", re.IGNORECASE)


def _unit(word: str) -> Unit:
    return "tokens" if word.lower().startswith("token") else "requests"


def _next_utc_midnight(now: float) -> float:
    day = datetime.fromtimestamp(now, UTC).replace(hour=0, minute=0, second=0, microsecond=0)
    return (day + timedelta(days=1)).timestamp()


def _from_body(body: str, now: float) -> Learned:
    """What a 429 body says. A per-day limit with no stated wait is taken to
    reset at the next UTC midnight, which is when the daily quotas of the
    providers that word it so (Groq, Gemini, OpenRouter) roll over or sooner;
    a per-minute one with no stated wait at the next minute."""
    retry_at = None
    match = _TRY_AGAIN.search(body) or _RETRY_DELAY.search(body)
    if match:
        seconds = parse_duration(match.group(1).strip().rstrip("."))
        if seconds is not None:
            retry_at = now + seconds
    # (unit, window, limit) as the body names them; a 429 means none is left.
    named: list[tuple[Unit, Window, int | None]] = [
        (_unit(unit), "day" if window.lower() == "day" else "minute", int(limit) if limit else None)
        for unit, window, limit in _PER_WINDOW.findall(body)
    ]
    if not named:
        for quota in _QUOTA_ID.finditer(body):
            per_minute, per_day = quota.group(1), quota.group(2)
            named.append((_unit(per_minute or per_day), "minute" if per_minute else "day", None))
    limits = tuple(
        LearnedLimit(
            unit,
            window,
            amount,
            0,
            retry_at or (_next_utc_midnight(now) if window == "day" else now + 60.0),
            "429 body",
        )
        for unit, window, amount in named
    )
    if retry_at is None and limits:
        retry_at = max(limit.resets_at or now for limit in limits)
    return Learned(limits, retry_at)
