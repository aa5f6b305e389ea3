"""ledger shards: a month of one model may be split over a few ledger rows

On PostgreSQL every batch of the call log added to the one ledger row of
its month and model, so with two workers each batch waited for the other's
to commit before it could update that row, and PostgreSQL spent 1.41 ms of
CPU a batch against 0.65 with a row per worker. The ledger's key gains a
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


def upgrade() -> None:
    with op.batch_alter_table("usage_ledger") as table:
        table.add_column(sa.Column("shard", sa.SmallInteger(), server_default="0", nullable=False))
        table.drop_constraint("uq_usage_ledger_month_endpoint_served", type_="unique")
        table.create_unique_constraint(
            "uq_usage_ledger_month_endpoint_served_shard", ["month", "endpoint", "served", "shard"]
        )


def downgrade() -> None:
    # The shards of a month and model folded back into one row, as the old key wants.
    op.execute(
        "UPDATE usage_ledger SET"
        " requests = (SELECT sum(o.requests) FROM usage_ledger o WHERE o.month = usage_ledger.month"
        " AND o.endpoint = usage_ledger.endpoint AND o.served = usage_ledger.served),"
        " tokens_in = (SELECT sum(o.tokens_in) FROM usage_ledger o WHERE o.month = usage_ledger.month"
        " AND o.endpoint = usage_ledger.endpoint AND o.served = usage_ledger.served),"
        " tokens_out = (SELECT sum(o.tokens_out) FROM usage_ledger o WHERE o.month = usage_ledger.month"
        " AND o.endpoint = usage_ledger.endpoint AND o.served = usage_ledger.served)"
        " WHERE shard = (SELECT min(o.shard) FROM usage_ledger o WHERE o.month = usage_ledger.month"
        " AND o.endpoint = usage_ledger.endpoint AND o.served = usage_ledger.served)"
    )
    op.execute(
        "DELETE FROM usage_ledger WHERE shard > (SELECT min(o.shard) FROM usage_ledger o"
        " WHERE o.month = usage_ledger.month AND o.endpoint = usage_ledger.endpoint"
        " AND o.served = usage_ledger.served)"
    )
    with op.batch_alter_table("usage_ledger") as table:
        table.drop_constraint("uq_usage_ledger_month_endpoint_served_shard", type_="unique")
        table.create_unique_constraint(
            "uq_usage_ledger_month_endpoint_served", ["month", "endpoint", "served"]
        )
        table.drop_column("shard")
