"""The settings as people see and change them (the CLI and `/bench/settings`).

One place decides what a setting looks like from outside, so the command
line and the HTTP API cannot drift apart:

- every declared setting is listed with its value, default and description;
- the login password is write-only: it is listed as `login_password` with
  `true`/`false` (set or not), set from the password itself (hashed here,
  see `identity/passwords.py`), and the stored hash never leaves the store and
  cannot be written directly;
- a name nobody declared, or a value that does not parse, is the caller's
  mistake (`UserError`, a 400 over HTTP) with the reason in words.

    rows = await setting_rows(runtime.settings)
    row = await change_setting(runtime.settings, "max_body_mb", "50")
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from benchwarmers.errors import UserError
from benchwarmers.identity import passwords, sessions
from benchwarmers.store.settings import LOGIN_PASSWORD_HASH, SETTINGS, Settings

LOGIN_PASSWORD = "login_password"


@dataclass(frozen=True, slots=True)
class SettingRow:
    name: str
    value: Any
    default: Any
    description: str

    def as_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "value": self.value,
            "default": self.default,
            "description": self.description,
        }


def setting_names() -> list[str]:
    """The names people use, in declaration order."""
    return [LOGIN_PASSWORD if name == LOGIN_PASSWORD_HASH.name else name for name in SETTINGS]


async def setting_rows(settings: Settings) -> list[SettingRow]:
    values = await settings.all()
    return [_row(name, values) for name in setting_names()]


async def setting_row(settings: Settings, name: str) -> SettingRow:
    _check_name(name)
    return _row(name, await settings.all())


async def change_setting(settings: Settings, name: str, value: Any) -> SettingRow:
    """Validate and store one setting; returns it as it now reads."""
    _check_name(name)
    if name == LOGIN_PASSWORD:
        await settings.set(LOGIN_PASSWORD_HASH, _password_hash(value))
        await sessions.end_all(settings.store)  # a new password ends every session
    else:
        await settings.set_named(name, value)
    return await setting_row(settings, name)


def _row(name: str, values: dict[str, Any]) -> SettingRow:
    if name == LOGIN_PASSWORD:
        return SettingRow(
            name,
            bool(values[LOGIN_PASSWORD_HASH.name]),
            False,
            "dashboard login password: write-only, shown as set (true) or not (false); empty clears it",
        )
    setting = SETTINGS[name]
    # Coerced, so a caller never holds the declared default itself (a list it could change).
    return SettingRow(name, values[name], setting.coerce(setting.default), setting.description)


def _check_name(name: str) -> None:
    if name == LOGIN_PASSWORD_HASH.name:
        raise UserError(f"{name} is never shown or set directly; set {LOGIN_PASSWORD} to the password")
    if name not in setting_names():
        raise UserError(f"no setting {name!r}; settings: {', '.join(setting_names())}")


def _password_hash(value: Any) -> str:
    """The hash to store: "" (no password) for an empty value."""
    if not isinstance(value, str):
        raise UserError(f"setting {LOGIN_PASSWORD}: expected text")
    if not value:
        return ""
    if len(value) < passwords.MIN_LENGTH:
        raise UserError(f"setting {LOGIN_PASSWORD}: use at least {passwords.MIN_LENGTH} characters")
    return passwords.hash_password(value)
