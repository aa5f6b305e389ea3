"""Helpers for route-mode tests: reading the live server's store."""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any

from benchwarmers.testing.live_server import settle_logs


def rows(home: Path, sql: str, *args: Any) -> list[dict[str, Any]]:
    settle_logs()  # replies do not wait for their calls' commit
    with sqlite3.connect(home / "benchwarmers.db") as db:
        db.row_factory = sqlite3.Row
        return [dict(row) for row in db.execute(sql, args)]


def call_row(home: Path, call_id: str) -> dict[str, Any]:
    found = rows(home, "SELECT * FROM calls WHERE id = ?", call_id)
    assert found, f"call {call_id} is not in the call log"
    return found[0]
