"""The guard: what every request must pass before any route sees it.

One pure ASGI middleware (no per-request Starlette objects, so it costs
microseconds), in this order, each refusal in the caller's API format
(`formats.errors`):

1. **Host** must be one header naming a host (else 400, RFC 9112) and name
   this server: a loopback name (`127.0.0.1`, `localhost`, `[::1]`, any
   port), the address the server is bound to, or a host the settings (or
   `BENCHWARMERS_ALLOWED_HOSTS`) allow. A DNS-rebinding page reaches us
   under its own name, so it fails here (421). Bound to a wildcard
   address (`0.0.0.0`, `::`, as in a container) the machine's own name and
   any IP literal are accepted too: an IP literal cannot be rebound. An
   allowed host `*` turns the check off (behind a proxy that does it).
2. **Origin**: a state-changing request (anything but GET/HEAD/OPTIONS) from
   a browser page of another origin is refused (403), so no web page can
   spend calls. Clients that are not browsers send no Origin and pass.
3. **Gateway key** on gateway paths (every path a registered format owns,
   `formats/registry.py`: `/v1`, `/v1beta`, `/api`, `/mcp`; and `/bench`
   and `/metrics`, which names the whole bench): required when the
   server listens beyond loopback or the `require_key` setting is on (401
   without one); sent as `Authorization: Bearer` or where a format's
   clients send it (`x-api-key`, `x-goog-api-key`, `?key=`). A revoked key,
   an expired one, or a secret `key rotate` replaced once its grace is over
   is always refused (401, saying which and when), so `key revoke` locks its
   holder out even where keys are not required. Each key carries the moment
   it stops working (`KeyInfo.ends`), compared with `GuardState.clock`: no
   read of the store per request. When not required, a key that matches still narrows
   the caller to its scope; an unknown key is the local owner (clients
   insist on sending some key). A key's rate per minute is checked here
   (429 with Retry-After) in the runtime's counters: in this process, or in
   Redis when `BENCHWARMERS_REDIS_URL` is set, so replicas share one rate.
   The result is an `Identity` on `scope["state"]["identity"]` (see
   `identity/scope.py`).
4. **Body**: over the limit (`max_body_mb`, default 20 MB) by Content-Length
   or by the bytes actually received -> 413 naming the limit (what more the
   client sends, within bounds, read and dropped first, so it reads the 413
   instead of a reset connection); a body that
   stalls for `BODY_IDLE_SECONDS`, or is not all in after `BODY_SECONDS`
   (slowloris on the body) -> 408 and the connection closed (the head has
   its own deadline: `server/protocol.py`); a JSON body
   nested deeper than `MAX_JSON_DEPTH` -> 400 (a parser would otherwise
   recurse until it crashes). The body is read whole here and replayed to
   the app, so routes read it as usual; it is also left on
   `scope["state"]["body"]`, where `errors.read_json` takes it without
   reading it through Starlette's stream again.

Settings come from the store's cache (`Settings.current`): from memory,
a change made in this process (over HTTP, `/bench/settings`) applies from
the next request, one made by another (`benchwarmers settings set`) within
the cache's few seconds, and the read behind them runs once for all
requests, beside them. (A time to live of the guard's own made every
request that found it over read the settings itself: at ten connections,
ten reads at once every two seconds, five of them on new connections of
the pool, each opened with its pragmas and its read of the schema.)
"""

from __future__ import annotations

import asyncio
import ipaddress
import logging
import math
import os
import re
import socket
import time
from collections.abc import Awaitable, Callable, Generator, MutableMapping
from dataclasses import dataclass, field
from types import CoroutineType
from typing import Any
from urllib.parse import parse_qsl, urlsplit

from benchwarmers.config import environment, tunables
from benchwarmers.errors import Refused, StoreError
from benchwarmers.formats import registry as formats_registry
from benchwarmers.formats.errors import error_bytes, format_for_path
from benchwarmers.hosts import LOOPBACK_NAMES, is_loopback
from benchwarmers.identity.keys import KeyCache, KeyInfo
from benchwarmers.identity.scope import OWNER, Identity
from benchwarmers.limits.counters import Charge, Counters, MemoryCounters
from benchwarmers.server.protocol import STALL_KEY, STALL_SECONDS
from benchwarmers.store import settings as settings_module
from benchwarmers.store.db import Store

log = logging.getLogger(__name__)

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]

WILDCARD_ADDRESSES = frozenset({"0.0.0.0", "::", ""})
# Gateway paths that are no format's (the formats' own come from their registry).
BENCH_GATEWAY_PREFIXES = ("/bench/",)
BENCH_GATEWAY_PATHS = frozenset({"/metrics"})
SAFE_METHODS = frozenset({"GET", "HEAD", "OPTIONS"})
ALLOWED_HOSTS_ENV = environment.ALLOWED_HOSTS.name
MAX_JSON_DEPTH = 64
PASSED_HOSTS_CAP = 256
MB = 1024 * 1024
RATE_WINDOW = 60.0  # a key's rate is per minute, a sliding window
RATE_CHARGES_KEPT = 1024  # keys whose rate charge is kept ready; past it they are made afresh
BODY_IDLE_SECONDS = tunables.BODY_IDLE_SECONDS.value
BODY_SECONDS = tunables.BODY_SECONDS.value
DRAIN_BYTES = 8 * MB  # of a body refused as too large, read and dropped before the 413 (see _drain)
DRAIN_SECONDS = tunables.DRAIN_SECONDS.value
# The body as read, on `scope["state"]`: `errors.read_json` takes it from there.
BODY_STATE = "body"
# On `scope["state"]` when the gateway-key rule was applied: a route declared
# for gateway keys (`server/access.py`) is served only then.
KEY_CHECKED = "gateway_key_checked"

# A JSON string, escapes included (unrolled, so it runs in linear time).
_JSON_STRING = re.compile(rb'"[^"\\]*(?:\\.[^"\\]*)*"', re.DOTALL)
_NOT_BRACKET = bytes(b for b in range(256) if b not in b"[]{}")


def is_gateway_path(path: str) -> bool:
    """A path the guard asks for a gateway key: the bench's own, and every
    path an inbound format owns (`formats.registry`: Gemini generation
    without a version too, `/models/...:generateContent` as LiteLLM's
    `gemini/` provider posts it; the dashboard's own `/models` pages are
    not gateway paths)."""
    return (
        path.startswith(BENCH_GATEWAY_PREFIXES)
        or path in BENCH_GATEWAY_PATHS
        or formats_registry.is_format_path(path)
    )


@dataclass(slots=True)
class Policy:
    """The settings the guard applies, as last read, and the Host headers
    found to name this server under them (a client sends the same one on
    every request; a new policy starts with none)."""

    allowed_hosts: frozenset[str] = frozenset()
    require_key: bool = False
    max_body_bytes: int = 20 * MB
    stall_seconds: float = STALL_SECONDS
    passed_hosts: set[str] = field(default_factory=set)


@dataclass
class GuardState:
    """What the guard needs beyond the request: where we listen, and what
    the app's lifespan attaches: the store, the key cache and the counters
    that keep keys' rates (the runtime's, shared through Redis when set)."""

    bind_host: str = "127.0.0.1"
    store: Store | None = None
    keys: KeyCache | None = None
    counters: Counters = field(default_factory=MemoryCounters)
    clock: Callable[[], float] = time.time  # when keys expire; tests move it
    _policy: Policy = field(default_factory=Policy)
    _policy_of: dict[str, Any] | None = None  # the settings `_policy` was made from

    def attach(self, store: Store, counters: Counters) -> None:
        self.store = store
        self.keys = KeyCache(store)
        self.counters = counters
        self._policy_of = None

    @property
    def exposed(self) -> bool:
        """Listening beyond loopback, where keys are always required."""
        return not is_loopback(self.bind_host)

    async def policy(self) -> Policy:
        if self.store is None:
            raise StoreError("the server is starting")
        values = await settings_module.Settings(self.store).current()
        if values is not self._policy_of:  # read again since: a new policy
            env_hosts = os.environ.get(ALLOWED_HOSTS_ENV, "").replace(",", " ").split()
            hosts = [*values[settings_module.ALLOWED_HOSTS.name], *env_hosts]
            self._policy = Policy(
                allowed_hosts=frozenset(h.lower().rstrip(".") for h in hosts),
                require_key=values[settings_module.REQUIRE_KEY.name],
                max_body_bytes=values[settings_module.MAX_BODY_MB.name] * MB,
                stall_seconds=values[settings_module.STREAM_STALL_SECONDS.name],
            )
            self._policy_of = values
        return self._policy

    def forget(self) -> None:
        """Re-read settings and keys on the next request."""
        settings_module.forget_current()
        if self.keys is not None:
            self.keys.forget()


class Guard:
    def __init__(self, app: ASGIApp, state: GuardState) -> None:
        self.app = app
        self.state = state
        self._machine_names = frozenset({socket.gethostname().lower()})
        # (key name, prefix, rate) -> the charge each of its requests counts: the same every time.
        self._rate_charges: dict[tuple[str, str, int], Charge] = {}

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        try:
            receive = await self._admit(scope, receive)
        except Refused as refusal:
            await _refuse(send, scope["path"], refusal.status, str(refusal), refusal.headers)
            return
        except StoreError as exc:
            log.warning("guard could not read settings: %s", exc)
            message = "the server's store is not available; try again shortly"
            await _refuse(send, scope["path"], 503, message, {})
            return
        except _ClientGone:
            return
        await self.app(scope, receive, send)

    async def _admit(self, scope: Scope, receive: Receive) -> Receive:
        """Check the request; return the `receive` the app should read from."""
        policy = await self.state.policy()
        scope[STALL_KEY] = policy.stall_seconds  # for the protocol, should the client stop reading
        headers = _headers(scope)
        host = headers.get(b"host", b"").decode("latin-1")
        self._check_host(host, policy)
        method: str = scope["method"]
        if method not in SAFE_METHODS:
            _check_origin(headers.get(b"origin"), host)
        state = scope.setdefault("state", {})
        state["identity"] = await self._identity(scope, headers, policy)
        receive, state[BODY_STATE] = await _read_body(headers, receive, policy.max_body_bytes)
        return receive

    def _check_host(self, host: str, policy: Policy) -> None:
        if host in policy.passed_hosts:
            return
        if not host:
            raise Refused("the request has no Host header", status=400)
        name, port = _split_host(host)
        if name is None:
            raise Refused(f"the Host header {host!r} is not a host name (RFC 9112: host[:port])", status=400)
        if self._host_allowed(name, port, policy):
            if len(policy.passed_hosts) < PASSED_HOSTS_CAP:  # a scan of made-up names cannot grow it
                policy.passed_hosts.add(host)
            return
        raise Refused(
            f"Host {host!r} is not this server (a DNS-rebinding page looks like this); if you reach "
            f"the server by that name, allow it with `benchwarmers settings set allowed_hosts "
            f"{name}` (naming any hosts already allowed too) or {ALLOWED_HOSTS_ENV}",
            status=421,
        )

    def _host_allowed(self, name: str, port: int | None, policy: Policy) -> bool:
        bound = self.state.bind_host.strip("[]").lower()
        if name in LOOPBACK_NAMES or name == bound or "*" in policy.allowed_hosts:
            return True
        if name in policy.allowed_hosts or f"{name}:{port}" in policy.allowed_hosts:
            return True
        if bound in WILDCARD_ADDRESSES:
            return name in self._machine_names or _is_ip(name)
        return False

    async def _identity(self, scope: Scope, headers: dict[bytes, bytes], policy: Policy) -> Identity:
        if not is_gateway_path(scope["path"]):
            return OWNER
        scope["state"][KEY_CHECKED] = True
        required = self.state.exposed or policy.require_key
        sent = _sent_keys(headers, scope.get("query_string", b""))
        now = self.state.clock()
        key = await self._find_key(sent, now)
        if key is not None and (why := key.refusal(now)) is not None:
            raise Refused(why, status=401, headers={"www-authenticate": "Bearer"})
        if key is None:
            if not required:
                return OWNER
            if not sent:
                raise Refused(
                    "a gateway key is required: send it as 'Authorization: Bearer <key>' "
                    "(make one with `benchwarmers key add NAME`)",
                    status=401,
                    headers={"www-authenticate": "Bearer"},
                )
            raise Refused(
                "the gateway key is not valid: this server never made it",
                status=401,
                headers={"www-authenticate": "Bearer"},
            )
        if key.requests_per_minute:
            wait = await self._rate_wait(key, key.requests_per_minute)
            if wait > 0:
                seconds = max(1, math.ceil(wait))
                raise Refused(
                    f"gateway key {key.name!r} is over its rate of {key.requests_per_minute} requests "
                    f"per minute; retry in {seconds} s",
                    status=429,
                    headers={"retry-after": str(seconds)},
                )
        return Identity.from_key(key)

    async def _find_key(self, sent: list[str], now: float) -> KeyInfo | None:
        """The first working key sent, else the first refused one (revoked,
        expired, rotated out), else None."""
        assert self.state.keys is not None  # policy() proved the store is attached
        refused: KeyInfo | None = None
        for secret in sent:
            key = await self.state.keys.find(secret)
            if key is not None and key.works(now):
                return key
            refused = refused or key
        return refused

    async def _rate_wait(self, key: KeyInfo, per_minute: int) -> float:
        """Count one request of `key`; 0 when it may go, else the seconds
        until it may. Wall-clock time, so replicas sharing Redis agree; the
        counter is named by the key's prefix too, so a reused name starts afresh."""
        now = time.time()
        charge = self._rate_charges.get((key.name, key.prefix, per_minute))
        if charge is None:
            if len(self._rate_charges) >= RATE_CHARGES_KEPT:
                self._rate_charges.clear()
            charge = Charge.sliding(f"gateway-key|{key.name}|{key.prefix}", 1, per_minute, RATE_WINDOW)
            self._rate_charges[(key.name, key.prefix, per_minute)] = charge
        admission = await self.state.counters.take([charge], now)
        if admission.admitted:
            return 0.0
        return RATE_WINDOW if admission.frees_at is None else max(admission.frees_at - now, 0.001)


# ----------------------------------------------------------------- pieces


class _ClientGone(Exception):
    """The client went away while we read its body: nothing to answer."""


def _headers(scope: Scope) -> dict[bytes, bytes]:
    """Header names lower-cased; the first of repeats wins. A second Host
    header is refused here. ASGI servers hand the names lower-cased, so a
    request that repeats no name (nearly all) is one `dict` in C; only one
    that repeats some name is walked in Python."""
    raw = scope["headers"]
    found: dict[bytes, bytes] = dict(raw)
    if len(found) == len(raw) and b"".join(found).islower():  # no repeats, no upper case: in C
        return found
    found = {}
    for name, value in raw:
        lowered = name.lower()
        if lowered in found:
            if lowered == b"host":
                message = "the request has more than one Host header (RFC 9112: one, exactly)"
                raise Refused(message, status=400)
            continue
        found[lowered] = value
    return found


def _split_host(value: str) -> tuple[str | None, int | None]:
    """`"[::1]:8122"` -> `("::1", 8122)`, `"Example.org."` -> `("example.org", None)`;
    `(None, None)` for something that is not a host."""
    value = value.strip().lower()
    port_text = ""
    if value.startswith("["):
        end = value.find("]")
        if end == -1:
            return None, None
        name, rest = value[1:end], value[end + 1 :]
        if rest:
            if not rest.startswith(":"):
                return None, None
            port_text = rest[1:]
    elif value.count(":") == 1:
        name, port_text = value.split(":")
    else:
        name = value
    name = name.rstrip(".")
    if ":" in name and not _is_ip(name):
        return None, None  # colons only in an IPv6 literal
    if not name or (port_text and not (port_text.isascii() and port_text.isdigit() and len(port_text) <= 5)):
        return None, None
    return name, int(port_text) if port_text else None


def _is_ip(name: str) -> bool:
    try:
        ipaddress.ip_address(name)
    except ValueError:
        return False
    return True


def _check_origin(origin: bytes | None, host: str) -> None:
    """Refuse a state-changing request from another origin's page."""
    if origin is None:
        return
    text = origin.decode("latin-1").strip()
    if _same_origin(text, host):
        return
    raise Refused(
        f"requests from the web page at {text!r} are refused: a page of another origin may not "
        "call this server (use an API client)",
        status=403,
    )


def _same_origin(origin: str, host: str) -> bool:
    try:
        parts = urlsplit(origin)
        origin_port = parts.port
    except ValueError:
        return False
    if parts.scheme not in ("http", "https") or not parts.hostname:
        return False  # "null" (sandboxed frames, file://) and other schemes
    default = 443 if parts.scheme == "https" else 80
    name, port = _split_host(host)
    return parts.hostname.rstrip(".") == name and (origin_port or default) == (port or default)


def _sent_keys(headers: dict[bytes, bytes], query: bytes) -> list[str]:
    """Every key the request carries, in the order we trust them."""
    sent: list[str] = []
    auth = headers.get(b"authorization", b"").decode("latin-1").strip()
    scheme, _, token = auth.partition(" ")
    if scheme.lower() == "bearer" and token.strip():
        sent.append(token.strip())
    for name in formats_registry.key_headers():
        found = headers.get(name)  # most requests send none of these: nothing decoded for them
        if found and (value := found.decode("latin-1").strip()):
            sent.append(value)
    if b"=" in query:
        names = formats_registry.key_query_names()
        sent.extend(v for k, v in parse_qsl(query.decode("latin-1")) if k in names and v)
    return sent


async def _read_body(headers: dict[bytes, bytes], receive: Receive, limit: int) -> tuple[Receive, bytes]:
    """Read the whole body (refusing it past `limit`) and check its JSON
    depth; return it, and a `receive` that replays it and then hands on to
    the real one (so a route still learns when the client disconnects)."""
    length = headers.get(b"content-length")
    if length is not None:
        if not length.strip().isdigit():
            raise Refused("the Content-Length header is not a number", status=400)
        size = int(length)
        if size > limit:
            if size - limit <= DRAIN_BYTES and b"expect" not in headers:
                await _drain(receive, more_body=True, budget=size)
            raise _too_big(limit)
        if size == 0:
            return receive, b""
    elif b"transfer-encoding" not in headers:
        return receive, b""  # HTTP/1.1: no length, no chunks, no body
    chunks: list[bytes] = []
    size = 0
    loop = asyncio.get_running_loop()
    whole = loop.time() + BODY_SECONDS
    while True:
        try:
            message = await received_by(receive, min(whole, loop.time() + BODY_IDLE_SECONDS))
        except TimeoutError:
            raise Refused(
                f"the request body did not arrive in time (no byte for {BODY_IDLE_SECONDS:g} s, or not "
                f"all of it within {BODY_SECONDS:g} s)",
                status=408,
                headers={"connection": "close"},
            ) from None
        if message["type"] == "http.disconnect":
            raise _ClientGone
        chunk = message.get("body", b"")
        size += len(chunk)
        if size > limit:
            await _drain(receive, more_body=message.get("more_body", False), budget=DRAIN_BYTES)
            raise _too_big(limit)
        chunks.append(chunk)
        if not message.get("more_body", False):
            break
    body = b"".join(chunks)
    if json_too_deep(body, MAX_JSON_DEPTH):
        raise Refused(f"the JSON body is nested deeper than {MAX_JSON_DEPTH} levels", status=400)
    replayed = False

    async def replay() -> Message:
        nonlocal replayed
        if not replayed:
            replayed = True
            return {"type": "http.request", "body": body, "more_body": False}
        return await receive()

    return replay, body


async def _drain(receive: Receive, *, more_body: bool, budget: int) -> None:
    """Read and drop the rest of a body refused as too large, up to `budget`
    bytes or `DRAIN_SECONDS`: a declared Content-Length is drained whole when
    it is at most `DRAIN_BYTES` past the limit, an undeclared (chunked) body
    up to `DRAIN_BYTES`. Most clients send the whole body before
    they read the reply; closing the connection with their bytes unread makes
    the kernel reset it, and they see "connection reset" instead of our 413
    (nginx's lingering close, for the same reason). Past the bounds the
    connection is closed anyway: a refused body is not read without end. Not
    for a client that sent `Expect: 100-continue`: it waits for our answer
    before it sends, and reading would tell it to go on."""
    dropped = 0
    try:
        async with asyncio.timeout(DRAIN_SECONDS):
            while more_body and dropped < budget:
                message = await receive()
                if message["type"] == "http.disconnect":
                    return
                dropped += len(message.get("body", b""))
                more_body = message.get("more_body", False)
    except TimeoutError:
        pass


async def received_by(receive: Receive, deadline: float) -> Message:
    """The next message from `receive`, or TimeoutError past `deadline`.

    A body that came with its head (most do) is already there, and the
    server's `receive` hands it over without waiting: so it is stepped once
    by hand, and only one that has to wait is awaited under a timer
    (`asyncio.timeout_at`, some 6 us a request under uvloop, for a wait
    that almost never happens)."""
    pending = receive()
    if not isinstance(pending, CoroutineType):  # some other awaitable: no stepping
        async with asyncio.timeout_at(deadline):
            return await pending
    try:
        waits_on = pending.send(None)
    except StopIteration as done:
        message: Message = done.value
        return message
    async with asyncio.timeout_at(deadline):
        return await _Rest(pending, waits_on)


class _Rest:
    """A coroutine stepped once by hand (it yielded `waits_on`), awaited
    for the rest of its run as `await` would have: what the task sends or
    throws in (its cancellation included) goes on to it."""

    __slots__ = ("_coroutine", "_waits_on")

    def __init__(self, coroutine: CoroutineType[Any, Any, Message], waits_on: Any) -> None:
        self._coroutine = coroutine
        self._waits_on = waits_on

    def __await__(self) -> Generator[Any, Any, Message]:
        coroutine, waits_on = self._coroutine, self._waits_on
        while True:
            try:
                sent = yield waits_on
            except GeneratorExit:
                coroutine.close()
                raise
            except BaseException as exc:  # handed on, as `await` would
                try:
                    waits_on = coroutine.throw(exc)
                except StopIteration as done:
                    result: Message = done.value
                    return result
            else:
                try:
                    waits_on = coroutine.send(sent)
                except StopIteration as done:
                    result = done.value
                    return result


def _too_big(limit: int) -> Refused:
    return Refused(
        f"the request body is larger than the limit of {limit // MB} MB ({limit} bytes); "
        "send less, or raise it: `benchwarmers settings set max_body_mb <MB>`",
        status=413,
        headers={"connection": "close"},
    )


def json_too_deep(body: bytes, limit: int) -> bool:
    """Whether JSON text nests arrays/objects deeper than `limit`. Brackets
    inside strings do not count. Cheap for the usual body: when there are
    not even `limit` opening brackets it does no scan at all."""
    stripped = body.lstrip()
    if not stripped.startswith((b"{", b"[")) or stripped.count(b"{") + stripped.count(b"[") <= limit:
        return False
    brackets = _JSON_STRING.sub(b"", stripped).translate(None, _NOT_BRACKET)
    depth = 0
    for byte in brackets:
        if byte in (0x5B, 0x7B):  # [ {
            depth += 1
            if depth > limit:
                return True
        else:
            depth -= 1
    return False


async def _refuse(send: Send, path: str, status: int, message: str, headers: dict[str, str]) -> None:
    """A refusal in the format of the path's API (worked out only now: most requests pass)."""
    body = error_bytes(format_for_path(path), status, message)
    raw = [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]
    raw.extend((k.lower().encode("latin-1"), v.encode("latin-1")) for k, v in headers.items())
    await send({"type": "http.response.start", "status": status, "headers": raw})
    await send({"type": "http.response.body", "body": body, "more_body": False})
