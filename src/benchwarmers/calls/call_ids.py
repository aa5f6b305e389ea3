"""Call and ask ids: made so they sort by when they were made, and read
back for that time (`minted_at`: a read waits for a young call another
process has not committed yet, `log.settled`).

Apart from the log's writer because everything that starts a call or an
ask makes one (the caller, the engines) and none of them needs the writer.
"""

from __future__ import annotations

import binascii
import time

from benchwarmers import ids

CALL_ID_PREFIX = "c_"
ASK_ID_PREFIX = "a_"

# URL-safe characters in the order they sort in (ASCII), for the time an id begins with.
_SORTABLE = "-0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZ_abcdefghijklmnopqrstuvwxyz"
# An id after its prefix: the time in milliseconds, 6 bits a character, then random ones.
_TIME_CHARACTERS = 8
_TIME_BITS = 6 * _TIME_CHARACTERS  # 48: six bytes, which base64 writes as exactly 8 characters
# Base64's digits (A-Z a-z 0-9 + /, values 0 to 63) to ours of the same value.
_AS_SORTABLE = str.maketrans("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/", _SORTABLE)
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
    """The time in milliseconds, 6 bits a character, most significant first
    (the low 48 bits: until the year 10889), then 12 random characters.
    The time's 6 bytes and 9 random ones written by one base64 (15 bytes:
    exactly 20 characters) and one translation, in C: a generator over the
    8 characters was 100 bytecodes an id, and a second base64 for the random
    part (`ids.token_urlsafe`) 75 more, two ids a request. The random part
    is in the same URL-safe alphabet, its characters in sorting order."""
    milliseconds = (time.time_ns() // 1_000_000) & ((1 << _TIME_BITS) - 1)
    raw = milliseconds.to_bytes(_TIME_BITS // 8, "big") + ids.token_bytes(9)
    return binascii.b2a_base64(raw, newline=False).decode("ascii").translate(_AS_SORTABLE)


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
