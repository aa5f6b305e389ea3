"""Durations as providers write them, read in one place.

Rate-limit headers say `6m0s` or `1m30.5s` (Go's style), Gemini's
`RetryInfo` says `1.5s`, and 429 bodies say "try again in 20s" or "2 minutes
3 seconds". The provider boundary reads retry hints from errors and the
limits layer reads resets from every reply; both need the same answer for
the same text, so both use this module (it imports nothing of ours, like
`types`).
"""

from __future__ import annotations

import functools
import re

_SECONDS = {"ns": 1e-9, "us": 1e-6, "ms": 1e-3, "s": 1.0, "m": 60.0, "h": 3600.0}
_WORDS = {
    "nanosecond": "ns",
    "nanoseconds": "ns",
    "µs": "us",
    "microsecond": "us",
    "microseconds": "us",
    "millisecond": "ms",
    "milliseconds": "ms",
    "sec": "s",
    "secs": "s",
    "second": "s",
    "seconds": "s",
    "min": "m",
    "mins": "m",
    "minute": "m",
    "minutes": "m",
    "hr": "h",
    "hrs": "h",
    "hour": "h",
    "hours": "h",
}
# Longer words first, so `ms` is not read as `m` and `minutes` not as `m`.
UNIT_PATTERN = (
    r"(?:nanoseconds?|microseconds?|milliseconds?|seconds?|secs?|minutes?|mins?|hours?|hrs?"
    r"|ns|us|µs|ms|h|m|s)(?![a-zµ])"
)
_PIECE = re.compile(rf"(\d+(?:\.\d+)?)\s*({UNIT_PATTERN})", re.IGNORECASE)
# What may stand between pieces: "2 minutes, 3 seconds", "1 minute and 5 seconds".
_BETWEEN = re.compile(r"[\s,]+|\band\b", re.IGNORECASE)


@functools.lru_cache(maxsize=1024)
def parse_duration(text: str) -> float | None:
    """Seconds in `6m0s`, `1m30.5s`, `20ms`, `1.5 seconds`, `2 min`; a bare
    number is seconds. Never negative; None when the text is not a duration.
    Providers' replies repeat a few durations (`1s`, `6m0s`) on every call:
    cached."""
    text = text.strip()
    if not text:
        return None
    try:
        return max(0.0, float(text))
    except ValueError:
        pass
    pieces = _PIECE.findall(text)
    if not pieces or _BETWEEN.sub("", _PIECE.sub("", text)):
        return None
    return sum(float(number) * _SECONDS[_WORDS.get(unit.lower(), unit.lower())] for number, unit in pieces)
