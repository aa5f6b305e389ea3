"""Where a client of a running server finds it: the environment that
`benchwarmers ask`, `benchwarmers verdict` and `benchwarmers mcp` (stdio)
read, in one place so they cannot drift apart.

- `BENCHWARMERS_URL`: the server (default http://127.0.0.1:8122).
- `BENCHWARMERS_KEY`: a gateway key, when the server asks for keys.
- `BENCHWARMERS_TIMEOUT`: seconds to wait for a whole answer (default 900).
"""

from __future__ import annotations

import os
from urllib.parse import urlsplit

from benchwarmers.config import environment
from benchwarmers.errors import UserError

URL_ENV = environment.CLIENT_URL.name
KEY_ENV = environment.CLIENT_KEY.name
TIMEOUT_ENV = environment.CLIENT_TIMEOUT.name
DEFAULT_URL = environment.CLIENT_URL.default
DEFAULT_TIMEOUT = float(environment.CLIENT_TIMEOUT.default)


def server_url() -> str:
    """The server's base URL: an http(s) URL with a host, or a clear error
    naming the variable (a bare `localhost:8122` is the usual slip)."""
    url = os.environ.get(URL_ENV, "").strip().rstrip("/") or DEFAULT_URL
    parts = urlsplit(url)
    try:
        port_ok = parts.port is None or parts.port > 0
    except ValueError:
        port_ok = False
    if parts.scheme not in ("http", "https") or not parts.hostname or not port_ok:
        raise UserError(f"{URL_ENV} must be the server's URL, such as {DEFAULT_URL}, not {url!r}")
    return url


def no_server(url: str) -> str:
    """What to say when nothing answers at `url`: how to start one, or point at yours."""
    return f"no server at {url}; start one with `benchwarmers serve`, or set {URL_ENV} to yours"


def server_key() -> str:
    return os.environ.get(KEY_ENV, "").strip()


def server_timeout() -> float:
    """Seconds, more than 0; a clear error for anything else."""
    raw = os.environ.get(TIMEOUT_ENV, "").strip()
    try:
        timeout = float(raw) if raw else DEFAULT_TIMEOUT
    except ValueError:
        raise UserError(f"{TIMEOUT_ENV} must be a number of seconds, not {raw!r}") from None
    if timeout <= 0:
        raise UserError(f"{TIMEOUT_ENV} must be more than 0 seconds")
    return timeout
