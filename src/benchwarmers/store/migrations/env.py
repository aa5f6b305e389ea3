"""Alembic environment for the store. It never builds an engine: the caller
(`store/migrate.py`, or scripts/new_migration.py) hands it a live
connection in `config.attributes["connection"]`."""

from alembic import context

from benchwarmers.store.schema import Base

connection = context.config.attributes.get("connection")
if connection is None:
    raise RuntimeError("run migrations through benchwarmers.store.migrate, which supplies the connection")

context.configure(
    connection=connection,
    target_metadata=Base.metadata,
    # SQLite cannot ALTER most things; batch mode rebuilds tables instead, and is a no-op elsewhere.
    render_as_batch=True,
    compare_type=True,
)
with context.begin_transaction():
    context.run_migrations()
