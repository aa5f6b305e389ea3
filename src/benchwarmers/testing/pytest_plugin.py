"""Pytest fixtures for the fake provider.

Import the fixtures into a test module or a conftest (pytest takes
`pytest_plugins = ["benchwarmers.testing.pytest_plugin"]` only in the root
conftest; importing works anywhere):

    from benchwarmers.testing.pytest_plugin import fake_provider, fake_provider_server  # noqa: F401

    def test_answer(fake_provider):
        fake_provider.add(FakeModel("m1", answer="hello"))
        ... point an endpoint at fake_provider.openai_base (or .url) ...
        assert fake_provider.calls["m1"] == 1

One server is started per test module (starting uvicorn costs ~50 ms) and
reset before every test: no models, no counts, no required key. Add models
with `fake_provider.add(...)`; to require a key set `fake_provider.key`.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:  # imported where a server starts: every test process loads this plugin
    from benchwarmers.testing.fake_provider import FakeProvider


@pytest.fixture(scope="module")
def fake_provider_server() -> Iterator[FakeProvider]:
    from benchwarmers.testing.fake_provider import FakeProvider

    with FakeProvider() as provider:
        yield provider


@pytest.fixture
def fake_provider(fake_provider_server: FakeProvider) -> FakeProvider:
    fake_provider_server.models.clear()
    fake_provider_server.key = None
    fake_provider_server.reset_counts()
    return fake_provider_server
