"""JSON on the request path, read and written by orjson, with the standard
library's answer wherever orjson's would differ.

A passthrough reads JSON five or six times (the client's body, each event
of the seat's stream) and writes it three or four (the seat's request, the
call's journal line, the reply): with the standard library's `json` that
was about a tenth of the server's CPU a request, and orjson does the same
work in a third to a fifth of the time (docs/benchmarks.md, "JSON through
orjson"). Where the two would not give the same answer, the standard
library's is the one given:

    orjson, left alone                        here
    ────────────────────────────────────────  ──────────────────────────────────────
    an integer past 64 bits read as a float   text holding a run of 20 digits is
      (precision lost without a word)           read by `json` (exact)
    refuses NaN, Infinity, a lone surrogate   `slow` reads it (`json.loads`, or the
      escape, a BOM, nesting past 1024          caller's stricter reader): the same
                                                value or the same error as before
    cannot write a key that is not a string,  `json.dumps` writes it (compact,
      an integer past 64 bits, a lone           ASCII-escaped: always encodable)
      surrogate, an unknown type
    writes NaN and infinities as null         kept: `json` wrote `NaN`, which no
                                                JSON reader accepts

Text written is compact UTF-8 (no spaces after `,` and `:`), which every
JSON reader reads as `json.dumps` wrote it.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import orjson

# Every ASCII digit as "0" and every other byte as " ": a run of twenty zeros is then
# twenty digits in a row, perhaps an integer orjson cannot hold (2**64 has 20).
_DIGITS_AS_ZEROS = bytes(48 if 48 <= byte <= 57 else 32 for byte in range(256))
_TWENTY_DIGITS = b"0" * 20


def loads(data: bytes | str, slow: Callable[[Any], Any] = json.loads) -> Any:
    """`data` read as JSON: by orjson when it gives what `slow` would,
    otherwise by `slow` (whose errors are the caller's to handle)."""
    if _exact(data if isinstance(data, bytes) else data.encode("utf-8", "surrogatepass")):
        try:
            return orjson.loads(data)
        except orjson.JSONDecodeError:
            pass
    return slow(data)


def _exact(data: bytes) -> bool:
    """No run of 20 digits (text as UTF-8, where no other character's bytes
    are ASCII digits). Asked of every JSON read, a passthrough's four or
    more: a translation and a substring search, each one pass in C, where
    a regular expression's search tried its pattern at every byte (about
    180 instructions a byte: 6% of a passthrough's, docs/benchmarks.md)."""
    # `find`, not `in`: `bytes.__contains__` first tries its operand as an integer, and
    # the TypeError it makes and drops costs more than the search.
    return data.translate(_DIGITS_AS_ZEROS).find(_TWENTY_DIGITS) < 0


def dumps(value: Any) -> bytes:
    """`value` as compact UTF-8 JSON."""
    try:
        return orjson.dumps(value)
    except TypeError:
        return json.dumps(value, separators=(",", ":")).encode()
