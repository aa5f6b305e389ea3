"""Datetimes as they leave the store: always timezone-aware UTC.

The store writes UTC, but SQLite hands datetimes back without a zone while
PostgreSQL hands them back with one. Anything that compares a stored moment
with `now`, or shows one to a client (JSON, the command line), goes through
here, so a client never has to guess the zone of a timestamp:

    "created_at": iso_utc(item.created_at)     # "2026-05-01T12:00:00+00:00"
    if utc(model.resting_until) > now: ...
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import overload


def utc(moment: datetime) -> datetime:
    """The same instant, aware, in UTC (a naive value is read as UTC, which
    is how the store wrote it)."""
    if moment.tzinfo is None:
        return moment.replace(tzinfo=UTC)
    return moment.astimezone(UTC)


@overload
def iso_utc(moment: datetime) -> str: ...
@overload
def iso_utc(moment: None) -> None: ...
def iso_utc(moment: datetime | None) -> str | None:
    """ISO 8601 with its `+00:00`, or None for a moment that never happened."""
    return None if moment is None else utc(moment).isoformat()
