"""Typed settings over the `settings` table.

Each setting is declared once, here, with its type and default, so the
CLI and `/bench/settings` (both through `core/settings.py`) and the guard
agree on what a value means and a fresh install behaves safely without
any row: the scheduler is off (it spends no calls until the user switches
it on), only loopback hosts are allowed, and gateway keys are required only
when the server is exposed.

    settings = Settings(store)
    if await settings.get(SCHEDULER): ...
    await settings.set(ALLOWED_HOSTS, ["bench.example.org"])
    await settings.set_named("require_key", "true")   # from a form or the CLI

`get` and `all` read the store every time, so several server replicas on
one PostgreSQL see a change at once. `current` is `all` for the request
path (the guard's policy and the panel caps, read on every request): from
memory until the settings change in this process, or within the cache's
few seconds when another process changes them (`store/changes.py`).

Add a setting: declare a `Setting` below and put it in `SETTINGS`.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

from sqlalchemy import select

from benchwarmers.errors import NotFound, UserError
from benchwarmers.store import schema
from benchwarmers.store.changes import Cached
from benchwarmers.store.db import Store

T = TypeVar("T")


@dataclass(frozen=True)
class Setting(Generic[T]):
    name: str
    default: T
    # Turns a stored or submitted value into T, raising ValueError with a reason.
    coerce: Callable[[Any], T]
    description: str


def _boolean(value: Any) -> bool:
    if isinstance(value, bool):
        return value
    if isinstance(value, str) and value.strip().lower() in {"true", "on", "yes", "1"}:
        return True
    if isinstance(value, str) and value.strip().lower() in {"false", "off", "no", "0"}:
        return False
    raise ValueError("expected true or false")


def _hosts(value: Any) -> list[str]:
    if isinstance(value, str):
        value = value.replace(",", " ").split()
    if not isinstance(value, list) or not all(isinstance(item, str) for item in value):
        raise ValueError("expected a list of host names")
    hosts = [item.strip().lower() for item in value if item.strip()]
    for host in hosts:
        if "/" in host or " " in host:
            raise ValueError(f"{host!r} is not a host name (no scheme, no path)")
    return list(dict.fromkeys(hosts))


def _names(value: Any) -> list[str]:
    if isinstance(value, str):
        value = value.replace(",", " ").split()
    if not isinstance(value, list) or not all(isinstance(item, str) for item in value):
        raise ValueError("expected a list of names")
    return list(dict.fromkeys(item.strip() for item in value if item.strip()))


def _positive_int(value: Any) -> int:
    if isinstance(value, str) and value.strip().isascii() and value.strip().isdigit():
        value = int(value.strip())
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ValueError("expected a whole number of at least 1")
    return value


def _text(value: Any) -> str:
    if not isinstance(value, str):
        raise ValueError("expected text")
    return value


SCHEDULER: Setting[bool] = Setting(
    "scheduler", False, _boolean, "run probes, speed tests, catalog refresh and suite passes on a schedule"
)
ALLOWED_HOSTS: Setting[list[str]] = Setting(
    "allowed_hosts", [], _hosts, "Host header names accepted besides loopback names"
)
REQUIRE_KEY: Setting[bool] = Setting("require_key", False, _boolean, "require a gateway key even on loopback")
MAX_BODY_MB: Setting[int] = Setting(
    "max_body_mb", 20, _positive_int, "largest request body the server reads, in megabytes"
)
MAX_PANELS: Setting[int] = Setting(
    "max_panels", 64, _positive_int, "panels the server runs at once; past it an ask gets 429"
)
MAX_PANELS_PER_KEY: Setting[int] = Setting(
    "max_panels_per_key", 8, _positive_int, "panels one gateway key may run at once; past it 429"
)
STREAM_STALL_SECONDS: Setting[int] = Setting(
    "stream_stall_seconds",
    30,
    _positive_int,
    "seconds a client may read nothing of a reply we are sending before it is cut "
    "(its panel stops as when a client hangs up: the seats still answering are cancelled)",
)
LOGIN_USER: Setting[str] = Setting("login_user", "", _text, "dashboard login name (empty: no login)")
# A password hash (`identity/passwords.py`), never the password; never shown (`core/settings.py`).
LOGIN_PASSWORD_HASH: Setting[str] = Setting("login_password_hash", "", _text, "dashboard login password hash")

# Discover entries ("provider/model") the user dismissed on the Onboard page: hidden from the list.
DISCOVER_DISMISSED: Setting[list[str]] = Setting(
    "discover_dismissed", [], _names, "Discover entries (provider/model) hidden on the Onboard page"
)

SETTINGS: dict[str, Setting[Any]] = {
    s.name: s
    for s in (
        SCHEDULER,
        ALLOWED_HOSTS,
        REQUIRE_KEY,
        MAX_BODY_MB,
        MAX_PANELS,
        MAX_PANELS_PER_KEY,
        STREAM_STALL_SECONDS,
        LOGIN_USER,
        LOGIN_PASSWORD_HASH,
        DISCOVER_DISMISSED,
    )
}


class Settings:
    def __init__(self, store: Store) -> None:
        self.store = store

    async def get(self, setting: Setting[T]) -> T:
        async with self.store.read() as session:
            row = await session.get(schema.Setting, setting.name)
        if row is None:
            return setting.coerce(setting.default)  # a fresh copy: callers may mutate what they get
        try:
            return setting.coerce(row.value)
        except ValueError:
            # A value written by an older version that no longer parses: the default is the safe reading.
            return setting.coerce(setting.default)

    async def set(self, setting: Setting[T], value: Any) -> T:
        try:
            clean = setting.coerce(value)
        except ValueError as exc:
            raise UserError(f"setting {setting.name}: {exc}") from None
        async with self.store.write() as session:
            row = await session.get(schema.Setting, setting.name)
            if row is None:
                session.add(schema.Setting(key=setting.name, value=clean))
            else:
                row.value = clean
        return clean

    async def set_named(self, name: str, value: Any) -> Any:
        """Set by name, from a form or the command line (strings are parsed:
        "true", "a.example, b.example", or JSON)."""
        setting = _lookup(name)
        if isinstance(value, str) and value.strip().startswith(("[", "{", '"')):
            try:
                value = json.loads(value)
            except json.JSONDecodeError:
                raise UserError(f"setting {name}: the value is not valid JSON") from None
        return await self.set(setting, value)

    async def all(self) -> dict[str, Any]:
        """Every declared setting with its current value."""
        async with self.store.read() as session:
            rows = {row.key: row.value for row in (await session.scalars(select(schema.Setting))).all()}
        values: dict[str, Any] = {}
        for name, setting in SETTINGS.items():
            try:
                values[name] = setting.coerce(rows[name]) if name in rows else setting.default
            except ValueError:
                values[name] = setting.default
        return values

    async def current(self) -> dict[str, Any]:
        """`all`, kept in memory (see above). Not to be mutated."""
        return await _CURRENT.get(self.store, self.all)


_CURRENT: Cached[dict[str, Any]] = Cached(("settings",))


def forget_current() -> None:
    """`current` reads the store again next time (a change made behind its back)."""
    _CURRENT.forget()


def _lookup(name: str) -> Setting[Any]:
    try:
        return SETTINGS[name]
    except KeyError:
        raise NotFound(f"no setting {name!r}; known: {', '.join(SETTINGS)}") from None
