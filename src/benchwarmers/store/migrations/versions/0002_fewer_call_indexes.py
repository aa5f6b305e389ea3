"""fewer call indexes: drop ix_calls_collection_shape

Every index on `calls` is written on every insert by the call log's writer,
on the reply's path. `ix_calls_collection_shape` (collection, shape) is the
leftmost prefix of `ix_calls_seats` (collection, shape, kind, alias, at), so
every read it served (the dashboard's recent asks of one collection, the
only one whose plan named it) is served as well by `ix_calls_seats`;
`EXPLAIN QUERY PLAN` of every read of `calls`, before and after, is in
docs/benchmarks.md ("Fewer indexes on the call log").

Revision ID: 0002
Revises: 0001
Create Date: 2026-12-01 23:45:00.000000
"""

from collections.abc import Sequence

from alembic import op

revision: str = "0002"
down_revision: str | None = "0001"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.drop_index("ix_calls_collection_shape", table_name="calls")


def downgrade() -> None:
    op.create_index("ix_calls_collection_shape", "calls", ["collection", "shape"], unique=False)
