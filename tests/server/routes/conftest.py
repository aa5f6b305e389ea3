"""Fixtures for the hardening tests (what they build on is in hardening_support.py).

- `bench`: one live server per test module over the fake provider.
- `client`: an httpx client on it, for the module.
"""

from __future__ import annotations

from collections.abc import Iterator

import httpx
import pytest

from .hardening_support import Bench, start_bench


@pytest.fixture(scope="module")
def bench(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Bench]:
    yield from start_bench(tmp_path_factory.mktemp("home"))


@pytest.fixture(scope="module")
def client(bench: Bench) -> Iterator[httpx.Client]:
    with httpx.Client(base_url=bench.url, timeout=30) as http:
        yield http
