"""Which form field a refusal belongs to, so the page can show it beside that field.

The rules stay where they live (behind `core`: the registry's names, the
keys' form, the settings' values): the dashboard never checks a value a
second way. It only says which field it handed to a rule, so a `UserError`
raised there becomes a `FieldError` naming the field:

    with field("name"):
        check_endpoint(name, base_url, api)

A page submits a form as JSON; a refusal comes back as
`{"error": {"message", "field"}}` (see `api.py`), and `app.js` puts the
message beside the field (or above the form when `field` is empty).
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from benchwarmers.errors import UserError


class FieldError(UserError):
    """A `UserError` about one form field (`field` is the form's name for it)."""

    def __init__(self, field_name: str, message: str, *, status: int = 400) -> None:
        super().__init__(message, status=status, field=field_name)


@contextmanager
def field(name: str) -> Iterator[None]:
    """Attribute any `UserError` raised inside to the form field `name`."""
    try:
        yield
    except FieldError:
        raise
    except UserError as exc:
        raise FieldError(exc.field or name, str(exc), status=exc.status) from None


def text(body: dict[str, Any], name: str, *, required: bool = False, label: str = "") -> str:
    """A text field of a submitted form, stripped; a clear refusal when it is
    not text, or missing and `required`."""
    value = body.get(name, "")
    if value is None:
        value = ""
    if not isinstance(value, str):
        raise FieldError(name, f"{label or name} must be text")
    value = value.strip()
    if required and not value:
        raise FieldError(name, f"{label or name} is required")
    return value


def number(body: dict[str, Any], name: str, *, label: str = "", whole: bool = True) -> float | None:
    """A number field (empty: None). Forms send numbers as text or as numbers."""
    value = body.get(name)
    if value is None or (isinstance(value, str) and not value.strip()):
        return None
    if isinstance(value, bool):
        raise FieldError(name, f"{label or name} must be a number")
    try:
        parsed = float(value)
    except (TypeError, ValueError, OverflowError):  # OverflowError: a whole number past a float's range
        raise FieldError(name, f"{label or name} must be a number") from None
    if parsed != parsed or parsed in (float("inf"), float("-inf")):
        raise FieldError(name, f"{label or name} must be a number")
    if whole and parsed != int(parsed):
        raise FieldError(name, f"{label or name} must be a whole number")
    if parsed < 0:
        raise FieldError(name, f"{label or name} cannot be negative")
    return parsed


def switch(body: dict[str, Any], name: str, *, label: str = "") -> bool | None:
    """A box that is on or off: `true` or `false` (a string "false" is no
    switch, and refused rather than read as on); None when left out."""
    if name not in body:
        return None
    value = body[name]
    if not isinstance(value, bool):
        raise FieldError(name, f"{label or name} is on or off (true or false)")
    return value


def names(body: dict[str, Any], name: str) -> list[str]:
    """A list of names (ticked boxes, or text separated by commas or spaces)."""
    value = body.get(name, [])
    if isinstance(value, str):
        value = value.replace(",", " ").split()
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise FieldError(name, f"{name} must be a list of names")
    return [v.strip() for v in value if v.strip()]
