"""Who may read `GET /metrics`: the same Host and key rules as the bench
routes, and only a caller who may administer (the figures name every
collection and member)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from benchwarmers.server.routes import health, metrics
from benchwarmers.testing.live_server import LiveServer
from tests.server.conftest import new_key

ROUTERS = (health.router, metrics.router)


@pytest.fixture
def metrics_server(home: Path) -> Iterator[LiveServer]:
    """A server acting as bound to every address (keys required), with the metrics route."""
    server = LiveServer(home, acting_as="0.0.0.0", routers=ROUTERS).start()
    yield server
    server.stop()


def test_metrics_need_an_unscoped_key_when_exposed(home: Path, metrics_server: LiveServer) -> None:
    full = new_key(home, "ops")
    scoped = new_key(home, "one", collections=("trio",))
    server = metrics_server
    url = f"{server.url}/metrics"
    assert httpx.get(url).status_code == 401
    assert httpx.get(url, headers={"authorization": f"Bearer {scoped}"}).status_code == 403
    reply = httpx.get(url, headers={"authorization": f"Bearer {full}"})
    assert reply.status_code == 200 and "benchwarmers_requests_total" in reply.text
    assert httpx.get(url, headers={"host": "evil.example"}).status_code == 421


def test_the_owner_on_loopback_reads_them(home: Path) -> None:
    server = LiveServer(home, routers=ROUTERS).start()
    try:
        assert httpx.get(f"{server.url}/metrics").status_code == 200
    finally:
        server.stop()
