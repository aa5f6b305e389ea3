"""The proxies the environment names, as a company network sets them:
`HTTP_PROXY`, `HTTPS_PROXY` and `NO_PROXY` (either case, read as Python's
`urllib` reads them), taken when the outbound client opens.

An `http://` upstream goes through its proxy as a request with the whole
URL as its target; an `https://` one through a `CONNECT` tunnel, TLS to
the upstream inside it (`wire.Pool`), so the proxy sees neither the
request nor the key. A proxy's own credentials (`http://user:pass@host`)
go as `Proxy-Authorization: Basic`. Only `http://` proxies are spoken to:
a proxy URL of another scheme is a call that fails saying so, not one
that quietly goes direct.
"""

from __future__ import annotations

import base64
import urllib.request
from collections.abc import Mapping
from dataclasses import dataclass

from yarl import URL


@dataclass(frozen=True, slots=True)
class Proxy:
    """One proxy: where it listens, and the header that signs in to it ("" when none)."""

    host: str
    port: int
    authorization: str = ""

    @property
    def key(self) -> str:
        """How connections through it are told apart in the pool."""
        return f"{self.host}:{self.port}"


class Proxies:
    """Which proxy, if any, a URL goes through."""

    def __init__(self, settings: Mapping[str, str]) -> None:
        self._by_scheme = {scheme: settings[scheme] for scheme in ("http", "https") if settings.get(scheme)}
        self._no = settings.get("no", "")

    @classmethod
    def from_environment(cls) -> Proxies:
        return cls(urllib.request.getproxies_environment())

    def __bool__(self) -> bool:
        return bool(self._by_scheme)

    def for_url(self, url: URL) -> Proxy | None:
        """The proxy for `url`, None to go direct. `ValueError` for a proxy
        URL that cannot be used."""
        named = self._by_scheme.get(url.scheme)
        if named is None:
            return None
        where = f"{url.host}:{url.port}" if url.port is not None else url.host or ""
        if self._no and _bypassed(where, {"no": self._no}):
            return None
        return _parsed(named)


# NO_PROXY's matching, as urllib does it (undeclared in its stubs).
_bypassed = urllib.request.proxy_bypass_environment  # type: ignore[attr-defined]


def _parsed(named: str) -> Proxy:
    proxy = URL(named if "://" in named else f"http://{named}")
    if proxy.scheme != "http" or not proxy.host:
        raise ValueError(f"the proxy {proxy.with_user(None)} is not an http:// proxy with a host")
    authorization = ""
    if proxy.user is not None:
        pair = f"{proxy.user}:{proxy.password or ''}".encode()
        authorization = "Basic " + base64.b64encode(pair).decode("ascii")
    return Proxy(proxy.host, proxy.port or 80, authorization)
