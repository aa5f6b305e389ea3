"""Foundation fixtures: a throwaway PostgreSQL database (skipped, with the
reason, when PostgreSQL is not running)."""

from __future__ import annotations

import os
import uuid
from collections.abc import AsyncIterator

import asyncpg
import pytest

POSTGRES_URL = os.environ.get("BENCHWARMERS_TEST_POSTGRES_URL", "postgresql://postgres@127.0.0.1:5432/test")


@pytest.fixture
async def postgres_url() -> AsyncIterator[str]:
    """A fresh, empty database on the local PostgreSQL, dropped afterwards."""
    try:
        admin = await asyncpg.connect(POSTGRES_URL, timeout=3)
    except (TimeoutError, OSError, asyncpg.PostgresError) as exc:
        pytest.skip(f"PostgreSQL is not reachable at {POSTGRES_URL}: {exc}")
    name = f"bw_test_{uuid.uuid4().hex[:12]}"
    await admin.execute(f'CREATE DATABASE "{name}"')
    try:
        yield POSTGRES_URL.rsplit("/", 1)[0] + "/" + name
    finally:
        await admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        await admin.close()
