"""Regenerate the store's single Alembic revision from `store/schema.py`.

Until the first release the store has one migration, the initial schema;
whoever changes `schema.py` runs this and commits the new file:

    .venv/bin/python scripts/regen_migration.py

It deletes the old revision, autogenerates a new one against an empty
SQLite database (revision id 0001), and formats it with ruff.
"""

from __future__ import annotations

import asyncio
import subprocess
import sys
import tempfile
from pathlib import Path

from alembic import command
from sqlalchemy import Connection

from benchwarmers.store.db import Store
from benchwarmers.store.migrate import MIGRATIONS, alembic_config

VERSIONS = MIGRATIONS / "versions"


def _autogenerate(connection: Connection) -> None:
    command.revision(alembic_config(connection), message="initial schema", autogenerate=True, rev_id="0001")


async def main() -> None:
    for old in VERSIONS.glob("*.py"):
        old.unlink()
    with tempfile.TemporaryDirectory() as tmp:
        store = Store(f"sqlite:///{Path(tmp) / 'empty.db'}")
        async with store.engine.begin() as connection:
            await connection.run_sync(_autogenerate)
        await store.close()
    ruff = [sys.executable, "-m", "ruff"]
    subprocess.run([*ruff, "format", "--quiet", str(VERSIONS)], check=True)
    subprocess.run([*ruff, "check", "--fix", "--quiet", str(VERSIONS)], check=True)
    for new in VERSIONS.glob("*.py"):
        print(f"wrote {new}")


if __name__ == "__main__":
    asyncio.run(main())
