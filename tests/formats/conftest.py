"""Fixtures for the format tests (what they build on is in formats_support.py).

- `events`, `reply`: a two-seat panel's events (and reply) as an engine
  yields them, for the pure translators.
- `gateway`: one live server per test module over a fake provider, with the
  collection `trio` of three fake models on endpoints of three API kinds.
- `exposed_gateway`: the same, acting as if bound beyond loopback (keys
  required).
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Iterator

import pytest

from benchwarmers.types import PanelEvent, PanelReply

from .formats_support import REPLY, Gateway, event_stream, start_gateway


@pytest.fixture
def events() -> Callable[[], AsyncIterator[PanelEvent]]:
    return event_stream


@pytest.fixture
def reply() -> PanelReply:
    return REPLY


@pytest.fixture(scope="module")
def gateway(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Gateway]:
    yield from start_gateway(tmp_path_factory.mktemp("home"))


@pytest.fixture(scope="module")
def exposed_gateway(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Gateway]:
    """A gateway that believes it listens beyond loopback: keys required."""
    yield from start_gateway(tmp_path_factory.mktemp("home"), acting_as="0.0.0.0")
