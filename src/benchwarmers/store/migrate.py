"""Run the store's Alembic migrations to head, on start, from inside the
package: no alembic.ini, no working-directory assumptions, so `pip install`
and `benchwarmers serve` are enough.

Alembic is synchronous and our engine async, so the upgrade runs on the
async connection through `run_sync`; `migrations/env.py` takes that
connection from the config's attributes instead of building an engine.

On PostgreSQL several replicas may start at once; a transaction-scoped
advisory lock lets one of them migrate while the others wait and then find
nothing to do. SQLite has one process per data folder in practice, and its
write lock serialises the rest.

After a change to `schema.py`, its revision on top of the last:
`.venv/bin/python scripts/new_migration.py "what changed"` (see that script).
"""

from __future__ import annotations

import functools
from pathlib import Path

from alembic import command
from alembic.config import Config
from alembic.runtime.migration import MigrationContext
from alembic.script import ScriptDirectory
from sqlalchemy import Connection, text

from benchwarmers.errors import StoreError
from benchwarmers.store.db import Store, redacted_url

MIGRATIONS = Path(__file__).with_name("migrations")
# Any fixed number: the key of the PostgreSQL advisory lock taken while migrating.
_PG_LOCK_KEY = 0x42E4C4
# Index entries SQLite samples per index when refreshing statistics at start.
ANALYSIS_ROWS = 1000


def alembic_config(connection: Connection | None = None) -> Config:
    config = Config()
    config.set_main_option("script_location", str(MIGRATIONS))
    config.attributes["connection"] = connection
    return config


@functools.cache
def _scripts() -> ScriptDirectory:
    """The revisions shipped with this package, read once per process (reading
    them runs each revision file: a good part of opening a store otherwise)."""
    return ScriptDirectory.from_config(alembic_config())


def head_revision() -> str | None:
    return _scripts().get_current_head()


async def migrate(store: Store) -> None:
    """Bring the store to the newest schema; one clear StoreError if not."""
    await store.check()
    try:
        async with store.engine.begin() as connection:
            await connection.run_sync(_upgrade)
    except StoreError:
        raise
    except Exception as exc:  # alembic and driver errors all mean "cannot migrate" to the user
        raise StoreError(f"cannot migrate the store at {redacted_url(store.url)}: {exc}") from exc


async def current_revision(store: Store) -> str | None:
    async with store.engine.connect() as connection:
        return await connection.run_sync(lambda conn: MigrationContext.configure(conn).get_current_revision())


def _upgrade(connection: Connection) -> None:
    if connection.dialect.name == "postgresql":
        connection.execute(text("SELECT pg_advisory_xact_lock(:key)"), {"key": _PG_LOCK_KEY})
    current = MigrationContext.configure(connection).get_current_revision()
    known = {script.revision for script in _scripts().walk_revisions()}
    if current is not None and current not in known:
        raise StoreError(
            f"the store is at schema revision {current}, which this version of benchwarmers does not know "
            "(was it written by a newer version?)"
        )
    if current != head_revision():  # at head, an upgrade would only read the revisions again
        command.upgrade(alembic_config(connection), "head")
    if connection.dialect.name == "sqlite":
        _refresh_statistics(connection)


def _refresh_statistics(connection: Connection) -> None:
    """Fresh planner statistics on every start. Without them SQLite guesses
    join orders and index choices, and with a long call log a wrong guess
    reads every call. A bounded sample (`analysis_limit`) keeps this to
    milliseconds however big the log; PostgreSQL's autovacuum does its own."""
    connection.exec_driver_sql(f"PRAGMA analysis_limit={ANALYSIS_ROWS}")
    connection.exec_driver_sql("ANALYZE")
