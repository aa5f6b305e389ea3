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
    plan = _plan(tuple(headers))
    if plan is None and retry_after is None and not (status == 429 and body):
        return NOTHING  # most replies of most providers: not a word of limits
    limits: list[LearnedLimit] = []
    retry_at = None
    if plan is not None:
        limits = [
            LearnedLimit(
                unit,
                window,
                _int(headers[limit]) if limit else None,
                _int(headers[remaining]) if remaining else None,
                _reset(headers[reset], now) if reset else None,
                source,
            )
            for unit, window, limit, remaining, reset, source in plan.limits
        ]
        retry_at = _retry_after(headers, plan, now)
    if retry_at is None and retry_after is not None:
        retry_at = now + max(retry_after, 0.0)
    if status == 429 and body:
        from_body = _from_body(body, now)
        limits.extend(from_body.limits)
        if retry_at is None:
            retry_at = from_body.retry_at
    return Learned(tuple(limits), retry_at)


# One limit a reply's headers state, by the names (as sent) of the headers
# holding its limit, remaining count and reset, each None when not sent:
# (unit, window, limit, remaining, reset, source).
_Stated = tuple[Unit, Window, str | None, str | None, str | None, str]


class _Plan(NamedTuple):
    """Where in a reply's headers its limits are (`_plan`)."""

    limits: tuple[_Stated, ...]
    retry_after_ms: str | None
    retry_after: str | None


@functools.lru_cache(maxsize=256)
def _plan(names: tuple[str, ...]) -> _Plan | None:
    """Which of a reply's headers, by name, state which limit; None when
    none can speak of limits (`*ratelimit*`, `retry-after*`). A provider
    sends the same names on every reply, only the values change, so the
    names are read (lower-cased, grouped by limit, sorted) once per set of
    names, not once per reply: that reading was most of what learning
    from a reply cost (docs/benchmarks.md, issue 37). A name sent twice in
    different cases: the later one, as a reply's last value wins."""
    lowered: dict[str, str] = {}
    for name in names:
        low = _limit_header(name)
        if low:
            lowered[low] = name
    if not lowered:
        return None
    return _Plan(
        (*_openai_style(lowered), *_anthropic_style(lowered)),
        lowered.get("retry-after-ms"),
        lowered.get("retry-after"),
    )


@functools.lru_cache(maxsize=512)
def _limit_header(name: str) -> str:
    """`name` lower-cased if it can speak of limits, else "" (asked of
    each name of a set of names `_plan` has not seen)."""
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


def _openai_style(lowered: Mapping[str, str]) -> list[_Stated]:
    """OpenAI's limits in `lowered` (lower-cased name -> the name as sent)."""
    found: dict[tuple[Unit, Window], dict[str, str]] = {}
    for low, name in lowered.items():
        named = _openai_name(low)
        if named is not None:
            field, limit = named
            found.setdefault(limit, {})[field] = name
    return [
        (unit, window, fields.get("limit"), fields.get("remaining"), fields.get("reset"), "x-ratelimit")
        for (unit, window), fields in sorted(found.items())
    ]


def _anthropic_style(lowered: Mapping[str, str]) -> list[_Stated]:
    """Anthropic's requests and tokens limits (the tokens one is the tighter
    of its input and output limits, so those two are not kept apart)."""
    limits: list[_Stated] = []
    for unit in ("requests", "tokens"):
        prefix = f"anthropic-ratelimit-{unit}-"
        fields = {low[len(prefix) :]: name for low, name in lowered.items() if low.startswith(prefix)}
        if fields:
            source = "anthropic-ratelimit"
            limits.append(
                (unit, "minute", fields.get("limit"), fields.get("remaining"), fields.get("reset"), source)
            )
    return limits


def _retry_after(headers: Mapping[str, str], plan: _Plan, now: float) -> float | None:
    if plan.retry_after_ms is not None:
        seconds = parse_duration(headers[plan.retry_after_ms])
        if seconds is not None:
            return now + seconds / 1000.0
    return _reset(headers[plan.retry_after], now) if plan.retry_after is not None else None


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
