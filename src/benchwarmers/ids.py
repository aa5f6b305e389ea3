"""Random text for ids, from the system's CSPRNG, drawn 4 KB at a time.

`secrets.token_urlsafe` and `uuid.uuid4` ask the kernel (`getrandom`) on
every call, and `os.urandom` lets go of the interpreter's lock around it.
On a busy server that is not a cheap syscall: another thread waiting for
the lock (the call log's writer) takes it, and the event loop waits to get
it back. A passthrough made three such ids a request (its ask, its call,
the reply's); dropping that cost 10-15% of its CPU at 10 connections
(docs/benchmarks.md, "The per-request syscalls").

Here the bytes come from the same source (`os.urandom`), 4 KB per draw,
each handed out once and in order: ids as unpredictable as `secrets`
makes them, one draw per hundreds of ids. A forked child starts on a draw
of its own, never on bytes its parent may hand out too.
"""

from __future__ import annotations

import binascii
import os
import threading

DRAW_BYTES = 4096
# Base64's two characters that are not URL-safe, to the URL-safe alphabet's.
_URL_SAFE = bytes.maketrans(b"+/", b"-_")

_lock = threading.Lock()
_drawn = b""
_used = 0


def token_bytes(nbytes: int) -> bytes:
    """`nbytes` random bytes (`secrets.token_bytes`, drawn ahead)."""
    global _drawn, _used
    with _lock:
        start = _used
        if start + nbytes > len(_drawn):
            _drawn = os.urandom(max(DRAW_BYTES, nbytes))
            start = 0
        _used = start + nbytes
        return _drawn[start : start + nbytes]


def token_urlsafe(nbytes: int) -> str:
    """As `secrets.token_urlsafe(nbytes)`: URL-safe base64, no padding
    (`binascii` and a translation, in C: `base64.urlsafe_b64encode` is two
    Python calls around the same, and every call id makes one)."""
    written = binascii.b2a_base64(token_bytes(nbytes), newline=False)
    return written.rstrip(b"=").translate(_URL_SAFE).decode("ascii")


def token_hex(nbytes: int) -> str:
    """As `secrets.token_hex(nbytes)`: two hex digits a byte."""
    return token_bytes(nbytes).hex()


def _forget() -> None:
    global _drawn, _used, _lock
    _lock = threading.Lock()  # the parent's may have been held by another of its threads
    _drawn, _used = b"", 0


os.register_at_fork(after_in_child=_forget)
