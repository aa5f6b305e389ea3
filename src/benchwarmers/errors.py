"""Our exception tree. Upstream errors are mapped into it once, at the
provider boundary (`providers/transport.py`), so nothing above that layer
ever sees an `httpx` exception or a provider's error body.

    BenchwarmersError
    ├── UserError                  bad input from a person or a client: a 4xx, one clear line
    │   ├── NotFound               unknown collection, alias, endpoint, call id (404)
    │   ├── Conflict               duplicate alias or name (409)
    │   ├── Refused                the guard said no: host, origin, key, rate, size (status on it)
    │   ├── Left                   the client hung up before its whole reply: its panel or turn stopped (499)
    │   └── BadBenchObject         a `bench` object our own client could not read (where, and why)
    ├── StoreError                 the data folder or database cannot be used
    │   └── StoreFull              no room to log a call: the ask is refused before any seat (507)
    └── ProviderError              an outbound call failed (status, message, retry_after)
        ├── ProviderTimeout        no answer, or no first byte, in time
        │   └── ProviderBusy       never went out: our outbound connections were all busy
        ├── ProviderConnectError   could not connect at all
        ├── ProviderRateLimited    429, or a quota body; retry_after when the provider said
        ├── ProviderAuthError      401/403: the key is missing, wrong or revoked
        ├── ProviderBadReply       a body or stream we could not read (malformed JSON, cut stream)
        ├── NoAnswer               no seat of a panel, no member of a route turn answered (our 502)
        └── LimitExceeded          our own limits refused the call before it went out

Every `ProviderError` knows whether any of the reply had been received
(`after_first_byte`), which route-mode failover needs: a member that fails
before its first byte is replaced, one that fails after cannot be.
"""

from __future__ import annotations


class BenchwarmersError(Exception):
    """Base of everything we raise on purpose."""


class UserError(BenchwarmersError):
    status: int = 400
    # The input field the refusal is about, when one is ("" otherwise): a form
    # (the dashboard's) shows the message beside it.
    field: str = ""

    def __init__(self, message: str, *, status: int | None = None, field: str = "") -> None:
        super().__init__(message)
        if status is not None:
            self.status = status
        if field:
            self.field = field


class NotFound(UserError):
    status = 404


class Conflict(UserError):
    status = 409


class Refused(UserError):
    """The guard's refusal; `headers` go on the response (e.g. Retry-After)."""

    status = 403

    def __init__(self, message: str, *, status: int = 403, headers: dict[str, str] | None = None) -> None:
        super().__init__(message, status=status)
        self.headers = headers or {}


class Left(UserError):
    """The client that waited for a whole reply hung up before it: its
    panel was stopped (the seats still answering cancelled upstream, logged
    `cancelled`), or its route turn (the member's call so cancelled, no
    other member asked: `calls/hangup.py`). Nobody reads the reply; 499 is
    the status the metrics count it under (nginx's "client closed request")."""

    status = 499


class BadBenchObject(UserError):
    """A `bench` object (or a streamed `bench_seat`) that is not the shape
    `formats/bench_json.py` writes: a missing key, a wrong type, an unknown
    status. The message names the place (`bench.seats[1].status`). It is
    the server's reply that is wrong, not the client's ask: 502."""

    status = 502


class StoreError(BenchwarmersError):
    pass


class StoreFull(StoreError):
    """The store cannot take a call now (its disk is full): an ask is
    refused with 507 before any model is asked (`store/space.py`)."""


class ProviderError(BenchwarmersError):
    def __init__(
        self,
        message: str,
        *,
        status: int | None = None,
        retry_after: float | None = None,
        headers: dict[str, str] | None = None,
        after_first_byte: bool = False,
    ) -> None:
        super().__init__(message)
        self.message = message
        self.status = status
        self.retry_after = retry_after
        self.headers = headers or {}
        self.after_first_byte = after_first_byte

    def __str__(self) -> str:
        prefix = f"HTTP {self.status}: " if self.status else ""
        return prefix + self.message


class ProviderTimeout(ProviderError):
    pass


class ProviderBusy(ProviderTimeout):
    """The call never left this process: every outbound connection its
    origin may have was busy until its deadline (`providers/outbound.py`). It
    says nothing about the model, so health checks do not count it."""


class ProviderConnectError(ProviderError):
    pass


class ProviderRateLimited(ProviderError):
    pass


class ProviderAuthError(ProviderError):
    pass


class ProviderBadReply(ProviderError):
    pass


class NoAnswer(ProviderError):
    """No seat of a panel, or no member of a route turn, answered: each
    failed or was cut for its own reason, which the message lists (a
    provider's own status among them). `status` is the status we answer
    with, no provider's, so `str()` is the message alone; and
    `providers_failed` says whether every one failed at its provider (not
    cut by our deadline, timed out or refused by our limits), the only case
    the gateway says a provider failed (`server/errors.py`)."""

    def __init__(self, message: str, *, providers_failed: bool, status: int = 502) -> None:
        super().__init__(message, status=status)
        self.providers_failed = providers_failed

    def __str__(self) -> str:
        return self.message


class LimitExceeded(ProviderError):
    """Refused by our own limits before sending. `frees_at` is a Unix time."""

    def __init__(self, message: str, *, frees_at: float | None = None) -> None:
        super().__init__(message, status=429)
        self.frees_at = frees_at
