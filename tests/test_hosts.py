"""`benchwarmers.hosts`: what names this machine, the one rule the guard,
the launcher, the demo and `quickstart` read."""

from __future__ import annotations

import pytest

from benchwarmers.hosts import is_loopback

pytestmark = pytest.mark.unit


@pytest.mark.parametrize("host", ["127.0.0.1", "127.1.2.3", "localhost", "LocalHost", "::1", "[::1]"])
def test_this_machine(host: str) -> None:
    assert is_loopback(host)


@pytest.mark.parametrize(
    "host", ["0.0.0.0", "::", "", "10.0.0.1", "example.com", "localhost.example.com", "[::2]"]
)
def test_not_this_machine(host: str) -> None:
    assert not is_loopback(host)
