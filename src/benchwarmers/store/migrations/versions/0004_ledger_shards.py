"""ledger shards: a month of one model may be split over a few ledger rows

On PostgreSQL every batch of the call log added to the one ledger row of
its month and model, so with two workers each batch waited for the other's
to commit before it could update that row: two workers spent 12-22% more
CPU a request than one (-4 to +8% with 8 rows), and PostgreSQL 0.83 ms a
batch (0.58-0.72 with 8 rows). The ledger's key gains a
`shard` (the batch's writer picks one of `call_rows.LEDGER_SHARDS` at
random; an SQLite file's one writer keeps to 0), and reads add the shards
up. The rows already there become shard 0.

Revision ID: 0004
Revises: 0003
Create Date: 2026-12-03 20:30:00.000000
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0004"
down_revision: str | None = "0003"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

# What a ledger line adds up.
ADDED = ("requests", "tokens_in", "tokens_out")


def upgrade() -> None:
    with op.batch_alter_table("usage_ledger") as table:
        table.add_column(sa.Column("shard", sa.SmallInteger(), server_default="0", nullable=False))
        table.drop_constraint("uq_usage_ledger_month_endpoint_served", type_="unique")
        table.create_unique_constraint(
            "uq_usage_ledger_month_endpoint_served_shard", ["month", "endpoint", "served", "shard"]
        )


def downgrade() -> None:
    # A month's shards folded into its lowest, the others deleted, as the old key wants.
    same = (
        "FROM usage_ledger o WHERE o.month = usage_ledger.month"
        " AND o.endpoint = usage_ledger.endpoint AND o.served = usage_ledger.served"
    )
    added = ", ".join(f"{column} = (SELECT sum(o.{column}) {same})" for column in ADDED)
    op.execute(f"UPDATE usage_ledger SET {added} WHERE shard = (SELECT min(o.shard) {same})")
    op.execute(f"DELETE FROM usage_ledger WHERE shard > (SELECT min(o.shard) {same})")
    with op.batch_alter_table("usage_ledger") as table:
        table.drop_constraint("uq_usage_ledger_month_endpoint_served_shard", type_="unique")
        table.create_unique_constraint(
            "uq_usage_ledger_month_endpoint_served", ["month", "endpoint", "served"]
        )
        table.drop_column("shard")
