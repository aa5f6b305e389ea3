"""`benchwarmers serve` listens on loopback unless told otherwise (SECURITY.md)."""

from __future__ import annotations

import inspect

import pytest

from benchwarmers.cli.serve import serve
from benchwarmers.server import DEFAULT_HOST

pytestmark = pytest.mark.unit


def test_serve_listens_on_loopback_unless_told() -> None:
    assert DEFAULT_HOST == "127.0.0.1"
    assert inspect.signature(serve).parameters["host"].default == DEFAULT_HOST
