"""Call and ask ids: made so they sort by when they were made, and read
back for that time (`minted_at`: a read waits for a young call another
process has not committed yet, `log.settled`).

Apart from the log's writer because everything that starts a call or an
ask makes one (the caller, the engines) and none of them needs the writer.
"""

from __future__ import annotations

import time

from benchwarmers import ids

CALL_ID_PREFIX = "c_"
ASK_ID_PREFIX = "a_"

# URL-safe characters in the order they sort in (ASCII), for the time an id begins with.
_SORTABLE = "-0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZ_abcdefghijklmnopqrstuvwxyz"
# An id after its prefix: the time in milliseconds, 6 bits a character, then random ones.
_TIME_CHARACTERS = 8
_TIME_SHIFTS = tuple(range(6 * (_TIME_CHARACTERS - 1), -1, -6))
_ID_CHARACTERS = 20


def new_call_id() -> str:
    """Unique: `c_` and 20 URL-safe characters, the first 8 the time in
    milliseconds, sorting as it does, then 72 random bits. A random id
    would land each new row on a random leaf of the call log's id index
    (and its ask's on `ix_calls_ask_id`'s), which with a long log is a page
    to read and write back per call: the writer's insert cost 1.44x at
    300,000 past calls with random ids, 1.16x with these
    (docs/benchmarks.md, "A long call log: box noise, and the writer's
    random leaves")."""
    return CALL_ID_PREFIX + _time_first()


def new_ask_id() -> str:
    """Shared by every call of one gateway ask (its seats and its merge);
    made as a call's id is, for the same reason."""
    return ASK_ID_PREFIX + _time_first()


def _time_first() -> str:
    milliseconds = time.time_ns() // 1_000_000
    return "".join(_SORTABLE[(milliseconds >> shift) & 63] for shift in _TIME_SHIFTS) + (
        ids.token_urlsafe(9)  # the other 12 characters
    )


def minted_at(call_id: str) -> float | None:
    """When an id `new_call_id` made was made (Unix seconds, to the
    millisecond); None for a string it could not have made."""
    characters = call_id.removeprefix(CALL_ID_PREFIX)
    if len(characters) != _ID_CHARACTERS or characters == call_id:
        return None
    milliseconds = 0
    for character in characters[:_TIME_CHARACTERS]:
        digit = _SORTABLE.find(character)
        if digit < 0:
            return None
        milliseconds = milliseconds << 6 | digit
    return milliseconds / 1000
