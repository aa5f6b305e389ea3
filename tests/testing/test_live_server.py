"""`testing.live_server`: starts fast, stops cleanly, restarts on the same
data folder and port, and says why when it cannot start."""

from __future__ import annotations

import asyncio
from pathlib import Path

import httpx
import pytest

from benchwarmers.identity.keys import create_key, list_keys
from benchwarmers.runtime import Runtime
from benchwarmers.testing.live_server import LiveServer, live_server
from tests.server.probes import OWN_ROUTERS


def test_restart_keeps_the_data_folder_and_port(home: Path) -> None:
    with live_server(home, routers=OWN_ROUTERS) as server:
        url = server.url
        with httpx.Client() as client:
            assert client.get(f"{url}/healthz").status_code == 200
            asyncio.run(_add_key(home))
            server.restart()
            assert server.url == url
            assert client.get(f"{url}/healthz").status_code == 200
    with pytest.raises(httpx.ConnectError):
        httpx.get(f"{url}/healthz")
    assert asyncio.run(_key_names(home)) == ["kept"]


def test_a_failed_start_says_why(tmp_path: Path) -> None:
    not_a_folder = tmp_path / "file"
    not_a_folder.write_text("")
    with pytest.raises(RuntimeError, match="is a file, not a folder"):
        LiveServer(not_a_folder, routers=OWN_ROUTERS).start()


def test_the_whole_app_starts(home: Path) -> None:
    """Every router the app lists mounts and the lifespan runs."""
    with live_server(home) as server:
        assert httpx.get(f"{server.url}/healthz").json()["ok"] is True


async def _add_key(home: Path) -> None:
    async with Runtime.open(home) as runtime:
        await create_key(runtime.store, "kept")


async def _key_names(home: Path) -> list[str]:
    async with Runtime.open(home) as runtime:
        return [k.name for k in await list_keys(runtime.store)]
