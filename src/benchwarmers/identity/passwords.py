"""The dashboard login's password hashing: scrypt from the standard library.

The settings keep only the hash (`login_password_hash`); the password is
typed once (`benchwarmers settings set login_password`, or
`POST /bench/settings`) and never stored, logged or shown. Whatever checks a
login calls `verify_password` with the stored hash.

A hash names its own parameters (`scrypt$n$r$p$salt$digest`), so they can be
raised later without breaking the hashes already stored.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import secrets

SCHEME = "scrypt"
N, R, P = 2**14, 8, 1
DIGEST_BYTES = 32
SALT_BYTES = 16
MIN_LENGTH = 8


def hash_password(password: str) -> str:
    salt = secrets.token_bytes(SALT_BYTES)
    digest = _scrypt(password, salt, N, R, P)
    return "$".join((SCHEME, str(N), str(R), str(P), _b64(salt), _b64(digest)))


def verify_password(password: str, stored: str) -> bool:
    """Whether `password` matches `stored`; False for an empty or malformed hash."""
    try:
        scheme, n, r, p, salt, digest = stored.split("$")
        if scheme != SCHEME:
            return False
        expected = base64.b64decode(digest)
        actual = _scrypt(password, base64.b64decode(salt), int(n), int(r), int(p))
    except ValueError:
        return False
    return hmac.compare_digest(actual, expected)


def _scrypt(password: str, salt: bytes, n: int, r: int, p: int) -> bytes:
    return hashlib.scrypt(password.encode("utf-8"), salt=salt, n=n, r=r, p=p, dklen=DIGEST_BYTES)


def _b64(raw: bytes) -> str:
    return base64.b64encode(raw).decode("ascii")
