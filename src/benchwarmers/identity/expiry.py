"""When a gateway key stops working, as the owner writes it.

`key add --expires` and `key set --expires` take a date (`2027-01-31`, the
key stops at 00:00 UTC that day), a moment (`2027-01-31T12:00:00+00:00`),
a time from now (`30d`, `12h`, `2w`, `90m`) or `never`; `key rotate --grace`
takes a time (`1h`, `30m`, `0` = at once). Both are read here, once, for the
CLI and the dashboard alike, so a mistake is the same one clear line in each
and nothing is saved: an expiry in the past, a date that is not one, a
negative grace. (`durations.py` reads providers' durations and clamps a
negative to 0; a user's negative grace must be refused instead.)
"""

from __future__ import annotations

import re
from datetime import UTC, date, datetime, timedelta

from benchwarmers.durations import parse_duration
from benchwarmers.errors import UserError

NEVER = frozenset({"", "never", "none"})
_UNIT_SECONDS = {"s": 1.0, "m": 60.0, "h": 3600.0, "d": 86400.0, "w": 604800.0}
_SPAN = re.compile(r"^([+-]?\d+(?:\.\d+)?)\s*([smhdw]?)$")
EXPIRY_HINT = "give a date (2027-01-31), a time from now (30d, 12h) or 'never'"


def parse_expiry(text: str, now: datetime) -> datetime | None:
    """The moment `text` names (UTC), or None for never. A moment that is
    not after `now` is refused: a key that expired on creation helps no one."""
    spoken = text.strip().lower()
    if spoken in NEVER:
        return None
    span = _SPAN.match(spoken)
    if span is not None:
        if not span.group(2):
            raise UserError(f"expiry {text!r}: a time from now needs its unit (30d, 12h); or {EXPIRY_HINT}")
        seconds = float(span.group(1)) * _UNIT_SECONDS[span.group(2)]
        if seconds <= 0:
            raise UserError(f"expiry {text!r} is not in the future; {EXPIRY_HINT}")
        return now + timedelta(seconds=seconds)
    moment = _moment(text.strip())
    if moment is None:
        compound = _compound(spoken)  # 1h30m, 2 hours
        if compound is None:
            raise UserError(f"expiry {text!r} is not a date; {EXPIRY_HINT}")
        if compound <= 0:
            raise UserError(f"expiry {text!r} is not in the future; {EXPIRY_HINT}")
        return now + timedelta(seconds=compound)
    if moment <= now:
        raise UserError(f"expiry {text!r} is in the past ({show(moment)}); {EXPIRY_HINT}")
    return moment


def parse_grace(text: str) -> float:
    """Seconds the replaced secret keeps working after `key rotate`: `1h`,
    `30m`, `2d`, `90s`, `1h30m`, `0` (at once). Never negative."""
    spoken = text.strip()
    span = _SPAN.match(spoken.lower())
    if span is not None:
        seconds = float(span.group(1)) * _UNIT_SECONDS[span.group(2) or "s"]
    else:
        compound = _compound(spoken.removeprefix("-"))
        if compound is None:
            raise UserError(
                f"grace {text!r} is not a time: write 1h, 30m, 2d or 0 (the old secret stops now)"
            )
        seconds = -compound if spoken.startswith("-") else compound
    if seconds < 0 or spoken.startswith("-"):
        raise UserError(f"grace {text!r} is negative: write 0 to end the old secret now, or a time like 1h")
    return seconds


def show(moment: datetime) -> str:
    """`2027-01-31 00:00 UTC`: how a key's moments read in messages and lists."""
    return f"{moment.astimezone(UTC):%Y-%m-%d %H:%M} UTC"


def _compound(text: str) -> float | None:
    """`1h30m`, `2 hours`, `90 seconds`: read as providers' durations are."""
    return parse_duration(text)


def _moment(text: str) -> datetime | None:
    try:
        day = date.fromisoformat(text)
    except ValueError:
        pass
    else:
        return datetime(day.year, day.month, day.day, tzinfo=UTC)
    try:
        moment = datetime.fromisoformat(text)
    except ValueError:
        return None
    return moment.replace(tzinfo=UTC) if moment.tzinfo is None else moment.astimezone(UTC)
