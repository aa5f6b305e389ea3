"""Write the store's next Alembic revision from what `store/schema.py` now
says, for whoever changed it:

    .venv/bin/python scripts/new_migration.py "what changed"

Stores already in use are at some revision, so a change is a new revision
on top of the last (never an edit of an old one, which they would not run
again). This migrates an empty SQLite database to head, autogenerates the
difference as the next number (`0003_what_changed.py`), and formats it
with ruff. Read it before committing: autogenerate sees tables, columns,
types and indexes, and the revision's docstring should say why.
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
from benchwarmers.store.migrate import MIGRATIONS, alembic_config, head_revision

VERSIONS = MIGRATIONS / "versions"


def _autogenerate(connection: Connection, message: str) -> None:
    config = alembic_config(connection)
    command.upgrade(config, "head")
    rev_id = f"{int(head_revision() or 0) + 1:04d}"
    command.revision(config, message=message, autogenerate=True, rev_id=rev_id)


async def main(message: str) -> None:
    before = set(VERSIONS.glob("*.py"))
    with tempfile.TemporaryDirectory() as tmp:
        store = Store(f"sqlite:///{Path(tmp) / 'empty.db'}")
        async with store.engine.begin() as connection:
            await connection.run_sync(_autogenerate, message)
        await store.close()
    ruff = [sys.executable, "-m", "ruff"]
    subprocess.run([*ruff, "format", "--quiet", str(VERSIONS)], check=True)
    subprocess.run([*ruff, "check", "--fix", "--quiet", str(VERSIONS)], check=True)
    for new in set(VERSIONS.glob("*.py")) - before:
        print(f"wrote {new}")


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    asyncio.run(main(sys.argv[1]))
